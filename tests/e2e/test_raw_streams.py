"""Raw httpx streams from a real a2a-sdk peer, read with iter_events and aiter_events."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from a2a_client_errors import GiveUp, RetryExhausted
from a2a_client_errors._streaming import aiter_events, iter_events

if TYPE_CHECKING:
    from a2a_client_errors.testing.peer import EmbeddedPeer

pytestmark = pytest.mark.e2e


def _request(peer: EmbeddedPeer, binding: str, text: str) -> tuple[str, dict[str, Any]]:
    message = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }
    if binding == "jsonrpc":
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendStreamingMessage",
            "params": {"message": message},
        }
        return peer.jsonrpc_url, body
    return f"{peer.rest_url}/message:stream", {"message": message}


def _state(event: dict[str, Any]) -> str:
    holder = event.get("task") or event.get("statusUpdate") or {}
    return str(holder.get("status", {}).get("state", next(iter(event))))


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
@pytest.mark.parametrize(
    ("text", "last"), [("hello", "TASK_STATE_COMPLETED"), ("fail", "TASK_STATE_FAILED")]
)
def test_a_stream_to_a_final_state(peer: EmbeddedPeer, binding: str, text: str, last: str) -> None:
    """A completed or failed task streams to its final state; no exception."""
    url, body = _request(peer, binding, text)
    with (
        httpx.Client(timeout=10, headers={"A2A-Version": "1.0"}) as client,
        client.stream("POST", url, json=body) as response,
    ):
        events = list(iter_events(response, operation="SendStreamingMessage"))
    assert _state(events[-1]) == last


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
async def test_an_error_midway_is_not_resent(peer: EmbeddedPeer, binding: str) -> None:
    """The executor raising mid-stream: events, then RetryExhausted with STREAM_STARTED."""
    url, body = _request(peer, binding, "stream-error")
    seen: list[dict[str, Any]] = []

    async def read() -> None:
        async with (
            httpx.AsyncClient(timeout=10, headers={"A2A-Version": "1.0"}) as client,
            client.stream("POST", url, json=body) as response,
        ):
            async for event in aiter_events(response, operation="SendStreamingMessage"):
                seen.append(event)  # noqa: PERF401 (the events before the error are the point)

    with pytest.raises(RetryExhausted) as failed:
        await read()
    assert [_state(event) for event in seen] == ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"]
    assert failed.value.decision.give_up is GiveUp.STREAM_STARTED
