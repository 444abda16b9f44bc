"""Event-class identity: our events are `pydantic_ai_harness.shell`'s classes when it is importable."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pydantic_ai_harness_rs
import pytest
from pydantic_ai import CapabilityEvent
from pydantic_ai_harness_rs.shell import CommandFinishedEvent, CommandOutputEvent, CommandStartedEvent, _events

INSTALLED_PACKAGE = Path(pydantic_ai_harness_rs.__file__).resolve().parent
"""The package as installed (with its compiled `_core`), wherever pytest imported it from."""


@pytest.fixture
def package_root(tmp_path: Path) -> Path:
    """A directory holding only our package, to put on another interpreter's `PYTHONPATH`."""
    root = tmp_path / 'only-ours'
    root.mkdir()
    (root / 'pydantic_ai_harness_rs').symlink_to(INSTALLED_PACKAGE)
    return root


def test_own_classes_without_the_harness() -> None:
    try:
        import pydantic_ai_harness  # noqa: F401  # pyright: ignore[reportMissingImports]
    except ImportError:
        pass
    else:  # pragma: no cover
        pytest.skip('pydantic-ai-harness is installed here')
    assert _events.USING_HARNESS_EVENTS is False
    kinds = [cls._registered_kind for cls in (CommandStartedEvent, CommandOutputEvent, CommandFinishedEvent)]  # type: ignore[attr-defined]
    assert kinds == ['shell.command_started', 'shell.command_output', 'shell.command_finished']
    assert all(issubclass(cls, CapabilityEvent) for cls in (CommandStartedEvent, CommandOutputEvent, CommandFinishedEvent))
    event = CommandFinishedEvent(pid=1, output_path='o', status_path='s', exit_code=None, truncated=False)
    assert event.total_lines == 0
    assert CommandStartedEvent(command='c', pid=2).kind == 'shell.command_started'


def _run(code: str, package_root: Path) -> str:
    result = subprocess.run(
        [sys.executable, '-c', textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={'PYTHONPATH': str(package_root), 'PATH': '/usr/bin:/bin'},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_harness_classes_are_reexported_when_importable(package_root: Path) -> None:
    # A stand-in `pydantic_ai_harness.shell._events` registers the classes first, as the real
    # package does on import; ours must then use those classes rather than register a second set.
    out = _run(
        """
        import sys, types
        from dataclasses import dataclass
        from pydantic_ai import CapabilityEvent

        for name in ('pydantic_ai_harness', 'pydantic_ai_harness.shell'):
            module = types.ModuleType(name)
            module.__path__ = []
            sys.modules[name] = module
        events = types.ModuleType('pydantic_ai_harness.shell._events')
        sys.modules['pydantic_ai_harness.shell._events'] = events

        @dataclass(kw_only=True)
        class CommandStartedEvent(CapabilityEvent, namespace='shell', name='command_started'):
            command: str
            pid: int

        @dataclass(kw_only=True)
        class CommandOutputEvent(CapabilityEvent, namespace='shell', name='command_output'):
            text: str

        @dataclass(kw_only=True)
        class CommandFinishedEvent(CapabilityEvent, namespace='shell', name='command_finished'):
            pid: int
            output_path: str
            status_path: str
            exit_code: int | None
            truncated: bool
            total_lines: int | None = 0

        for cls in (CommandStartedEvent, CommandOutputEvent, CommandFinishedEvent):
            cls.__module__ = events.__name__
            setattr(events, cls.__name__, cls)

        import pydantic_ai_harness_rs.shell as ours
        assert ours.CommandStartedEvent is CommandStartedEvent
        assert ours.CommandOutputEvent is CommandOutputEvent
        assert ours.CommandFinishedEvent is CommandFinishedEvent
        print(ours._events.USING_HARNESS_EVENTS)
        """,
        package_root,
    )
    assert out.strip() == 'True'


def test_real_harness_when_available(package_root: Path) -> None:
    # The compat venv (tests/compat/.venvs/shell-ref) has pydantic-ai-harness 0.57.0; use it when present.
    ref_python = Path(__file__).resolve().parents[1] / 'compat' / '.venvs' / 'shell-ref' / 'bin' / 'python'
    if not ref_python.exists():
        pytest.skip('no reference venv yet (tests/compat creates it)')
    result = subprocess.run(
        [
            str(ref_python),
            '-c',
            'import pydantic_ai_harness.shell as theirs, pydantic_ai_harness_rs.shell as ours;'
            'assert ours.CommandStartedEvent is theirs.CommandStartedEvent;'
            'assert ours.CommandOutputEvent is theirs.CommandOutputEvent;'
            'assert ours.CommandFinishedEvent is theirs.CommandFinishedEvent;'
            'print(ours._events.USING_HARNESS_EVENTS)',
        ],
        capture_output=True,
        text=True,
        env={'PYTHONPATH': str(package_root), 'PATH': '/usr/bin:/bin'},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == 'True'
