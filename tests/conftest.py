"""Shared fixtures.

Async tests run through the anyio pytest plugin. An agent run needs asyncio (Pydantic AI's
graph uses asyncio tasks), so `anyio_backend` defaults to asyncio; tests of the direct toolset
methods, which must also work under trio like the reference's, ask for `both_backends`.
"""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return 'asyncio'


both_backends = pytest.mark.parametrize('anyio_backend', ['asyncio', 'trio'])
"""Run an anyio test under asyncio and under trio."""
