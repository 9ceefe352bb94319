"""No door changes the caller's request: its serialised bytes are the same after the call.

Every door is driven through retries and look-ups (an answer lost after the agent did the
work), and asked to send without blocking where it can: the request object the caller handed
in is compared byte for byte before and after. A message without metadata must stay without:
an agent in the Java SDK's dialect fails on a ``"skill": null`` the caller never wrote.
"""

from __future__ import annotations

import copy
import json
import uuid
from typing import TYPE_CHECKING, Any

import grpc.aio
import httpx
import pytest
from a2a.types import a2a_pb2, a2a_pb2_grpc

from a2a_client_errors import (
    AsyncGuardTransport,
    ExactlyOnce,
    Guard,
    GuardTransport,
    OutcomeUnknown,
)
from a2a_client_errors.integrations.grpc import GuardInterceptor
from a2a_client_errors.testing.lossy import LosingTransport, LossyProxy, lose_sends
from tests.e2e.lossy import VERSION, is_send, script
from tests.e2e.sdk import BINDINGS, sdk_client

if TYPE_CHECKING:
    from a2a_client_errors.testing.peer import EmbeddedPeer

pytestmark = pytest.mark.e2e


def _requests() -> list[Any]:
    """Sends a caller may hand in: no messageId, no metadata, metadata without a skill."""
    bare = a2a_pb2.SendMessageRequest(
        message=a2a_pb2.Message(role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text="hello")])
    )
    tagged = copy.deepcopy(bare)
    tagged.message.message_id = f"m-{uuid.uuid4()}"
    tagged.message.metadata.update({"trace": "t-1"})
    return [bare, tagged]


def _bytes(request: Any) -> bytes:
    return bytes(request.SerializeToString(deterministic=True))


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("non_blocking", [False, True], ids=["blocking", "non-blocking"])
async def test_guard_client_never_changes_the_request(
    peer: EmbeddedPeer, binding: str, non_blocking: bool
) -> None:
    """guard_client: no messageId, metadata key or configuration is written to the request."""
    guard = Guard(sleep=lambda _: None, exactly_once=ExactlyOnce(non_blocking=non_blocking))
    client, http = await sdk_client(peer, binding, guard=guard, streaming=False)
    try:
        for request in _requests():
            before = _bytes(request)
            events = [event async for event in client.send_message(request)]
            assert events
            assert _bytes(request) == before
            assert not request.message.HasField("metadata") or "skill" not in (
                request.message.metadata
            )
    finally:
        await client.close()
        await http.aclose()


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
async def test_guard_client_never_changes_a_request_that_is_looked_up(
    peer: EmbeddedPeer, binding: str
) -> None:
    """A lost answer, a look-up and a wait leave the request as it was handed in."""
    with LossyProxy(peer.http_target, script((is_send, "lose", 2))) as proxy:
        client, http = await sdk_client(
            peer, binding, card=peer.via(proxy.url), guard=Guard(sleep=lambda _: None)
        )
        try:
            for request in _requests():
                before = _bytes(request)
                try:
                    _ = [event async for event in client.send_message(request)]
                except OutcomeUnknown as unknown:
                    pytest.fail(f"not found: {unknown.why}")
                assert _bytes(request) == before
        finally:
            await client.close()
            await http.aclose()
    assert proxy.counts["lose"] == 2


def _raw(request: httpx.Request) -> tuple[Any, ...]:
    """What a caller's httpx request is: its method, URL, headers, body and timeouts."""
    return (
        request.method,
        str(request.url),
        list(request.headers.raw),
        request.content,
        request.extensions.get("timeout"),
    )


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("non_blocking", [False, True], ids=["blocking", "non-blocking"])
async def test_the_httpx_transports_never_change_the_request(
    peer: EmbeddedPeer, mode: str, non_blocking: bool
) -> None:
    """Under a deadline, a lost answer and a look-up: the request's bytes and timeouts stay."""
    guard = Guard(
        sleep=lambda _: None,
        deadline=30.0,
        exactly_once=ExactlyOnce(non_blocking=non_blocking),
    )
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {
                "messageId": f"m-{uuid.uuid4()}",
                "role": "ROLE_USER",
                "parts": [{"text": "hello"}],
            }
        },
    }
    request = httpx.Request(
        "POST",
        peer.jsonrpc_url,
        headers={**VERSION, "Authorization": "Bearer t"},
        content=json.dumps(body).encode(),
        extensions={"timeout": {"connect": 5.0, "read": 5.0, "write": 5.0, "pool": 5.0}},
    )
    before = _raw(request)
    inner = LosingTransport(lose_sends(1))
    if mode == "sync":
        answer = GuardTransport(guard, inner).handle_request(request)
        answer.read()
    else:
        answer = await AsyncGuardTransport(guard, inner).handle_async_request(request)
        await answer.aread()
    await inner.aclose()
    assert answer.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert inner.counts["lose"] == 1
    assert _raw(request) == before


async def test_the_grpc_interceptor_never_changes_the_request(peer: EmbeddedPeer) -> None:
    """GuardInterceptor: the request message and the call's metadata are the caller's."""
    guard = Guard(sleep=lambda _: None)
    channel = grpc.aio.insecure_channel(
        peer.grpc_target, interceptors=GuardInterceptor(guard).interceptors
    )
    metadata = (("a2a-version", "1.0"),)
    try:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        for request in _requests():
            request.message.message_id = request.message.message_id or f"m-{uuid.uuid4()}"
            before = _bytes(request)
            await stub.SendMessage(request, metadata=metadata, timeout=10.0)
            assert _bytes(request) == before
    finally:
        await channel.close()
    assert metadata == (("a2a-version", "1.0"),)
