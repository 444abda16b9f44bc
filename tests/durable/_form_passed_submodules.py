"""Workflow module: `FileSystem` and `Shell` from their submodules under `imports_passed_through()`."""

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from pydantic_ai_harness_rs.filesystem import FileSystem
    from pydantic_ai_harness_rs.shell import Shell

    from tests.durable import _temporal_forms as forms

agent = forms.agent('form_passed_submodules', FileSystem, Shell)


@workflow.defn
class PassedSubmoduleImportWorkflow:
    __pydantic_ai_agents__ = [agent]

    @workflow.run
    async def run(self, script: str) -> str:
        return await forms.run(agent, script, FileSystem, Shell)
