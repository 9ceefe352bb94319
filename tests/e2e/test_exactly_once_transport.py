"""Exactly one task per send through `GuardTransport` and `AsyncGuardTransport`, raw bodies.

Raw JSON-RPC (``SendMessage``, ``SendStreamingMessage``) and HTTP+JSON (``message:send``,
``message:stream``) requests go through a guarded httpx client, then the real lossy proxy,
to a real a2a-sdk agent on 127.0.0.1; the tasks the agent holds are counted before and after.
A recording inner transport shows what the look-up sent, headers included.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx
import pytest

from a2a_client_errors import ExactlyOnce, Guard, OutcomeUnknown
from a2a_client_errors._streaming import aiter_events, iter_events
from a2a_client_errors._transport import AsyncGuardTransport, GuardTransport, operation_of
from a2a_client_errors.testing.lossy import LossyProxy, lose_sends
from a2a_client_errors.testing.peer import EmbeddedPeer
from a2a_client_errors.types import Resolution
from tests.e2e.lossy import (
    COMPLETED,
    VERSION,
    Unknowns,
    is_batch,
    is_list_tasks,
    is_send,
    new_tasks,
    raw_message,
    raw_state,
    raw_task_ids,
    script,
    sends_seen,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    from a2a_client_errors.testing.lossy import Plan

pytestmark = pytest.mark.e2e

HTTP_BINDINGS = ["jsonrpc", "rest"]
AUTHORIZATION = "Bearer tok-lookup-3f9a"
TIMEOUT = 10.0


@pytest.fixture(scope="module")
def agent() -> Iterator[EmbeddedPeer]:
    """An agent of this module's own: its task store holds only what these tests made."""
    with EmbeddedPeer(streaming=True) as running:
        yield running


class Recording(httpx.BaseTransport):
    """httpx's own transport, keeping the operation and headers of every request it sends."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.sent: list[tuple[str | None, httpx.Headers]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Record, then send."""
        self.sent.append((operation_of(request), request.headers))
        return self.inner.handle_request(request)

    def close(self) -> None:
        """Close the inner transport."""
        self.inner.close()


class AsyncRecording(httpx.AsyncBaseTransport):
    """The async twin of `Recording`."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.sent: list[tuple[str | None, httpx.Headers]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Record, then send."""
        self.sent.append((operation_of(request), request.headers))
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self.inner.aclose()


def _request(
    origin: str, binding: str, *, stream: bool, text: str = "hello", **fields: Any
) -> tuple[str, Any]:
    """The URL and JSON body of a raw send, on ``binding``, to ``origin``."""
    message = raw_message(text, **fields)
    if binding == "jsonrpc":
        method = "SendStreamingMessage" if stream else "SendMessage"
        body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": {"message": message}}
        return f"{origin}/jsonrpc", body
    return f"{origin}/rest/message:{'stream' if stream else 'send'}", {"message": message}


def _headers(*, stream: bool) -> dict[str, str]:
    return {
        **VERSION,
        "Authorization": AUTHORIZATION,
        "Accept": "text/event-stream" if stream else "application/json",
    }


def _result(binding: str, response: httpx.Response) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    return body["result"] if binding == "jsonrpc" else body


def _lookups_carry_the_headers(sent: list[tuple[str | None, httpx.Headers]]) -> None:
    """The look-up went through the inner transport with the original request's headers."""
    lookups = [headers for operation, headers in sent if operation == "ListTasks"]
    assert lookups
    for headers in lookups:
        assert headers["authorization"] == AUTHORIZATION
        assert headers["a2a-version"] == "1.0"


CONTRACT = ExactlyOnce(listed_within=lambda peer: 0.0)
"""A declared listing contract: a2a-sdk stores a task with its user message as it starts."""


def _guard(hook: Unknowns, exactly_once: ExactlyOnce | None) -> Guard:
    return Guard(sleep=lambda _: None, hooks=[hook], exactly_once=exactly_once)


def _sync_send(
    peer: EmbeddedPeer,
    plan: Plan,
    binding: str,
    *,
    stream: bool,
    exactly_once: ExactlyOnce | None = None,
) -> tuple[list[dict[str, Any]], list[str], Unknowns, LossyProxy, Recording]:
    hook = Unknowns()
    inner = Recording()
    transport = GuardTransport(_guard(hook, exactly_once), inner)
    before = peer.task_ids()
    with (
        LossyProxy(peer.http_target, plan) as proxy,
        httpx.Client(transport=transport, timeout=TIMEOUT) as client,
    ):
        url, body = _request(proxy.url, binding, stream=stream)
        if stream:
            with client.stream("POST", url, json=body, headers=_headers(stream=True)) as answer:
                events = list(iter_events(answer, operation="SendStreamingMessage"))
        else:
            answer = client.post(url, json=body, headers=_headers(stream=False))
            assert answer.status_code == 200
            events = [_result(binding, answer)]
    return events, new_tasks(peer, before), hook, proxy, inner


async def _async_send(
    peer: EmbeddedPeer,
    plan: Plan,
    binding: str,
    *,
    stream: bool,
    exactly_once: ExactlyOnce | None = None,
) -> tuple[list[dict[str, Any]], list[str], Unknowns, LossyProxy, AsyncRecording]:
    hook = Unknowns()
    inner = AsyncRecording()
    transport = AsyncGuardTransport(_guard(hook, exactly_once), inner)
    before = peer.task_ids()
    with LossyProxy(peer.http_target, plan) as proxy:
        async with httpx.AsyncClient(transport=transport, timeout=TIMEOUT) as client:
            url, body = _request(proxy.url, binding, stream=stream)
            if stream:
                async with client.stream(
                    "POST", url, json=body, headers=_headers(stream=True)
                ) as answer:
                    events = [
                        event
                        async for event in aiter_events(answer, operation="SendStreamingMessage")
                    ]
            else:
                answer = await client.post(url, json=body, headers=_headers(stream=False))
                assert answer.status_code == 200
                events = [_result(binding, answer)]
    return events, new_tasks(peer, before), hook, proxy, inner


MODES = pytest.mark.parametrize(
    "case",
    [("lose", Resolution.FOUND, None), ("drop", Resolution.RESENT, CONTRACT)],
    ids=["lose", "drop-under-a-contract"],
)


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
@MODES
def test_guard_transport_makes_one_task_per_send(
    agent: EmbeddedPeer,
    binding: str,
    stream: bool,
    case: tuple[str, Resolution, ExactlyOnce | None],
) -> None:
    """GuardTransport: a lost answer found, a dropped send resent under a contract; one task."""
    mode, resolution, settings = case
    events, made, hook, proxy, inner = _sync_send(
        agent, lose_sends(1, mode=mode), binding, stream=stream, exactly_once=settings
    )
    assert len(made) == 1
    assert raw_task_ids(events) == set(made)
    assert raw_state(events[-1]) == COMPLETED
    assert hook.resolutions == [resolution]
    assert sends_seen(proxy.seen) == (1 if mode == "lose" else 2)
    _lookups_carry_the_headers(inner.sent)


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
@MODES
async def test_async_guard_transport_makes_one_task_per_send(
    agent: EmbeddedPeer,
    binding: str,
    stream: bool,
    case: tuple[str, Resolution, ExactlyOnce | None],
) -> None:
    """AsyncGuardTransport: the same, through the async transport."""
    mode, resolution, settings = case
    events, made, hook, proxy, inner = await _async_send(
        agent, lose_sends(1, mode=mode), binding, stream=stream, exactly_once=settings
    )
    assert len(made) == 1
    assert raw_task_ids(events) == set(made)
    assert raw_state(events[-1]) == COMPLETED
    assert hook.resolutions == [resolution]
    assert sends_seen(proxy.seen) == (1 if mode == "lose" else 2)
    _lookups_carry_the_headers(inner.sent)


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
def test_a_dropped_send_is_never_resent_without_the_agents_word(
    agent: EmbeddedPeer, binding: str, stream: bool
) -> None:
    """GuardTransport, no contract: the dropped send is looked for, not resent; no task."""
    hook = Unknowns()
    transport = GuardTransport(_guard(hook, None), Recording(), raise_failures=True)
    before = agent.task_ids()
    with (
        LossyProxy(agent.http_target, lose_sends(1, mode="drop")) as proxy,
        httpx.Client(transport=transport, timeout=TIMEOUT) as client,
    ):
        url, body = _request(proxy.url, binding, stream=stream)
        with pytest.raises(OutcomeUnknown) as caught:
            client.post(url, json=body, headers=_headers(stream=stream))
    assert new_tasks(agent, before) == []
    assert sends_seen(proxy.seen) == 1
    assert caught.value.sent is not None
    assert hook.resolutions == [Resolution.UNRESOLVED]


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
def test_guard_transport_two_answers_lost_in_a_row(agent: EmbeddedPeer, binding: str) -> None:
    """lose_sends(2) through GuardTransport: found after the first loss, one task."""
    events, made, hook, proxy, _ = _sync_send(agent, lose_sends(2), binding, stream=False)
    assert len(made) == 1
    assert raw_task_ids(events) == set(made)
    assert hook.resolutions == [Resolution.FOUND]
    assert sends_seen(proxy.seen) == 1


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
async def test_async_guard_transport_drop_then_lose(agent: EmbeddedPeer, binding: str) -> None:
    """Under a contract: a dropped send, then the resend's answer lost: resent, then found."""
    plan = script((is_send, "drop", 1), (is_send, "lose", 1))
    events, made, hook, _, _ = await _async_send(
        agent, plan, binding, stream=True, exactly_once=CONTRACT
    )
    assert len(made) == 1
    assert raw_task_ids(events) == set(made)
    assert raw_state(events[-1]) == COMPLETED
    assert hook.resolutions == [Resolution.RESENT, Resolution.FOUND]


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
def test_a_working_task_found_for_a_lost_stream_is_subscribed_to(
    agent: EmbeddedPeer, binding: str
) -> None:
    """A lost stream of a "slow" task: the caller's stream is the task's subscription."""
    inner = Recording()
    transport = GuardTransport(Guard(sleep=lambda _: None), inner)
    before = agent.task_ids()
    # The agent never ends this stream: the proxy loses it when its own bound (0.5 s) is up.
    with (
        LossyProxy(agent.http_target, lose_sends(1), timeout=0.5) as proxy,
        httpx.Client(transport=transport, timeout=TIMEOUT) as client,
    ):
        url, body = _request(proxy.url, binding, stream=True, text="slow")
        with client.stream("POST", url, json=body, headers=_headers(stream=True)) as answer:
            first = next(iter_events(answer, operation="SubscribeToTask"))
        (task_id,) = new_tasks(agent, before)
        if binding == "jsonrpc":
            cancel = {"jsonrpc": "2.0", "id": 8, "method": "CancelTask", "params": {"id": task_id}}
            canceled = client.post(url, json=cancel, headers=_headers(stream=False))
        else:
            canceled = client.post(
                f"{proxy.url}/rest/tasks/{task_id}:cancel", headers=_headers(stream=False)
            )
    assert raw_task_ids([first]) == {task_id}
    assert [operation for operation, _ in inner.sent][-2] == "SubscribeToTask"
    assert raw_state(_result(binding, canceled)) == "TASK_STATE_CANCELED"


@pytest.fixture(scope="module")
def dedup_agent() -> Iterator[EmbeddedPeer]:
    """An agent whose request handler returns the first task for a resent messageId."""
    with EmbeddedPeer(streaming=True, deduplicate=True) as running:
        yield running


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
def test_a_peer_declared_deduplicating_by_origin_is_resent_at_once(
    dedup_agent: EmbeddedPeer, binding: str
) -> None:
    """The transports key a peer by scheme://host:port: resent without a look-up; one task."""
    hook = Unknowns()
    before = dedup_agent.task_ids()
    with LossyProxy(dedup_agent.http_target, lose_sends(1)) as proxy:
        once = ExactlyOnce(deduplicating={proxy.url})
        guard = Guard(sleep=lambda _: None, hooks=[hook], exactly_once=once)
        with httpx.Client(transport=GuardTransport(guard), timeout=TIMEOUT) as client:
            url, body = _request(proxy.url, binding, stream=False)
            answer = client.post(url, json=body, headers=_headers(stream=False))
    made = new_tasks(dedup_agent, before)
    assert len(made) == 1
    assert raw_task_ids([_result(binding, answer)]) == set(made)
    assert hook.resolutions == [Resolution.DEDUPLICATING]
    assert not any(is_list_tasks(seen) for seen in proxy.seen)
    assert sends_seen(proxy.seen) == 2


# --- a peer that cannot be looked up ----------------------------------------------------------

UNLOOKABLE = [(is_send, "lose", 1), (is_list_tasks, "drop", None)]


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
def test_guard_transport_raises_outcome_unknown_when_it_cannot_look(
    agent: EmbeddedPeer, binding: str
) -> None:
    """ListTasks dropped, raise_failures=True: OutcomeUnknown with the ids; sent once."""
    hook = Unknowns()
    transport = GuardTransport(Guard(sleep=lambda _: None, hooks=[hook]), raise_failures=True)
    before = agent.task_ids()
    with (
        LossyProxy(agent.http_target, script(*UNLOOKABLE)) as proxy,
        httpx.Client(transport=transport, timeout=TIMEOUT) as client,
    ):
        url, body = _request(proxy.url, binding, stream=False, contextId="ctx-raw-unknown")
        with pytest.raises(OutcomeUnknown) as caught:
            client.post(url, json=body, headers=_headers(stream=False))
    message = body["params"]["message"] if binding == "jsonrpc" else body["message"]
    assert caught.value.message_id == message["messageId"]
    assert caught.value.context_id == "ctx-raw-unknown"
    assert caught.value.task_id is None
    assert sends_seen(proxy.seen) == 1
    assert any(is_list_tasks(seen) for seen in proxy.seen)
    assert len(new_tasks(agent, before)) == 1
    assert hook.resolutions == [Resolution.UNRESOLVED]


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
async def test_a_transparent_transport_hands_back_what_the_client_would_have_seen(
    agent: EmbeddedPeer, binding: str
) -> None:
    """raise_failures=False: the lost answer's own httpx error reaches the caller; sent once."""
    transport = AsyncGuardTransport(Guard(sleep=lambda _: None, hooks=[Unknowns()]))
    with LossyProxy(agent.http_target, script(*UNLOOKABLE)) as proxy:
        async with httpx.AsyncClient(transport=transport, timeout=TIMEOUT) as client:
            url, body = _request(proxy.url, binding, stream=False)
            with pytest.raises(httpx.RemoteProtocolError):
                await client.post(url, json=body, headers=_headers(stream=False))
    assert sends_seen(proxy.seen) == 1


# --- a JSON-RPC batch that sends a message ----------------------------------------------------


def test_a_batch_holding_a_send_whose_answer_is_lost_is_not_resent(agent: EmbeddedPeer) -> None:
    """A batch with a SendMessage, its answer lost: no look-up, no resend, OutcomeUnknown."""
    hook = Unknowns()
    transport = GuardTransport(Guard(sleep=lambda _: None, hooks=[hook]), raise_failures=True)
    before = agent.task_ids()
    with (
        LossyProxy(agent.http_target, script((is_batch, "lose", 1))) as proxy,
        httpx.Client(transport=transport, timeout=TIMEOUT) as client,
    ):
        _, send = _request(proxy.url, "jsonrpc", stream=False)
        read = {"jsonrpc": "2.0", "id": 8, "method": "GetTask", "params": {"id": "t-0"}}
        with pytest.raises(OutcomeUnknown):
            client.post(f"{proxy.url}/jsonrpc", json=[send, read], headers=_headers(stream=False))
    assert [is_batch(seen) for seen in proxy.seen] == [True]  # sent once, nothing looked up
    assert len(new_tasks(agent, before)) <= 1  # a2a-sdk refuses batches: none here
    assert hook.resolutions == [Resolution.UNRESOLVED]
