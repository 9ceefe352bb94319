"""Fixtures for the end-to-end tests: real a2a-sdk peers on 127.0.0.1.

The peers are session-scoped: each starts once (well under a second) and is stopped, bounded
in time, when the session ends. Every capture made against them has its own timeout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from a2a_client_errors.testing.peer import EmbeddedPeer

# The embedded peer is built on a2a-sdk 1.x: the whole directory is for that line (its tests
# against an a2a-sdk 0.3 agent are under tests/sdk03).
pytestmark = pytest.mark.a2a_sdk("1")

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from a2a_client_errors.testing.peer import Scenario


@pytest.fixture(scope="session")
def peer() -> Iterator[EmbeddedPeer]:
    """A peer with streaming on, push notifications off, extended card declared."""
    with EmbeddedPeer(streaming=True, push_notifications=False) as running:
        yield running


@pytest.fixture(scope="session")
def peer_no_streaming() -> Iterator[EmbeddedPeer]:
    """A peer with streaming and push notifications off."""
    with EmbeddedPeer(streaming=False, push_notifications=False) as running:
        yield running


@pytest.fixture
def peer_for(request: pytest.FixtureRequest) -> Callable[[Scenario], EmbeddedPeer]:
    """Return the peer a scenario needs (started on first use)."""

    def pick(spec: Scenario) -> EmbeddedPeer:
        name = "peer" if spec.streaming_peer else "peer_no_streaming"
        chosen: EmbeddedPeer = request.getfixturevalue(name)
        return chosen

    return pick
