"""`Checkpoints`: undo what the agent did to a workspace, shell commands included (issue 23)."""

from pydantic_ai_harness_rs._core import CheckpointError
from pydantic_ai_harness_rs.checkpoints._capability import CHECKPOINT_TOOL_NAMES, Checkpoints

__all__ = ['CHECKPOINT_TOOL_NAMES', 'CheckpointError', 'Checkpoints']
