"""An event listener that raises, under Temporal: the workflow fails once with its error, as a plain run does.

In a plain run an `on_event` listener's exception (a `FileChangeRequestEvent` listener's, or one
dispatched at the event's stream position) ends the run with that exception. Under Temporal the
listeners run in workflow code, where an exception that is not a Temporal failure fails the
workflow *task*, which Temporal retries forever (each attempt asking the listener again and, in
a new attempt's event activities, delivering the run's earlier events to the
`event_stream_handler` again). So `FileSystem` and `Shell`, in their `on_run_error` hook (which
Pydantic AI lets raise a different exception for the run), turn a listener's exception in Temporal
workflow code into a non-retryable `ApplicationError` of its type and message
(`as_workflow_failure`), which fails the workflow once. Any other exception is left as it is.
"""

from __future__ import annotations

import traceback

from pydantic_ai_harness_rs._sandbox import in_temporal_workflow

_DISPATCHERS = frozenset({'dispatch_event_immediate', 'dispatch_event_stream'})
"""The functions of `pydantic_ai._run_context` that call the listeners (through the root capability's `on_event`)."""


def _from_listener(error: BaseException) -> bool:
    """Whether `error` was raised beneath a listener call: a dispatcher calling a capability's `on_event`."""
    frames = [frame for frame, _ in traceback.walk_tb(error.__traceback__)]
    return any(
        outer.f_code.co_name in _DISPATCHERS
        and outer.f_globals.get('__name__') == 'pydantic_ai._run_context'
        and inner.f_code.co_name == 'on_event'
        for outer, inner in zip(frames, frames[1:])
    )


def _listener_error(error: BaseException) -> Exception | None:
    """The listener's exception in `error` (itself, or one inside an exception group), or `None`."""
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:  # pyright: ignore[reportUnknownVariableType]
            if (found := _listener_error(inner)) is not None:  # pyright: ignore[reportUnknownArgumentType]
                return found
        return None
    return error if isinstance(error, Exception) and _from_listener(error) else None


def as_workflow_failure(error: BaseException) -> BaseException:
    """What a run that failed with `error` raises: in Temporal workflow code, a listener's exception
    as a non-retryable `ApplicationError` (type: the exception's class name; message: its text; cause:
    the exception); anything else, Temporal's own exceptions included, `error` itself."""
    if not in_temporal_workflow():
        return error
    from temporalio.exceptions import ApplicationError, TemporalError

    found = _listener_error(error)
    if found is None or isinstance(found, TemporalError):
        return error
    failure = ApplicationError(str(found), type=type(found).__name__, non_retryable=True)
    failure.__cause__ = found
    return failure
