"""Workflow module: `from pydantic_ai_harness_rs import FileSystem, Shell` at plain top level, first."""

from pydantic_ai_harness_rs import FileSystem, Shell  # isort: skip  (the form under test, before anything)

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from tests.durable import _temporal_forms as forms

agent = forms.agent('form_plain', FileSystem, Shell)


@workflow.defn
class PlainImportWorkflow:
    __pydantic_ai_agents__ = [agent]

    @workflow.run
    async def run(self, script: str) -> str:
        return await forms.run(agent, script, FileSystem, Shell)
