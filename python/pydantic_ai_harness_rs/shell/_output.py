"""The text a shell tool returns: labelled sections, the kept tail, and file-limit notes.

Model-facing wording matches `pydantic_ai_harness` exactly; tests assert it.
"""

from __future__ import annotations

SIGXFSZ = 25
"""`SIGXFSZ` on Linux and the BSDs, as the workspace shell reports it (not the host's `signal`)."""


def labelled(stdout: str, stderr: str, *, empty: str | None, trailer: str | None = None) -> str:
    """`[stdout]` and `[stderr]` sections (non-empty ones), `empty` when both are blank, then `trailer`."""
    sections: list[str] = []
    if stdout:
        sections.append(f'[stdout]\n{stdout}')
    if stderr:
        sections.append(f'[stderr]\n{stderr}')
    if not sections and empty is not None:
        sections.append(empty)
    if trailer is not None:
        sections.append(trailer)
    return '\n'.join(sections)


def _marker(tail_chars: int) -> str:
    return f'[... output truncated, showing last {tail_chars} chars]\n'


def truncate_tail(text: str, max_chars: int) -> str:
    """`text` cut to at most `max_chars` chars by dropping its head, behind a marker counted in the cap.

    The marker states how many chars follow it; a cap too small for any marker keeps a bare tail.
    """
    if max_chars <= 0:
        return ''
    if len(text) <= max_chars:
        return text
    kept = max(0, max_chars - len(_marker(max_chars)))
    if kept + 1 + len(_marker(kept + 1)) <= max_chars:
        kept += 1
    if kept == 0:
        return text[-max_chars:]
    return _marker(kept) + text[-kept:]


def file_limit_status(exit_code: int, limit: int | None) -> str:
    """The note appended to a non-zero exit under `max_file_bytes` ('' without a limit or on success)."""
    if limit is None or exit_code == 0:
        return ''
    if exit_code in (-SIGXFSZ, 128 + SIGXFSZ, 256 + SIGXFSZ):
        return f'\n[File-size limit exceeded: max_file_bytes={limit}. Reduce file output before retrying.]'
    return f'\n[Command failed with max_file_bytes={limit}; file writes may have reached the per-file limit.]'
