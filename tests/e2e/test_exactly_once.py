"""Exactly one task per logical send through `guard_client`, whatever answers are lost.

A real a2a-sdk agent (JSON-RPC and HTTP+JSON) sits behind the real lossy proxy on 127.0.0.1;
the proxy loses answers the agent gave (the work is done, the client's connection is closed)
or drops requests before they reach it. The tasks the agent holds are counted from its task
store before and after each send: the one number that says whether a resend made a second
task.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx
import pytest
from a2a.types import a2a_pb2

from a2a_client_errors import Action, ExactlyOnce, Guard, OutcomeUnknown, Reason
from a2a_client_errors.integrations.a2a_sdk._handlers import LOST_RACE
from a2a_client_errors.testing import FakeClock, RecordingHook
from a2a_client_errors.testing.lossy import LossyProxy, lose_sends
from a2a_client_errors.testing.peer import EmbeddedPeer
from a2a_client_errors.types import Resolution
from tests.e2e.lossy import (
    CANCELED,
    COMPLETED,
    WORKING,
    Unknowns,
    is_cancel,
    is_list_tasks,
    is_send,
    new_tasks,
    script,
    sdk_state,
    sdk_task_ids,
    send_request,
    sends_seen,
)
from tests.e2e.sdk import sdk_client

if TYPE_CHECKING:
    from collections.abc import Iterator

    from a2a_client_errors.integrations.a2a_sdk import GuardedClient
    from a2a_client_errors.testing.lossy import Plan

pytestmark = pytest.mark.e2e

HTTP_BINDINGS = ["jsonrpc", "rest"]
TIMEOUT = 10.0
CONTRACT = ExactlyOnce(listed_within=lambda peer: 0.0)
"""A declared listing contract: a2a-sdk stores a task with its user message as it starts."""


@pytest.fixture(scope="module")
def agent() -> Iterator[EmbeddedPeer]:
    """An agent of this module's own: its task store holds only what these tests made."""
    with EmbeddedPeer(streaming=True) as running:
        yield running


@pytest.fixture(scope="module")
def dedup_agent() -> Iterator[EmbeddedPeer]:
    """An agent whose request handler returns the first task for a resent messageId."""
    with EmbeddedPeer(streaming=True, deduplicate=True) as running:
        yield running


async def _send(client: GuardedClient, request: Any) -> list[Any]:
    return [event async for event in client.send_message(request)]


async def _through(
    peer: EmbeddedPeer,
    plan: Plan,
    binding: str,
    request: Any,
    *,
    streaming: bool = False,
    exactly_once: ExactlyOnce | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> tuple[list[Any], list[str], Unknowns, LossyProxy]:
    """Send ``request`` through a lossy proxy by ``plan``; the events, new tasks, hook, proxy."""
    hook = Unknowns()
    guard = Guard(sleep=lambda _: None, hooks=[hook], exactly_once=exactly_once or ExactlyOnce())
    before = peer.task_ids()
    with LossyProxy(peer.http_target, plan) as proxy:
        client, http = await sdk_client(
            peer,
            binding,
            card=peer.via(proxy.url),
            guard=guard,
            streaming=streaming,
            transport=transport,
            timeout=TIMEOUT,
        )
        try:
            events = await _send(client, request)
        finally:
            await client.close()
            await http.aclose()
    return events, new_tasks(peer, before), hook, proxy


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
@pytest.mark.parametrize("streaming", [False, True], ids=["unary", "streaming"])
@pytest.mark.parametrize(
    "case",
    [("lose", Resolution.FOUND, None), ("drop", Resolution.RESENT, CONTRACT)],
    ids=["lose", "drop-under-a-contract"],
)
async def test_one_task_per_send_when_the_first_answer_is_lost_or_dropped(
    agent: EmbeddedPeer,
    binding: str,
    streaming: bool,
    case: tuple[str, Resolution, ExactlyOnce | None],
) -> None:
    """A lost answer is found (not resent); a dropped one resent under a contract: one task."""
    mode, resolution, settings = case
    events, made, hook, proxy = await _through(
        agent,
        lose_sends(1, mode=mode),
        binding,
        send_request(),
        streaming=streaming,
        exactly_once=settings,
    )
    assert len(made) == 1
    assert sdk_task_ids(events) == set(made)
    assert sdk_state(events[-1]) == COMPLETED
    assert hook.resolutions == [resolution]
    assert proxy.counts[mode] == 1
    # lose: the agent saw the send once; drop: twice, the first never forwarded.
    assert sends_seen(proxy.seen) == (1 if mode == "lose" else 2)


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
@pytest.mark.parametrize("streaming", [False, True], ids=["unary", "streaming"])
async def test_a_dropped_send_is_never_resent_without_the_agents_word(
    agent: EmbeddedPeer, binding: str, streaming: bool
) -> None:
    """Dropped before the agent: no listing proves it, so OutcomeUnknown and no resend."""
    request = send_request()
    with pytest.raises(OutcomeUnknown) as caught:
        await _through(agent, lose_sends(1, mode="drop"), binding, request, streaming=streaming)
    assert caught.value.message_id == request.message.message_id
    assert caught.value.sent is not None
    assert agent.executions[request.message.message_id] == 0  # nothing reached it, nor resent
    assert "not found" in caught.value.why


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
@pytest.mark.parametrize("streaming", [False, True], ids=["unary", "streaming"])
async def test_a_dropped_send_then_a_lost_answer_still_makes_one_task(
    agent: EmbeddedPeer, binding: str, streaming: bool
) -> None:
    """Two losses in a row (dropped, then the resend's answer lost): resent once, then found."""
    plan = script((is_send, "drop", 1), (is_send, "lose", 1))
    events, made, hook, _ = await _through(
        agent, plan, binding, send_request(), streaming=streaming, exactly_once=CONTRACT
    )
    assert len(made) == 1
    assert sdk_task_ids(events) == set(made)
    assert sdk_state(events[-1]) == COMPLETED
    assert hook.resolutions == [Resolution.RESENT, Resolution.FOUND]


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
async def test_two_answers_lost_in_a_row_make_one_task(agent: EmbeddedPeer, binding: str) -> None:
    """lose_sends(2): the first loss is found by the look-up; nothing is resent to lose again."""
    events, made, hook, proxy = await _through(agent, lose_sends(2), binding, send_request())
    assert len(made) == 1
    assert sdk_task_ids(events) == set(made)
    assert hook.resolutions == [Resolution.FOUND]
    assert sends_seen(proxy.seen) == 1


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
async def test_two_dropped_sends_are_resent_twice_and_make_one_task(
    agent: EmbeddedPeer, binding: str
) -> None:
    """Two drops under a contract: looked up and resent twice; the third send makes the task."""
    events, made, hook, proxy = await _through(
        agent, lose_sends(2, mode="drop"), binding, send_request(), exactly_once=CONTRACT
    )
    assert len(made) == 1
    assert sdk_state(events[-1]) == COMPLETED
    assert hook.resolutions == [Resolution.RESENT, Resolution.RESENT]
    assert sends_seen(proxy.seen) == 3


# --- a peer that cannot be looked up ----------------------------------------------------------


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
@pytest.mark.parametrize("streaming", [False, True], ids=["unary", "streaming"])
async def test_a_lost_answer_that_cannot_be_looked_up_is_outcome_unknown(
    agent: EmbeddedPeer, binding: str, streaming: bool
) -> None:
    """ListTasks dropped: OutcomeUnknown with the message's ids; the send reached it once."""
    request = send_request(context_id="ctx-unknown-outcome")
    plan = script((is_send, "lose", 1), (is_list_tasks, "drop", None))
    hook = Unknowns()
    guard = Guard(sleep=lambda _: None, hooks=[hook])
    before = agent.task_ids()
    with LossyProxy(agent.http_target, plan) as proxy:
        client, http = await sdk_client(
            agent, binding, card=agent.via(proxy.url), guard=guard, streaming=streaming
        )
        try:
            with pytest.raises(OutcomeUnknown) as caught:
                await _send(client, request)
        finally:
            await client.close()
            await http.aclose()
    failure = caught.value
    assert failure.message_id == request.message.message_id
    assert failure.context_id == "ctx-unknown-outcome"
    assert failure.task_id is None
    assert failure.maybe_processed
    assert sends_seen(proxy.seen) == 1
    assert len(new_tasks(agent, before)) == 1  # the one the lost attempt made
    assert hook.resolutions == [Resolution.UNRESOLVED]
    assert any(is_list_tasks(seen) for seen in proxy.seen)


class RefusingGateway(httpx.AsyncBaseTransport):
    """A gateway in front of the agent that knows no ListTasks (JSON-RPC -32601, HTTP 405)."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.refused = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Refuse ListTasks; pass everything else on."""
        body = request.content
        if b'"ListTasks"' in body:
            self.refused += 1
            error = {"code": -32601, "message": "Method not found"}
            rid = httpx.Response(200, content=body).json().get("id")
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": rid, "error": error})
        if request.method == "GET" and request.url.path.endswith("/tasks"):
            self.refused += 1
            return httpx.Response(405, text="method not allowed")
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self.inner.aclose()


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
async def test_a_gateway_without_list_tasks_makes_the_outcome_unknown(
    agent: EmbeddedPeer, binding: str
) -> None:
    """ListTasks refused as METHOD_NOT_FOUND (or 405): OutcomeUnknown, nothing resent."""
    gateway = RefusingGateway()
    request = send_request()
    with pytest.raises(OutcomeUnknown) as caught:
        await _through(agent, lose_sends(1), binding, request, transport=gateway)
    assert caught.value.message_id == request.message.message_id
    assert gateway.refused >= 1


# --- a peer declared to deduplicate -----------------------------------------------------------


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
@pytest.mark.parametrize("streaming", [False, True], ids=["unary", "streaming"])
async def test_a_deduplicating_peer_is_resent_at_once(
    dedup_agent: EmbeddedPeer, binding: str, streaming: bool
) -> None:
    """Declared deduplicating: resent without a look-up, and the agent keeps one task."""
    seen_at: list[str] = []

    def deduplicates(peer: str) -> bool:
        seen_at.append(peer)
        return True

    events, made, hook, proxy = await _through(
        dedup_agent,
        lose_sends(1),
        binding,
        send_request(),
        streaming=streaming,
        exactly_once=ExactlyOnce(deduplicating=deduplicates),
    )
    assert len(made) == 1
    assert sdk_task_ids(events) == set(made)
    assert sdk_state(events[-1]) == COMPLETED
    assert hook.resolutions == [Resolution.DEDUPLICATING]
    assert not any(is_list_tasks(seen) for seen in proxy.seen)
    assert sends_seen(proxy.seen) == 2
    # guard_client keys a peer by the URL of the card's interface the client speaks.
    assert seen_at == [_interface_url(dedup_agent.via(proxy.url), binding)]


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
async def test_a_deduplicating_agent_confirmed_by_its_answers_is_resent_at_once(
    dedup_agent: EmbeddedPeer, binding: str
) -> None:
    """Its card says so and its answers carry the mark: a later lost answer is resent at once."""
    hook = Unknowns()
    before = dedup_agent.task_ids()
    plan = script((is_send, "forward", 1), (is_send, "lose", 1))
    with LossyProxy(dedup_agent.http_target, plan) as proxy:
        guard = Guard(sleep=lambda _: None, hooks=[hook])
        client, http = await sdk_client(
            dedup_agent, binding, card=dedup_agent.via(proxy.url), guard=guard, streaming=False
        )
        try:
            await _send(client, send_request())  # answered: its mark is learnt
            second = send_request()
            events = await _send(client, second)
        finally:
            await client.close()
            await http.aclose()
    made = new_tasks(dedup_agent, before)
    assert len(made) == 2  # one per logical send
    assert sdk_task_ids(events) <= set(made)
    assert hook.resolutions == [Resolution.DEDUPLICATING]
    assert dedup_agent.executions[second.message.message_id] == 1
    assert not any(is_list_tasks(seen) for seen in proxy.seen)


def _interface_url(card: Any, binding: str) -> str:
    """The URL of the card's interface of ``binding`` ("jsonrpc" or "rest")."""
    wire = {"jsonrpc": "JSONRPC", "rest": "HTTP+JSON"}[binding]
    (url,) = (i.url for i in card.supported_interfaces if i.protocol_binding == wire)
    return str(url)


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
async def test_a_deduplicating_peer_named_by_its_key(
    dedup_agent: EmbeddedPeer, binding: str
) -> None:
    """ExactlyOnce(deduplicating={key}) with guard_client's key: deduplicating, one task."""
    hook = Unknowns()
    before = dedup_agent.task_ids()
    with LossyProxy(dedup_agent.http_target, lose_sends(1)) as proxy:
        card = dedup_agent.via(proxy.url)
        key = _interface_url(card, binding)
        guard = Guard(
            sleep=lambda _: None, hooks=[hook], exactly_once=ExactlyOnce(deduplicating={key})
        )
        client, http = await sdk_client(
            dedup_agent, binding, card=card, guard=guard, streaming=False
        )
        try:
            events = await _send(client, send_request())
        finally:
            await client.close()
            await http.aclose()
    assert sdk_task_ids(events) == set(new_tasks(dedup_agent, before))
    assert hook.resolutions == [Resolution.DEDUPLICATING]


# --- a slow agent: the attempt times out, the task is working ---------------------------------


async def _cancel(client: GuardedClient, task_id: str) -> None:
    task = await client.cancel_task(a2a_pb2.CancelTaskRequest(id=task_id))
    assert a2a_pb2.TaskState.Name(task.status.state) == CANCELED


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
async def test_a_client_timeout_on_a_slow_agent_waits_for_the_task_found(
    agent: EmbeddedPeer, binding: str
) -> None:
    """The client times out (0.5 s) on a working task: found, then read until it settles.

    A blocking send answers once the task settles: so does a lost one found working. The
    Guard's clock is fake; its second pause cancels the task (the agent's "slow" task ends
    only so), and the caller gets the CANCELED task, the one task the agent made.
    """
    hook = Unknowns()
    before = agent.task_ids()
    clock = FakeClock()
    pauses: list[float] = []

    async def sleep(seconds: float) -> None:
        clock.advance(seconds)
        pauses.append(seconds)
        if len(pauses) == 2:
            await _cancel(client, new_tasks(agent, before)[0])

    client, http = await sdk_client(
        agent,
        binding,
        guard=Guard(clock=clock, sleep=sleep, hooks=[hook]),
        streaming=False,
        timeout=0.5,
    )
    try:
        events = await _send(client, send_request("slow"))
        made = new_tasks(agent, before)
        assert len(made) == 1
        assert sdk_task_ids(events) == set(made)
        assert sdk_state(events[-1]) == CANCELED
        assert hook.resolutions == [Resolution.FOUND]
        assert pauses == [0.5, 1.0]  # ExactlyOnce.poll_initial, doubled
    finally:
        await client.close()
        await http.aclose()


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
async def test_the_deadline_cuts_a_slow_attempt_short_and_finds_the_task(
    agent: EmbeddedPeer, binding: str
) -> None:
    """Guard(deadline=1.0), a 10 s httpx timeout: the attempt is cut, the look-up finds it."""
    hook = Unknowns()
    guard = Guard(
        deadline=1.0, sleep=lambda _: None, hooks=[hook], exactly_once=ExactlyOnce(reserve=0.4)
    )
    before = agent.task_ids()
    client, http = await sdk_client(agent, binding, guard=guard, streaming=False)
    try:
        try:
            events = await _send(client, send_request("slow"))
        except OutcomeUnknown:  # the look-up had no time left: nothing was resent
            events = []
        made = new_tasks(agent, before)
        assert len(made) == 1
        if events:
            assert sdk_task_ids(events) == set(made)
            assert sdk_state(events[-1]) == WORKING
            assert hook.resolutions == [Resolution.FOUND]
        else:
            assert hook.resolutions == [Resolution.UNRESOLVED]
        await _cancel(client, made[0])
    finally:
        await client.close()
        await http.aclose()


# --- a cancel whose answer is lost ------------------------------------------------------------


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
async def test_a_cancel_whose_answer_was_lost_is_a_cancel_that_succeeded(
    agent: EmbeddedPeer, binding: str
) -> None:
    """The first CancelTask canceled the task, its answer lost: CANCELED, not LOST_RACE."""
    recorded = RecordingHook()
    guard = Guard(sleep=lambda _: None, hooks=[recorded])
    with LossyProxy(agent.http_target, script((is_cancel, "lose", 1))) as proxy:
        client, http = await sdk_client(
            agent, binding, card=agent.via(proxy.url), guard=guard, streaming=False
        )
        try:
            started = await _send(client, send_request("slow", wait=False))
            (task_id,) = sdk_task_ids(started)
            task = await client.cancel_task(a2a_pb2.CancelTaskRequest(id=task_id))
        finally:
            await client.close()
            await http.aclose()
    assert proxy.counts["lose"] == 1
    assert sum(1 for seen in proxy.seen if is_cancel(seen)) == 2
    cancels = [event.decision for event in recorded.decisions if event.operation == "CancelTask"]
    # The lost answer is retried; the retry meets the task the first attempt canceled.
    assert [(d.action, d.reason) for d in cancels] == [
        (Action.RETRY, None),
        (Action.RECONCILE, Reason.TASK_NOT_CANCELABLE),
    ]
    assert a2a_pb2.TaskState.Name(task.status.state) == CANCELED
    assert not any(key in task.metadata for key in LOST_RACE)  # no lost-race marker
