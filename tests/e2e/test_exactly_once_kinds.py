"""One task per logical send, never a wrong task, against every kind of agent in the field.

Each kind is the real a2a-sdk agent in a dialect of another server (`tests.dialects`): no
user message in history (a2a-java), ListTasks without history, trimmed history, no status
timestamps (a2a-sdk's own `new_task_from_user_message`), Message answers, a sub-task echoing
the messageId, ListTasks refused without a user (a2a-go), no ListTasks (A2A 0.3), an empty
ListTasks stub, and an agent that deduplicates and says so in its card. The lossy proxy loses
the answer of each send's first attempt after the agent did the work; `guard_client` must then
find the task, or say `OutcomeUnknown` and resend nothing. The agent's ledger says what really
ran: executor runs per messageId, and the task each run made.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2
from a2a.utils.constants import TransportProtocol

from a2a_client_errors import AsyncGuardTransport, CallFailed, Guard, OutcomeUnknown
from a2a_client_errors.integrations.a2a_sdk import guard_client
from a2a_client_errors.testing import FakeClock
from a2a_client_errors.testing.lossy import LosingTransport, LossyProxy, lose_sends
from a2a_client_errors.testing.peer import EmbeddedPeer
from a2a_client_errors.types import Resolution
from tests.dialects import (
    A2A_SDK,
    EMPTY_LIST,
    HELD,
    LIST_NEEDS_USER,
    LIST_WITHOUT_HISTORY,
    MESSAGE_ONLY,
    NO_HISTORY,
    NO_LIST_TASKS,
    NO_TIMESTAMPS,
    OTHER_ORIGIN,
    SEPARATE_STORES,
    SUBTASK_ECHO,
    SUBTASK_ECHO_FIRST,
    TRIMMED_HISTORY,
    Dialect,
)
from tests.e2e.lossy import VERSION, Unknowns, is_send, script, send_request
from tests.e2e.sdk import sdk_client

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.e2e

FOUND, UNRESOLVED, DEDUPLICATING = (
    Resolution.FOUND,
    Resolution.UNRESOLVED,
    Resolution.DEDUPLICATING,
)
KINDS: dict[str, tuple[Dialect, bool, Resolution]] = {
    # kind: (dialect, deduplicating, how a lost answer resolves)
    "a2a-sdk": (A2A_SDK, False, FOUND),
    "no history (a2a-java)": (NO_HISTORY, False, UNRESOLVED),
    "ListTasks without history": (LIST_WITHOUT_HISTORY, False, UNRESOLVED),
    "trimmed history": (TRIMMED_HISTORY, False, UNRESOLVED),
    "no status timestamps": (NO_TIMESTAMPS, False, FOUND),
    "Message answers": (MESSAGE_ONLY, False, UNRESOLVED),
    "a sub-task echoing the messageId": (SUBTASK_ECHO, False, FOUND),
    "a sub-task started by the messageId too": (SUBTASK_ECHO_FIRST, False, UNRESOLVED),
    "ListTasks refused without a user (a2a-go)": (LIST_NEEDS_USER, False, UNRESOLVED),
    "no ListTasks (A2A 0.3)": (NO_LIST_TASKS, False, UNRESOLVED),
    "an empty ListTasks stub": (EMPTY_LIST, False, UNRESOLVED),
    # Its card says so, but no answer of it was seen with the mark (each first answer is
    # lost, and found tasks are read with GetTask): looked up as any agent, and found.
    "deduplicating, said in its card": (A2A_SDK, True, FOUND),
}
HTTP_BINDINGS = ["jsonrpc", "rest"]
SENDS = 2


@pytest.fixture(scope="module", params=list(KINDS))
def kind(request: pytest.FixtureRequest) -> Iterator[tuple[str, EmbeddedPeer]]:
    """An agent of each kind, its own for this module."""
    dialect, deduplicate, _ = KINDS[request.param]
    with EmbeddedPeer(streaming=False, dialect=dialect, deduplicate=deduplicate) as running:
        yield request.param, running


def _right(peer: EmbeddedPeer, message_id: str, events: list[Any]) -> None:
    """The caller's task, if it got one, is the task its own message started."""
    tasks = [e.task.id for e in events if e.WhichOneof("payload") == "task"]
    assert tasks, "an answer without a task"
    assert tasks[-1] in peer.ledger.tasks_started_by(message_id), "a wrong task handed back"


async def _outcome(client: Any, request: Any) -> list[Any] | OutcomeUnknown:
    """The events of a send, or the OutcomeUnknown it raised."""
    try:
        return [e async for e in client.send_message(request)]
    except OutcomeUnknown as unknown:
        return unknown


@pytest.mark.parametrize("binding", HTTP_BINDINGS)
async def test_one_run_per_send_and_never_a_wrong_task(
    kind: tuple[str, EmbeddedPeer], binding: str
) -> None:
    """Every first answer lost: one executor run per send, the right task or OutcomeUnknown."""
    name, peer = kind
    _, _, expected = KINDS[name]
    hook = Unknowns()
    plan = script((is_send, "lose", SENDS))  # each send's first attempt
    with LossyProxy(peer.http_target, plan) as proxy:
        client, http = await sdk_client(
            peer,
            binding,
            card=peer.via(proxy.url),
            guard=Guard(sleep=lambda _: None, hooks=[hook]),
            streaming=False,
        )
        sent: list[str] = []
        try:
            for _ in range(SENDS):
                request = send_request("hello")
                sent.append(request.message.message_id)
                outcome = await _outcome(client, request)
                if isinstance(outcome, OutcomeUnknown):
                    assert expected is not FOUND, f"{name}: {outcome.why}"
                    assert outcome.sent is not None
                    assert outcome.sent.message_id == request.message.message_id
                else:
                    assert expected is not UNRESOLVED
                    _right(peer, request.message.message_id, outcome)
        finally:
            await client.close()
            await http.aclose()
    assert proxy.counts["lose"] == SENDS
    runs = peer.executions
    for message_id in sent:
        assert runs[message_id] == 1, f"{name}: {runs[message_id]} runs of one send"
        assert len(peer.ledger.tasks_started_by(message_id)) <= 1
    assert hook.resolutions[0] is expected


async def test_the_task_of_a_long_send_without_timestamps_is_found_and_waited_for() -> None:
    """A timestamp-less task found working after a read timeout: read until it completes.

    The agent holds its work; the client's read timeout (0.5 s) loses the blocking answer.
    The task has no status timestamp, so a listing filtered by time would miss it: the
    look-up lists without one. The Guard's clock is fake; its second pause releases the work.
    """
    with EmbeddedPeer(streaming=False, dialect=NO_TIMESTAMPS | HELD) as peer:
        clock, hook, pauses = FakeClock(), Unknowns(), []

        async def sleep(seconds: float) -> None:
            clock.advance(seconds)
            pauses.append(seconds)
            if len(pauses) == 2:
                peer.release()

        client, http = await sdk_client(
            peer,
            "jsonrpc",
            guard=Guard(clock=clock, sleep=sleep, hooks=[hook]),
            streaming=False,
            timeout=0.5,
        )
        try:
            request = send_request("hello")
            events = [e async for e in client.send_message(request)]
        finally:
            await client.close()
            await http.aclose()
        message_id = request.message.message_id
        assert peer.executions[message_id] == 1
        _right(peer, message_id, events)
        assert a2a_pb2.TaskState.Name(events[-1].task.status.state) == "TASK_STATE_COMPLETED"
        assert not events[-1].task.status.HasField("timestamp")
        assert hook.resolutions == [FOUND]


@pytest.mark.parametrize("dialect", [NO_LIST_TASKS, LIST_NEEDS_USER], ids=["0.3", "a2a-go"])
async def test_an_agent_that_cannot_be_looked_up_is_sent_without_blocking_then(
    dialect: Dialect,
) -> None:
    """Once its ListTasks is refused, a send goes without blocking and its task is read.

    The first long send is lost to the read timeout and cannot be looked up: OutcomeUnknown,
    one run. The next answers at once with its task, which is read (GetTask) until it
    completes: the caller gets what a blocking send would have answered, one run.
    """
    with EmbeddedPeer(streaming=False, dialect=dialect | HELD) as peer:
        clock, pauses = FakeClock(), []

        async def sleep(seconds: float) -> None:
            clock.advance(seconds)
            pauses.append(seconds)
            peer.release()

        guard = Guard(clock=clock, sleep=sleep)
        client, http = await sdk_client(peer, "jsonrpc", guard=guard, streaming=False, timeout=0.5)
        try:
            first = send_request("hello")
            with pytest.raises(OutcomeUnknown):
                _ = [e async for e in client.send_message(first)]
            assert guard.facts(client.peer).unlisted
            peer.release()
            second = send_request("hello")
            events = [e async for e in client.send_message(second)]
        finally:
            await client.close()
            await http.aclose()
        for request in (first, second):
            assert peer.executions[request.message.message_id] == 1
        _right(peer, second.message.message_id, events)
        assert a2a_pb2.TaskState.Name(events[-1].task.status.state) == "TASK_STATE_COMPLETED"
        assert not second.configuration.return_immediately  # the caller's request unchanged


async def test_a_look_up_over_another_interface_with_its_own_store_proves_nothing() -> None:
    """The interface that made the task goes down; the other, with its own store, is asked.

    Not there over gRPC (its own task store) proves nothing about JSON-RPC's: OutcomeUnknown,
    one run, nothing resent.
    """
    with EmbeddedPeer(streaming=False, dialect=SEPARATE_STORES) as peer:
        peer.fill(1, artifact_bytes=10, binding="grpc")  # gRPC's store lists a task of its own
        # The send's answer is lost, then nothing more is answered over HTTP: as dead.
        plan = script((is_send, "lose", 1), (lambda seen: True, "drop", None))
        with LossyProxy(peer.http_target, plan) as proxy:
            hook = Unknowns()
            client, http = await sdk_client(
                peer,
                "jsonrpc",
                card=peer.via(proxy.url),
                guard=Guard(sleep=lambda _: None, hooks=[hook]),
                streaming=False,
                failover_origins=(peer.grpc_target,),
                also=("grpc",),
            )
            request = send_request("hello")
            try:
                with pytest.raises(OutcomeUnknown) as unknown:
                    _ = [e async for e in client.send_message(request)]
            finally:
                await client.close()
                await http.aclose()
        assert peer.executions[request.message.message_id] == 1
        assert len(peer.task_ids("grpc")) == 1  # nothing was sent over gRPC but the look-up
    assert proxy.counts["lose"] == 1
    assert proxy.counts["drop"] >= 1  # the look-up tried JSON-RPC first
    assert "another interface" in unknown.value.why
    assert hook.resolutions == [UNRESOLVED]


async def test_the_httpx_transport_door_keeps_one_run_per_send(
    kind: tuple[str, EmbeddedPeer],
) -> None:
    """AsyncGuardTransport over raw JSON-RPC: the same verdicts, one run per send."""
    name, peer = kind
    _, _, expected = KINDS[name]
    hook = Unknowns()
    guard = Guard(sleep=lambda _: None, hooks=[hook])
    transport = AsyncGuardTransport(guard, LosingTransport(lose_sends(SENDS)), raise_failures=True)
    sent: list[str] = []
    async with httpx.AsyncClient(transport=transport, headers=VERSION, timeout=10) as http:
        for index in range(SENDS):
            message_id = f"raw-{uuid.uuid4()}"
            sent.append(message_id)
            body = {
                "jsonrpc": "2.0",
                "id": index,
                "method": "SendMessage",
                "params": {
                    "message": {
                        "messageId": message_id,
                        "role": "ROLE_USER",
                        "parts": [{"text": "hello"}],
                    }
                },
            }
            if expected is UNRESOLVED:
                with pytest.raises(OutcomeUnknown):
                    await http.post(peer.jsonrpc_url, json=body)
                continue
            answer = await http.post(peer.jsonrpc_url, json=body)
            task = answer.json()["result"]["task"]
            assert task["id"] in peer.ledger.tasks_started_by(message_id)
    for message_id in sent:
        assert peer.executions[message_id] == 1, f"{name}: more than one run of one send"
    assert hook.resolutions[0] is expected


async def test_credentials_never_reach_another_origin_the_card_lists() -> None:
    """The preferred interface is down: the card's interface on another origin is not tried.

    The agent's HTTP+JSON routes are also served on another origin, listed by its card; a call
    carrying `Authorization` must never reach it unless the caller names that origin.
    """
    with (
        EmbeddedPeer(streaming=False, dialect=OTHER_ORIGIN) as peer,
        LossyProxy(peer.http_target) as proxy,
    ):
        card = peer.via(proxy.url)
        proxy.down()  # the card's own origin (JSON-RPC, HTTP+JSON) refuses connections
        http = httpx.AsyncClient(headers={**VERSION, "Authorization": "Bearer s3cr3t"})
        config = ClientConfig(
            streaming=False,
            httpx_client=http,
            supported_protocol_bindings=[
                TransportProtocol.JSONRPC,
                TransportProtocol.HTTP_JSON,
            ],
        )
        guard = Guard(sleep=lambda _: None)
        client = guard_client(ClientFactory(config).create(card), guard)
        allowed = guard_client(
            ClientFactory(config).create(card),
            guard,
            failover_origins=(peer.other_origin,),
        )
        try:
            assert all(peer.other_origin not in i.url for i in client.interfaces)
            with pytest.raises(CallFailed):
                _ = [e async for e in client.send_message(send_request("hello"))]
            assert peer.seen_requests(peer.other_origin) == []
            # Named by the caller, the other origin serves, credentials and all.
            events = [e async for e in allowed.send_message(send_request("hello"))]
            assert events
        finally:
            await client.close()
            await allowed.close()
            await http.aclose()
        seen = peer.seen_requests(peer.other_origin)
        assert seen
        assert seen[0].header("authorization") == "Bearer s3cr3t"
