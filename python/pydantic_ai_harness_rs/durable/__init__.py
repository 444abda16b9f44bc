"""Durable execution (Temporal, DBOS, Prefect): what the FileSystem and Shell tools do inside an engine's units.

`_events`: where a tool's events cannot reach the run (a Temporal activity), and the engines'
workspace wrapper; `_units`: each tool call one DBOS step, on the plain workspace in any unit;
`_commands`: a foreground command whose worker died, stopped before its unit runs again.
"""
