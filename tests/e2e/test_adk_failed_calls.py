"""integrations.adk's `FailedCalls.factory`: guarded clients that note their failed sends.

Against the embedded peer, with a2a-sdk's own client under the factory, and no google-adk: the
error event is built as ``RemoteA2aAgent`` builds it (the message it sent, as a dict of its
JSON form, under ``custom_metadata["a2a:request"]``; google-adk 2.13's ``a2a_to_dict`` is
protobuf's ``MessageToDict`` on a2a-sdk 1.x). The plugin on a real ADK runner is
``examples/frameworks/adk.py``'s check.
"""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import TYPE_CHECKING

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2
from google.protobuf.json_format import MessageToDict

from a2a_client_errors import Guard, RetryExhausted
from a2a_client_errors.integrations.a2a_sdk import GuardedClient
from a2a_client_errors.integrations.adk import METADATA_KEY, FailedCalls
from tests.e2e.test_a2a_sdk_guarded import Recorder

if TYPE_CHECKING:
    from a2a_client_errors.testing.peer import EmbeddedPeer

pytestmark = pytest.mark.e2e


async def _done() -> None:
    """A sleep that does not wait."""


def _request(message_id: str) -> a2a_pb2.SendMessageRequest:
    message = a2a_pb2.Message(
        message_id=message_id, role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text="hello")]
    )
    return a2a_pb2.SendMessageRequest(message=message)


async def test_a_failed_send_reaches_the_event_adk_makes_of_it(peer: EmbeddedPeer) -> None:
    """The RetryExhausted is raised as it is, and marks the error event of its messageId."""
    failures = FailedCalls()
    recorder = Recorder(failures=10)
    async with httpx.AsyncClient(transport=recorder, timeout=10) as http:
        config = ClientConfig(httpx_client=http, streaming=False)
        factory = failures.factory(config, Guard(max_attempts=2, sleep=lambda _: _done()))
        assert isinstance(factory, ClientFactory)  # what RemoteA2aAgent takes
        client = copy.copy(factory).create(peer.agent_card)  # as ADK copies factories
        assert isinstance(client.client, GuardedClient)
        request = _request("adk-failed-1")
        with pytest.raises(RetryExhausted) as raised:
            _ = [event async for event in client.send_message(request=request)]
        await client.close()
    assert len(recorder.bodies) == 2
    assert peer.executions.get("adk-failed-1", 0) == 0
    event = SimpleNamespace(
        error_message=f"A2A request failed: {raised.value}",
        error_code=None,
        custom_metadata={"a2a:request": MessageToDict(request.message)},
    )
    assert failures.mark(event)
    assert event.error_code == "retry"
    failed = event.custom_metadata[METADATA_KEY]
    assert (failed["failure"], failed["message_id"]) == ("RetryExhausted", "adk-failed-1")
    assert (failed["maybe_processed"], failed["attempts"], failed["http_status"]) == (
        False,
        2,
        503,
    )


async def test_a_send_that_succeeds_notes_nothing(peer: EmbeddedPeer) -> None:
    """A 503 the Guard retried away leaves no failure behind."""
    failures = FailedCalls()
    async with httpx.AsyncClient(transport=Recorder(failures=1), timeout=10) as http:
        config = ClientConfig(httpx_client=http, streaming=False)
        client = failures.factory(config, Guard(sleep=lambda _: _done())).create(peer.agent_card)
        (answer,) = [event async for event in client.send_message(_request("adk-ok-1"))]
        await client.close()
    assert answer.task.status.state == a2a_pb2.TASK_STATE_COMPLETED
    assert failures.pending == 0
    assert peer.executions["adk-ok-1"] == 1
