"""Tool calls on one file, `f.txt`, in each place a `FileSystem` may work: the document's `root_dir`,
0.62.0's contract on a `LocalWorkspace`, and an in-memory workspace (the protocol path)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic_ai.capabilities import LocalWorkspace
from pydantic_ai.workspaces import Workspace
from pydantic_ai_harness_rs.filesystem import FileSystem

from tests.memory_workspace import MemoryWorkspace
from tests.scripted import run_tools

WHERE = ['document', 'workspace', 'memory']


async def on_file(
    where: str, tmp_path: Path, data: bytes | None, calls: list[tuple[str, dict[str, Any]]], **fields: Any
) -> tuple[list[str], bytes]:
    """`calls` (tool, arguments without `path`) on `f.txt` holding `data` (absent: `None`), through an
    agent run with `FileSystem(content_hashes=False, **fields)`; the results and the file's bytes after."""
    fs_fields: dict[str, Any] = {'content_hashes': False, **fields}
    tools = [(name, {'path': 'f.txt', **args}) for name, args in calls]
    if where == 'memory':
        backend = MemoryWorkspace({} if data is None else {'f.txt': data})
        t = await run_tools([FileSystem(**fs_fields)], tools, workspace=Workspace(backend))
        return t.results, backend.files['/ws/f.txt']
    if data is not None:
        (tmp_path / 'f.txt').write_bytes(data)
    if where == 'document':
        t = await run_tools([FileSystem(root_dir=tmp_path, **fs_fields)], tools)
    else:
        t = await run_tools([LocalWorkspace(tmp_path), FileSystem(**fs_fields)], tools)
    return t.results, (tmp_path / 'f.txt').read_bytes()
