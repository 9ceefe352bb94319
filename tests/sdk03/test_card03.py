"""A real a2a-sdk 0.3 agent refuses what its card does not offer with an internal error.

a2a-sdk 0.3.x answers JSON-RPC -32603 for a push configuration (set), a stream and the
authenticated extended card its card does not offer, and on HTTP+JSON a bare 500 for a stream
and for listing push configurations. Read against the card (learnt as the 0.3 client fetches
it through a guarded httpx client), each is ``degrade`` after one request, source
``agent_card``, not an internal error retried. Against the agent of ``tests/agent03.py`` on
127.0.0.1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx
import pytest
from a2a.client import A2ACardResolver, A2AClientError, ClientConfig, ClientFactory
from a2a.types import PushNotificationConfig, TaskPushNotificationConfig

from a2a_client_errors import Action, AsyncGuardTransport, Guard, Reason
from a2a_client_errors._card_claims import CardClaims, read_card_claims
from a2a_client_errors.testing import RecordingHook
from a2a_client_errors.types import Source
from tests.agent03 import card03
from tests.sdk03.client03 import BINDINGS

if TYPE_CHECKING:
    from collections.abc import Callable

    from tests.agent03 import Running03

pytestmark = pytest.mark.a2a_sdk("0.3")


def test_a_03_card_object_is_read_flag_by_flag() -> None:
    """a2a-sdk 0.3's pydantic ``AgentCard``: the extended card flag at the top level."""
    for bits in range(8):
        card = card03(
            streaming=bool(bits & 1),
            push_notifications=bool(bits & 2),
            extended_card=bool(bits & 4),
        )
        assert read_card_claims(card) == CardClaims(
            streaming=bool(bits & 1),
            push_notifications=bool(bits & 2),
            extended_card=bool(bits & 4),
        )


def test_guard_learns_a_03_card_object_for_each_of_its_http_interfaces() -> None:
    """``url`` and ``additional_interfaces``; the gRPC target is no URL and is left out."""
    guard = Guard()
    guard.learn_card(card03("http://127.0.0.1:9"))
    assert guard.card_claims("http://127.0.0.1:9/jsonrpc") == CardClaims(streaming=True)
    assert guard.card_claims("http://127.0.0.1:9/rest") == CardClaims(streaming=True)


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
async def test_set_task_callback_is_degraded_after_one_request(
    start_agent03: Callable[..., Running03], binding: str
) -> None:
    """The client resolves the card through its guarded httpx client; push set: one request.

    JSON-RPC answers -32603 (read against the card); HTTP+JSON answers 501 (already not
    retried).
    """
    running = start_agent03(push_notifications=False, streaming=False)
    hook = RecordingHook()
    guard = Guard(hooks=[hook])
    async with httpx.AsyncClient(transport=AsyncGuardTransport(guard), timeout=10.0) as http:
        card = await A2ACardResolver(http, running.base_url).get_agent_card()
        config = ClientConfig(httpx_client=http, supported_transports=[BINDINGS[binding]])
        client = ClientFactory(config).create(card)
        push = PushNotificationConfig(url="http://127.0.0.1:1/hook")
        before = len(running.agent.peers)
        with pytest.raises(A2AClientError):
            await client.set_task_callback(
                TaskPushNotificationConfig(task_id="t-1", push_notification_config=push)
            )
        await client.close()
    assert len(running.agent.peers) == before + 1
    record = hook.calls[-1]
    assert record.attempts == 1
    assert record.decision.action is Action.DEGRADE
    if binding == "jsonrpc":
        assert record.decision.reason is Reason.PUSH_NOTIFICATION_NOT_SUPPORTED
        assert record.decision.error is not None
        assert record.decision.error.source is Source.AGENT_CARD
        assert record.decision.error.jsonrpc_code == -32603


def _rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


MESSAGE = {"role": "user", "messageId": "m-card", "parts": [{"kind": "text", "text": "complete"}]}
REFUSED = [
    pytest.param(
        "POST",
        "/jsonrpc",
        _rpc("message/stream", {"message": MESSAGE}),
        Reason.UNSUPPORTED_OPERATION,
        id="jsonrpc-stream",
    ),
    pytest.param(
        "POST",
        "/jsonrpc",
        _rpc("agent/getAuthenticatedExtendedCard", {}),
        Reason.UNSUPPORTED_OPERATION,
        id="jsonrpc-extended-card",
    ),
    pytest.param(
        "POST",
        "/rest/v1/message:stream",
        {"message": {"role": "ROLE_USER", "messageId": "m-rest", "content": [{"text": "x"}]}},
        Reason.UNSUPPORTED_OPERATION,
        id="rest-stream",
    ),
    pytest.param(
        "GET",
        "/rest/v1/tasks/t-1/pushNotificationConfigs",
        None,
        Reason.PUSH_NOTIFICATION_NOT_SUPPORTED,
        id="rest-list-push",
    ),
]


@pytest.mark.parametrize(("method", "path", "body", "reason"), REFUSED)
async def test_each_internal_refusal_is_the_cards_reason(
    start_agent03: Callable[..., Running03],
    method: str,
    path: str,
    body: dict[str, Any] | None,
    reason: Reason,
) -> None:
    """-32603 or a bare 500 to an operation the card does not offer: one request, degrade."""
    running = start_agent03(push_notifications=False, streaming=False)
    hook = RecordingHook()
    guard = Guard(hooks=[hook])
    async with httpx.AsyncClient(
        transport=AsyncGuardTransport(guard), base_url=running.base_url, timeout=10.0
    ) as http:
        await http.get("/.well-known/agent-card.json")
        before = len(running.agent.peers)
        await http.request(method, path, json=body)
    assert len(running.agent.peers) == before + 1
    record = hook.calls[-1]
    assert record.attempts == 1
    assert record.decision.action is Action.DEGRADE
    assert record.decision.reason is reason
    assert record.decision.error is not None
    assert record.decision.error.source is Source.AGENT_CARD


async def test_without_the_card_the_same_answer_is_retried(
    start_agent03: Callable[..., Running03],
) -> None:
    """The same -32603 through a Guard that never saw the card: an internal error, retried."""
    running = start_agent03(push_notifications=False, streaming=False)
    hook = RecordingHook()
    guard = Guard(hooks=[hook], sleep=lambda _seconds: None)
    async with httpx.AsyncClient(
        transport=AsyncGuardTransport(guard), base_url=running.base_url, timeout=10.0
    ) as http:
        await http.post("/jsonrpc", json=_rpc("agent/getAuthenticatedExtendedCard", {}))
    record = hook.calls[-1]
    assert record.decision.reason is Reason.INTERNAL_ERROR
    assert record.attempts == guard.max_attempts
