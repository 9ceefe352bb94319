"""`guarded_factory`: an a2a-sdk ClientFactory whose clients are guarded (for frameworks)."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2

from a2a_client_errors import Guard
from a2a_client_errors.integrations.a2a_sdk import GuardedClient, guarded_factory
from tests.e2e.test_a2a_sdk_guarded import Recorder

if TYPE_CHECKING:
    from a2a_client_errors.testing.peer import EmbeddedPeer

pytestmark = pytest.mark.e2e


async def test_each_client_is_guarded_under_one_guard(peer: EmbeddedPeer) -> None:
    """create() gives a GuardedClient on the factory's Guard; a 503 is retried, run once."""
    recorder = Recorder(failures=1)
    guard = Guard(sleep=lambda _: _done())
    async with httpx.AsyncClient(transport=recorder, timeout=10) as http:
        config = ClientConfig(httpx_client=http, streaming=False)
        factory = guarded_factory(config, guard, max_reconnects=1)
        assert isinstance(factory, ClientFactory)
        client = factory.create(peer.agent_card)
        also = copy.copy(factory).create(peer.agent_card)  # as frameworks copy factories
        assert isinstance(client, GuardedClient)
        assert client.guard is guard
        assert also.guard is guard
        assert client.max_reconnects == 1
        message = a2a_pb2.Message(
            message_id="factory-1", role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text="hello")]
        )
        request = a2a_pb2.SendMessageRequest(message=message)
        (answer,) = [event async for event in client.send_message(request)]
        await client.close()
    assert answer.task.status.state == a2a_pb2.TASK_STATE_COMPLETED
    assert len(recorder.bodies) == 2  # the 503, then the same message again
    assert all(b'"messageId":"factory-1"' in body for body in recorder.bodies)
    assert peer.executions["factory-1"] == 1


def test_a_default_guard_is_the_factorys_own(peer: EmbeddedPeer) -> None:
    """Without a Guard, the factory makes one, shared by all its clients."""
    factory = guarded_factory()
    first, second = factory.create(peer.agent_card), factory.create(peer.agent_card)
    assert isinstance(first.guard, Guard)
    assert first.guard is second.guard


@pytest.mark.parametrize("option", ["peer", "card_url", "factory"])
def test_per_client_options_are_refused(option: str) -> None:
    """peer, card_url and factory belong to each client, not to the factory."""
    with pytest.raises(TypeError, match=option):
        guarded_factory(ClientConfig(), **{option: "x"})


async def _done() -> None:
    """A sleep that does not wait."""
