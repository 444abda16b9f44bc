"""Durable execution (Temporal, DBOS, Prefect): what the FileSystem and Shell tools do inside an engine's units.

`_events`: where a tool's events cannot reach the run (a Temporal activity), and the engines'
workspace wrapper; `_operations`: FileSystem's calls in workflow code (Temporal, DBOS) as durable
operations, a change planned, asked and committed in turn; `_carried`: events recorded in a unit
(FileSystem's operations, Shell's tool activities) and emitted from workflow code after it;
`_listeners`: a listener's exception fails a Temporal workflow once instead of its task forever;
`_units`: each other tool call one DBOS step, on the plain workspace in any unit;
`_commands`: a foreground command whose worker died, stopped before its unit runs again.
"""
