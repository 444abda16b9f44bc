"""Workflow module: `FileSystem` and `Shell` from their submodules at plain top level, first."""

from pydantic_ai_harness_rs.filesystem import FileSystem  # isort: skip  (the form under test, before anything)
from pydantic_ai_harness_rs.shell import Shell  # isort: skip

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from tests.durable import _temporal_forms as forms

agent = forms.agent('form_submodules', FileSystem, Shell)


@workflow.defn
class SubmoduleImportWorkflow:
    __pydantic_ai_agents__ = [agent]

    @workflow.run
    async def run(self, script: str) -> str:
        return await forms.run(agent, script, FileSystem, Shell)
