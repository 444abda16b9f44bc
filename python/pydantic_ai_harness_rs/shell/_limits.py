"""`max_file_bytes` for workspaces reached through the protocol: a shell prologue using `ulimit -f`.

The local workspace needs none of this: the supervisor sets `RLIMIT_FSIZE` before exec.
"""

from __future__ import annotations

import sys

APPLY_FAILED = 'Unable to apply max_file_bytes.'

LIMIT_FUNCTION = r"""__harness_fsize() {
  __harness_p=$(mktemp "${TMPDIR:-/tmp}/harness-fsize.XXXXXX") || return 1
  ( trap '' XFSZ; ulimit -f 1 || exit; printf '%1100s' . > "$__harness_p" ) > /dev/null 2>&1
  __harness_b=$(wc -c < "$__harness_p"); __harness_b=$((__harness_b + 0))
  rm -f "$__harness_p"
  [ "$__harness_b" = 512 ] || [ "$__harness_b" = 1024 ] || return 1
  ulimit -f $(( ($1 + __harness_b - 1) / __harness_b ))
}"""
"""Sets the per-file limit to `$1` bytes in whole `ulimit -f` blocks, measuring the block size
(512 bytes in POSIX `sh`, 1 KiB in bash) by writing past a one-block limit in a subshell."""


def validate_byte_limit(name: str, limit: object) -> None:
    """Raise `ValueError` naming `name` unless `limit` is `None` or an int in [1, `sys.maxsize`]."""
    if limit is None:
        return
    if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
        raise ValueError(f'{name} must be a positive integer.')
    if limit > sys.maxsize:
        raise ValueError(f'{name} must not exceed sys.maxsize.')


def validate_file_limit(limit: object, *, persistent: bool) -> None:
    """Raise `ValueError` unless `limit` is `None` or a positive int usable with these tools."""
    validate_byte_limit('max_file_bytes', limit)
    if limit is not None and persistent:
        raise ValueError('max_file_bytes is not supported with the persistent shell tool.')


def limit_prologue(limit: int | None) -> str:
    """The lines that apply the limit before a command (ending in a newline); '' without a limit."""
    if limit is None:
        return ''
    return f"{LIMIT_FUNCTION}\n__harness_fsize {limit} || {{ echo '{APPLY_FAILED}' >&2; exit 1; }}\n"
