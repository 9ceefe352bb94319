"""Fixtures for the tests against a2a-sdk 0.3: the agent of ``tests/agent03.py`` on 127.0.0.1.

The modules here run only when a2a-sdk 0.3 is installed: the directory is marked for that
line (``pytestmark`` below), so under a2a-sdk 1.x they are not collected (they import 0.3's
names), and the run's summary counts them.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from tests.agent03 import Running03


# The a2a-sdk 0.3 line: the whole directory (see tests/conftest.py).
pytestmark = pytest.mark.a2a_sdk("0.3")


@pytest.fixture
def start_agent03() -> Iterator[Callable[..., Running03]]:
    """Start agents (`build_agent03` options, and ``app=`` a wrapper of the agent's app).

    Each is served on 127.0.0.1 until the test ends, then stopped, bounded in time.
    ``wrap_app`` (a function of the agent's ASGI app) puts an ASGI wrapper in front.
    """
    from tests.agent03 import build_agent03, serve03

    with contextlib.ExitStack() as stack:

        def start(wrap_app: Callable[[Any], Any] | None = None, **options: Any) -> Running03:
            agent = build_agent03(**options)
            app = wrap_app(agent.app) if wrap_app is not None else None
            return stack.enter_context(serve03(agent, app=app))

        yield start


@pytest.fixture
def agent03(start_agent03: Callable[..., Running03]) -> Running03:
    """An agent: streaming on, push notifications off, its handler not wrapped."""
    return start_agent03()
