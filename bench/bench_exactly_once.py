"""Exactly-once sends against every kind of agent: runs per send, wrong tasks, callers served.

Each kind of agent is a real a2a-sdk agent on 127.0.0.1 (`EmbeddedPeer`) speaking the dialect of
another server (`tests.dialects`): ``A2A_SDK`` (a2a-sdk as it is),
``NO_HISTORY``, ``LIST_WITHOUT_HISTORY``, ``TRIMMED_HISTORY``, ``NO_TIMESTAMPS``,
``MESSAGE_ONLY``, ``SUBTASK_ECHO``, ``SUBTASK_ECHO_FIRST``, ``LIST_NEEDS_USER``,
``NO_LIST_TASKS``, ``EMPTY_LIST``, and ``DEDUPLICATING`` (``EmbeddedPeer(deduplicate=True)``:
the client is told nothing; the door reads the agent's card). Every scenario runs against a
fresh agent, so no scenario's tasks stand in another's look-up.

Part A, answers lost after the agent did the work. A seeded schedule loses the answer of
attempt ``k`` of send ``i`` when ``random.Random(f"{seed}/{share}/{i}/{k}")`` draws below the
share (0 %, 10 %, 30 %): whatever the door, whatever it did before, every client meets the same
losses. Two doors, ``--sends`` logical sends each, one after the other, unary, JSON-RPC:

* ``guard_client``: a2a-sdk's own client (``ClientFactory``, ``streaming=False``) wrapped in
  ``guard_client(client, Guard(sleep=<no sleep>))``, through a `LossyProxy` in mode ``lose``
  (the agent answered in full; the client's connection is closed without a byte);
* ``AsyncGuardTransport``: raw JSON-RPC posted through ``AsyncGuardTransport(Guard(sleep=<no
  sleep>), inner, raise_failures=True)`` whose inner transport reads the agent's whole answer
  to a send and then raises ``httpx.ReadError`` by the same schedule. Not through the proxy:
  the card the agent serves lists its own URL, and the door believes a card only when it lists
  the interface called, so the deduplicating agent's card must be read on the agent's origin.

Part B, long sends lost to the client's read timeout, blocking vs non-blocking. A seeded share
(10 %, 30 %) of the sends are ``"hold"`` messages, whose work the agent holds; a thread of this
script releases each held run ``--hold`` real seconds after it first sees it held, longer than
the client's httpx read timeout (``--read-timeout``); the other sends are short. Through
``guard_client`` (real sleeps, a seeded jitter), once with ``ExactlyOnce(non_blocking=False)``
and once with ``ExactlyOnce(non_blocking=True)``, both with ``poll_initial=0.05``,
``poll_max=0.2`` and ``recheck_after=0.1`` (the held task is stored before its run holds, so
the second look finds nothing more than the first). The kinds run side by side, each against
its own agent. This is the measurement against agents that cannot be looked up
(``NO_LIST_TASKS``, ``LIST_NEEDS_USER``): they can give callers their task only when the send
does not block.

Part C, a busy agent: a plain agent holding ``--busy-tasks`` completed tasks with 400 KiB
artifacts (``peer.fill``); ``--busy-sends`` sends, each with its first answer lost and looked
up, through each door: bytes read per look-up.

Part D, a full outage: the proxy drops every request (nothing reaches the agent; each client
sees its connection closed after sending: an unknown outcome). The Guard's defaults (its
default budget, 3 attempts), a `FakeClock` as its clock and sleep, so that nothing refills or
is forgotten with real time. ``--outage-warmup`` calls spend the budget, then requests per call
(sends and look-up reads together) over ``--outage-calls`` calls, through each door.

How it counts:

* runs per send: the agent's executor runs per messageId (``peer.executions``); tasks per send:
  the tasks those runs made (``peer.ledger.tasks_started_by``; a sub-task an agent keeps beside
  is not one). Both are counted per send, so "not once" is the sends that did not run exactly
  once;
* wrong task: the caller got a task that is not the one its own message started (the ledger);
* own task: the caller got the task its message started; "OutcomeUnknown", "a Message" (the
  agent's answer, no task) and anything else raised are shown beside;
* answers lost, requests and bytes: an httpx transport under each door (``Meter``) sees every
  request the door sends. An answer is lost when a send's request went out and its answer
  never came (a transport error other than a refused connection); a read is any request that
  is not a send (ListTasks and GetTask of the look-up, GetTask of a non-blocking send's follow,
  the agent's card); bytes are the body bytes of the answers to reads as they came off the wire
  (before any decoding), counted as the client reads them.

Targets (the script exits 1 when one is missed):

* exactly one run per logical send on every kind and part, never two tasks for one send, and
  never a wrong task (Parts A, B, C; in Part D nothing reaches the agent);
* at least 99 % of callers get their own task at 30 %, wherever the agent lists its tasks with
  history (``A2A_SDK``, ``NO_TIMESTAMPS``, ``SUBTASK_ECHO``) or advertises deduplication (Part A,
  both doors; Part B blocking), and in Part B non-blocking on every kind that makes tasks;
* at most 64 KiB read per look-up on the busy agent (Part C);
* at most 1.2 requests per call under a full outage once the budget is spent (Part D).

    python bench/bench_exactly_once.py [--sends 200] [--long-sends 60] [--read-timeout 0.5]
        [--hold 0.8] [--busy-tasks 200] [--busy-sends 10] [--outage-warmup 50]
        [--outage-calls 200] [--seed 7] [--json [PATH]]

CI runs it smaller: ``--sends 40 --long-sends 20 --busy-tasks 100 --busy-sends 5
--outage-warmup 30 --outage-calls 100``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import random
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2
from a2a.utils.constants import TransportProtocol
from figures import Target, add_json_option, emit, show, table

from a2a_client_errors import AsyncGuardTransport, ExactlyOnce, Guard, OutcomeUnknown
from a2a_client_errors.integrations.a2a_sdk import guard_client
from a2a_client_errors.testing import FakeClock
from a2a_client_errors.testing.lossy import LosingTransport, LossyProxy, Seen
from a2a_client_errors.testing.peer import HOLD, EmbeddedPeer
from a2a_client_errors.types import OPERATIONS_BY_NAME, operation_of

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests' simulated servers
from tests.dialects import (
    A2A_SDK,
    EMPTY_LIST,
    LIST_NEEDS_USER,
    LIST_WITHOUT_HISTORY,
    MESSAGE_ONLY,
    NO_HISTORY,
    NO_LIST_TASKS,
    NO_TIMESTAMPS,
    SUBTASK_ECHO,
    SUBTASK_ECHO_FIRST,
    TRIMMED_HISTORY,
    Dialect,
)
from tests.foreign import Abandoning, ForeignAgent

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Iterable

    Send: TypeAlias = Callable[[str, str], Awaitable[tuple[str, str]]]
    """Sends one message (its messageId, its text); what the caller got (`_sdk_answer`)."""

SENDS = frozenset(name for name, op in OPERATIONS_BY_NAME.items() if op.creates_work)
"""The operations that create work (the public operation table's): each one counted as a send."""
VERSION = {"A2A-Version": "1.0"}
LOST_SHARES = (0.0, 0.1, 0.3)
LONG_SHARES = (0.1, 0.3)
TARGET_GOT = 0.99
TARGET_AT = 0.3
TARGET_LOOKUP_BYTES = 64 * 1024
TARGET_OUTAGE = 1.2
ARTIFACT_BYTES = 400 * 1024
DOORS = ("guard_client", "AsyncGuardTransport")


@dataclass(frozen=True, slots=True)
class Kind:
    """A kind of agent in the field.

    Attributes:
        name: the row label.
        dialect: how its server departs from a2a-sdk.
        deduplicate: whether it deduplicates resent messageIds and says so in its card.
        lists_history: whether it lists its tasks with their history: a lost answer is found.
        makes_tasks: whether it answers messages with tasks (not with a Message).
    """

    name: str
    dialect: Dialect
    deduplicate: bool = False
    lists_history: bool = False
    makes_tasks: bool = True
    dedupe_ttl: float | None = None

    def peer(self) -> EmbeddedPeer:
        """A fresh agent of this kind (not started)."""
        options = {} if self.dedupe_ttl is None else {"ttl": self.dedupe_ttl}
        return EmbeddedPeer(
            streaming=False,
            dialect=self.dialect,
            deduplicate=self.deduplicate,
            dedupe_options=options,
        )


KINDS = (
    Kind("A2A_SDK", A2A_SDK, lists_history=True),
    Kind("NO_HISTORY", NO_HISTORY),
    Kind("LIST_WITHOUT_HISTORY", LIST_WITHOUT_HISTORY),
    Kind("TRIMMED_HISTORY", TRIMMED_HISTORY),
    Kind("NO_TIMESTAMPS", NO_TIMESTAMPS, lists_history=True),
    Kind("MESSAGE_ONLY", MESSAGE_ONLY, makes_tasks=False),
    Kind("SUBTASK_ECHO", SUBTASK_ECHO, lists_history=True),
    Kind("SUBTASK_ECHO_FIRST", SUBTASK_ECHO_FIRST),
    Kind("LIST_NEEDS_USER", LIST_NEEDS_USER),
    Kind("NO_LIST_TASKS", NO_LIST_TASKS),
    Kind("EMPTY_LIST", EMPTY_LIST),
    Kind("DEDUPE_TTL_1S", A2A_SDK, deduplicate=True, lists_history=True, dedupe_ttl=1.0),
    Kind("DEDUPLICATING", A2A_SDK, deduplicate=True),
)
PLAIN = KINDS[0]

# What a caller ended with.
OWN = "own task"
WRONG = "wrong task"
MESSAGE = "a Message"
UNKNOWN = "OutcomeUnknown"
NO_TASK = "no task"


# --- what a door sends and reads --------------------------------------------------------------


def _message_id(body: bytes) -> str | None:
    """The messageId a JSON-RPC SendMessage body carries, if any."""
    try:
        parsed: Any = json.loads(body)
    except ValueError:
        return None
    params = parsed.get("params") if isinstance(parsed, dict) else None
    message = params.get("message") if isinstance(params, dict) else None
    value = message.get("messageId") if isinstance(message, dict) else None
    return value if isinstance(value, str) else None


_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


class _Tap(httpx.AsyncByteStream):
    """An answer's body, counted as the client reads it."""

    def __init__(self, stream: httpx.AsyncByteStream, meter: Meter, *, send: bool) -> None:
        self.stream = stream
        self.meter = meter
        self.send = send

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self.stream:
                if not self.send:
                    self.meter.read_bytes += len(chunk)
                yield chunk
        except httpx.TransportError as exc:
            self.meter.failed(exc, send=self.send)
            raise

    async def aclose(self) -> None:
        await self.stream.aclose()


class Meter(httpx.AsyncBaseTransport):
    """The transport under a door: counts its sends, their lost answers, its reads and bytes.

    Attributes:
        sends: send requests that went out (attempts, not logical sends).
        lost: sends whose answer never came (the request went out).
        reads: the other requests, by A2A operation.
        read_bytes: body bytes of the answers to reads, as they came off the wire.
    """

    def __init__(self, inner: httpx.AsyncBaseTransport | None = None) -> None:
        self.inner = inner if inner is not None else httpx.AsyncHTTPTransport()
        self.sends = 0
        self.lost = 0
        self.reads: Counter[str] = Counter()
        self.read_bytes = 0

    @property
    def requests(self) -> int:
        """Every request that went out, sends and reads."""
        return self.sends + sum(self.reads.values())

    def failed(self, exc: Exception, *, send: bool) -> None:
        """Count a send whose answer was lost (a refused connection sent nothing)."""
        if send and not isinstance(exc, _NOT_SENT):
            self.lost += 1

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` through the inner transport, counting it and its answer."""
        operation = operation_of(request)
        send = operation in SENDS
        if send:
            self.sends += 1
        else:
            self.reads[operation or "card"] += 1  # the one read here that is no A2A operation
        try:
            response = await self.inner.handle_async_request(request)
        except httpx.TransportError as exc:
            self.failed(exc, send=send)
            raise
        stream = response.stream
        assert isinstance(stream, httpx.AsyncByteStream)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_Tap(stream, self, send=send),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        """Close the inner transport."""
        await self.inner.aclose()


class Schedule:
    """Which answers are lost: attempt ``k`` of send ``i``, by a draw keyed on both only.

    Args:
        share: the share of attempts whose answer is lost.
        seed: the seed of the draws.
        attempts: only the first ``attempts`` attempts of a send may be lost (None: any).
    """

    def __init__(self, share: float, *, seed: int, attempts: int | None = None) -> None:
        self.share = share
        self.seed = seed
        self.attempts = attempts
        self.index: dict[str, int] = {}
        self.tries: Counter[str] = Counter()

    def expect(self, message_id: str, index: int) -> None:
        """Say that ``message_id`` is send ``index``."""
        self.index[message_id] = index

    def loses(self, message_id: str | None) -> bool:
        """Whether this attempt of the send of ``message_id`` loses its answer."""
        index = self.index.get(message_id or "")
        if message_id is None or index is None:
            return False
        attempt = self.tries[message_id]
        self.tries[message_id] += 1
        if self.attempts is not None and attempt >= self.attempts:
            return False
        return random.Random(f"{self.seed}/{self.share}/{index}/{attempt}").random() < self.share

    def plan(self, seen: Seen) -> str:
        """The proxy's plan: lose the answer of a send the schedule loses."""
        return "lose" if seen.is_send and self.loses(_message_id(seen.body)) else "forward"


# --- what a caller got ------------------------------------------------------------------------


@dataclass(slots=True)
class Row:
    """What one door did against one agent in one scenario.

    Attributes:
        part, door, kind, scenario: where it was measured.
        sends: logical sends.
        runs: executor runs of their messageIds; not_once: sends not run exactly once.
        tasks: tasks their runs made; two_tasks: sends that made two or more.
        outcomes: what the callers ended with (`OWN`, `WRONG`, `UNKNOWN`, ...), counted.
        lost: answers lost (attempts); requests: every request sent.
        reads: the requests that are not sends, by operation; read_bytes: their answers' bytes.
        seconds: the scenario's wall time.
        wants_got: whether the 99 % target applies.
    """

    part: str
    door: str
    kind: str
    scenario: str
    sends: int = 0
    runs: int = 0
    not_once: int = 0
    tasks: int = 0
    two_tasks: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    lost: int = 0
    requests: int = 0
    reads: Counter[str] = field(default_factory=Counter)
    read_bytes: int = 0
    seconds: float = 0.0
    wants_got: bool = False

    @property
    def got(self) -> float:
        """The share of callers that got their own task."""
        return self.outcomes[OWN] / self.sends if self.sends else 0.0

    def per_lost(self, value: float) -> float | None:
        """``value`` per answer lost (None when none was lost)."""
        return value / self.lost if self.lost else None

    def missed(self) -> list[str]:
        """The targets this row misses."""
        where = f"{self.part}, {self.door}, {self.kind}, {self.scenario}"
        missed = []
        if self.not_once:
            missed.append(
                f"{where}: {self.runs / self.sends:.3f} runs per send, {self.not_once} sends "
                "not run exactly once; target exactly 1.000"
            )
        if self.two_tasks or self.outcomes[WRONG]:
            missed.append(
                f"{where}: {self.two_tasks} sends made 2+ tasks, {self.outcomes[WRONG]} wrong "
                "tasks handed back; target none"
            )
        if self.wants_got and self.got < TARGET_GOT:
            missed.append(f"{where}: {self.got:.1%} got their task; target >= {TARGET_GOT:.0%}")
        return missed

    def json(self) -> dict[str, Any]:
        """The row as JSON."""
        return {
            "part": self.part,
            "door": self.door,
            "kind": self.kind,
            "scenario": self.scenario,
            "sends": self.sends,
            "runs_per_send": self.runs / self.sends if self.sends else None,
            "sends_not_run_once": self.not_once,
            "tasks_per_send": self.tasks / self.sends if self.sends else None,
            "sends_with_two_tasks": self.two_tasks,
            "wrong_tasks": self.outcomes[WRONG],
            "got_own_task": self.got,
            "outcomes": dict(self.outcomes),
            "answers_lost": self.lost,
            "reads": dict(self.reads),
            "read_bytes": self.read_bytes,
            "reads_per_lost_answer": self.per_lost(sum(self.reads.values())),
            "read_bytes_per_lost_answer": self.per_lost(self.read_bytes),
            "requests": self.requests,
            "target_got_applies": self.wants_got,
            "seconds": self.seconds,
            "missed": self.missed(),
        }


def _sdk_answer(events: list[Any]) -> tuple[str, str]:
    """What an a2a-sdk send ended with: ``("task", id)``, ``("message", "")`` or nothing."""
    answer = (NO_TASK, "")
    for event in events:
        payload = event.WhichOneof("payload")
        if payload == "task":
            answer = ("task", event.task.id)
        elif payload in ("status_update", "artifact_update"):
            answer = ("task", getattr(event, payload).task_id)
        elif payload == "message":
            answer = ("message", "")
    return answer


def _raw_answer(response: httpx.Response) -> tuple[str, str]:
    """What a raw JSON-RPC send ended with, as `_sdk_answer`."""
    body = response.json()
    result = body.get("result") if isinstance(body, dict) else None
    if not isinstance(result, dict):
        return (f"error answer {response.status_code}", "")
    if isinstance(result.get("task"), dict):
        return ("task", str(result["task"].get("id", "")))
    if "message" in result:
        return ("message", "")
    return (NO_TASK, "")


async def _outcome(peer: EmbeddedPeer, send: Send, message_id: str, text: str) -> str:
    """Send one message and judge what came back against the agent's ledger."""
    try:
        what, task_id = await send(message_id, text)
    except OutcomeUnknown:
        return UNKNOWN
    except Exception as exc:  # the caller's outcome: counted and shown, never hidden
        return f"raised {type(exc).__name__}"
    if what == "message":
        return MESSAGE
    if what != "task":
        return what
    return OWN if task_id in peer.ledger.tasks_started_by(message_id) else WRONG


def _tally(row: Row, peer: EmbeddedPeer, sent: list[str], meter: Meter) -> None:
    """Fill ``row`` with what the agent did for ``sent`` and what ``meter`` saw."""
    runs = peer.executions
    row.sends = len(sent)
    for message_id in sent:
        row.runs += runs[message_id]
        row.not_once += runs[message_id] != 1
        made = len(peer.ledger.tasks_started_by(message_id))
        row.tasks += made
        row.two_tasks += made > 1
    row.lost = meter.lost
    row.requests = meter.requests
    row.reads = Counter(meter.reads)
    row.read_bytes = meter.read_bytes


def _no_sleep(seconds: float) -> None:
    """The Guard's sleep where no real time is waited."""


def _sdk_request(message_id: str, text: str) -> a2a_pb2.SendMessageRequest:
    """A unary SendMessageRequest of one user message."""
    return a2a_pb2.SendMessageRequest(
        message=a2a_pb2.Message(
            message_id=message_id, role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text=text)]
        )
    )


def _raw_request(message_id: str, text: str) -> dict[str, Any]:
    """A JSON-RPC SendMessage of one user message."""
    return {
        "jsonrpc": "2.0",
        "id": message_id,
        "method": "SendMessage",
        "params": {
            "message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]}
        },
    }


@contextlib.asynccontextmanager
async def _door(
    door: str,
    peer: EmbeddedPeer,
    guard: Guard,
    meter: Meter,
    *,
    via: str | None = None,
    read_timeout: float = 10.0,
) -> AsyncIterator[Send]:
    """A sender through ``door`` to ``peer`` (through the origin ``via``), closed after use."""
    timeout = httpx.Timeout(30.0, read=read_timeout)
    if door == "guard_client":
        http = httpx.AsyncClient(transport=meter, timeout=timeout, headers=VERSION)
        config = ClientConfig(
            streaming=False,
            httpx_client=http,
            supported_protocol_bindings=[TransportProtocol.JSONRPC],
        )
        card = peer.agent_card if via is None else peer.via(via)
        client = guard_client(ClientFactory(config).create(card), guard)

        async def sdk_send(message_id: str, text: str) -> tuple[str, str]:
            request = _sdk_request(message_id, text)
            return _sdk_answer([event async for event in client.send_message(request)])

        try:
            yield sdk_send
        finally:
            await client.close()
            await http.aclose()
        return
    url = httpx.URL(peer.jsonrpc_url)
    if via is not None:
        origin = httpx.URL(via)
        url = url.copy_with(host=origin.host, port=origin.port)
    transport = AsyncGuardTransport(guard, meter, raise_failures=True)
    async with httpx.AsyncClient(transport=transport, timeout=timeout, headers=VERSION) as raw:

        async def raw_send(message_id: str, text: str) -> tuple[str, str]:
            return _raw_answer(await raw.post(url, json=_raw_request(message_id, text)))

        yield raw_send


# --- Part A: answers lost after the agent did the work --------------------------------------


async def _scheduled(
    row: Row, peer: EmbeddedPeer, door: str, schedule: Schedule, sends: int
) -> list[int]:
    """``sends`` sends through ``door``, answers lost by ``schedule``; bytes read per send.

    Fills ``row``. The ``guard_client`` door goes through a `LossyProxy`; the
    ``AsyncGuardTransport`` door over a `LosingTransport` (so that the card it reads is believed).
    """
    guard = Guard(sleep=_no_sleep)
    sent: list[str] = []
    read: list[int] = []
    with contextlib.ExitStack() as stack:
        if door == "guard_client":
            proxy = stack.enter_context(LossyProxy(peer.http_target, schedule.plan))
            meter, via = Meter(), proxy.url
        else:
            meter, via = Meter(LosingTransport(schedule.plan)), None
        started = time.perf_counter()
        async with _door(door, peer, guard, meter, via=via) as send:
            for index in range(sends):
                message_id = f"{row.part}-{uuid.uuid4()}"
                schedule.expect(message_id, index)
                sent.append(message_id)
                before = meter.read_bytes
                row.outcomes[await _outcome(peer, send, message_id, "hello")] += 1
                read.append(meter.read_bytes - before)
        row.seconds = time.perf_counter() - started
    _tally(row, peer, sent, meter)
    return read


async def _lost_answers(kind: Kind, door: str, share: float, sends: int, seed: int) -> Row:
    """``sends`` sends through ``door`` to a fresh agent, answers lost by the schedule."""
    row = Row("A", door, kind.name, f"{share:.0%} lost")
    row.wants_got = share == TARGET_AT and (kind.lists_history or kind.deduplicate)
    with kind.peer() as peer:
        await _scheduled(row, peer, door, Schedule(share, seed=seed), sends)
    return row


def part_a(kinds: Iterable[Kind], sends: int, seed: int) -> list[Row]:
    """Every kind, every share of lost answers, through both doors."""
    return [
        asyncio.run(_lost_answers(kind, door, share, sends, seed))
        for kind in kinds
        for share in LOST_SHARES
        for door in DOORS
    ]


# --- Part E: many concurrent senders -----------------------------------------------------------

CONCURRENT_KINDS = (PLAIN, KINDS[-1])  # a plain a2a-sdk agent, and a deduplicating one


async def _concurrent(kind: Kind, door: str, share: float, sends: int, run: Crowd) -> Row:
    """``sends`` sends at once (at most ``run.senders`` in flight), answers lost by schedule.

    One Guard for all of them, as an orchestrator has: one budget per peer, one look-up
    allowance, shared by every sender.
    """
    row = Row("E", door, kind.name, f"{run.senders} senders, {share:.0%} lost")
    row.wants_got = kind.lists_history or kind.deduplicate
    schedule = Schedule(share, seed=run.seed)
    guard = Guard(sleep=_no_sleep)
    sent: list[str] = []
    with kind.peer() as peer, contextlib.ExitStack() as stack:
        if door == "guard_client":
            proxy = stack.enter_context(LossyProxy(peer.http_target, schedule.plan))
            meter, via = Meter(), proxy.url
        else:
            meter, via = Meter(LosingTransport(schedule.plan)), None
        started = time.perf_counter()
        async with _door(door, peer, guard, meter, via=via) as send:
            gate = asyncio.Semaphore(run.senders)

            async def one(index: int) -> None:
                message_id = f"E-{uuid.uuid4()}"
                schedule.expect(message_id, index)
                sent.append(message_id)
                async with gate:
                    row.outcomes[await _outcome(peer, send, message_id, "hello")] += 1

            await asyncio.gather(*(one(index) for index in range(sends)))
        row.seconds = time.perf_counter() - started
        _tally(row, peer, sent, meter)
    return row


@dataclass(frozen=True, slots=True)
class Crowd:
    """The settings of Part E."""

    senders: int
    sends: int
    seed: int


def part_e(run: Crowd) -> list[Row]:
    """A plain and a deduplicating agent, many senders at once, both doors."""
    return [
        asyncio.run(_concurrent(kind, door, share, run.sends, run))
        for kind in CONCURRENT_KINDS
        for share in (TARGET_AT,)
        for door in DOORS
    ]


# --- Part F: agents no snapshot can prove empty -------------------------------------------------

FOREIGN = (
    ("lazy", False),
    ("own_id", False),
    ("own_id", True),
    ("compact", False),
    ("compact", True),
    ("skewed", False),
    ("naive", False),
    ("unstable", False),
    ("no_history", False),
    ("no_history", True),
)
"""The kinds of `tests.foreign`, each with and without a context of the message's own."""
SHOWN = {
    ("lazy", False),
    ("own_id", True),
    ("compact", True),
    ("skewed", False),
    ("naive", False),
    ("unstable", False),
    ("no_history", True),
}
"""Where the agent shows the message's task, within the deadline: the 99 % target applies."""
LAZY_WORK = 0.2
"""Seconds of the lazy agent's work, during which it lists nothing."""


@dataclass(frozen=True, slots=True)
class Foreign:
    """One row of Part F: the kind, whether the message has its own context, the door."""

    kind: str
    own: bool
    door: str
    share: float
    sends: int
    seed: int

    def guard(self) -> Guard:
        """The Guard: real time for the lazy agent (its work takes it), else a fake clock."""
        settings = ExactlyOnce(recheck_after=0.1, poll_max=0.5)
        if self.kind == "lazy":
            return Guard(deadline=10.0, exactly_once=settings)
        clock = FakeClock()  # the work is done when an answer is lost: no real pause needed
        return Guard(deadline=10.0, clock=clock, sleep=clock.sleep, exactly_once=settings)


def _fill(row: Row, agent: ForeignAgent, sent: list[str], meter: Meter) -> None:
    """Fill ``row`` with what ``agent`` did for ``sent`` and what ``meter`` saw."""
    row.sends = len(sent)
    for message_id in sent:
        runs = agent.runs.counts[message_id]
        made = len(agent.runs.made_by(message_id))
        row.runs += runs
        row.not_once += runs != 1
        row.tasks += made
        row.two_tasks += made > 1
    row.lost = meter.lost
    row.requests = meter.requests
    row.reads = Counter(meter.reads)
    row.read_bytes = meter.read_bytes


async def _judged(agent: ForeignAgent, sending: Awaitable[tuple[str, str]], message_id: str) -> str:
    """What one send to ``agent`` ended with, judged against what its runs made."""
    try:
        what, task_id = await sending
    except OutcomeUnknown:
        return UNKNOWN
    except Exception as exc:  # counted and shown, never hidden
        return f"raised {type(exc).__name__}"
    if what != "task":
        return MESSAGE if what == "message" else what
    return OWN if task_id in agent.runs.made_by(message_id) else WRONG


async def _foreign(case: Foreign) -> Row:
    """``sends`` sends to a fresh agent of the case's kind, answers lost by the schedule."""
    kind, own, door = case.kind, case.own, case.door
    name = f"{kind} (own context)" if own else kind
    row = Row("F", door, name, f"{case.share:.0%} lost")
    # a2a-sdk's client cannot read timestamps without an offset: guard_client cannot look.
    row.wants_got = (kind, own) in SHOWN and not (door == "guard_client" and kind == "naive")
    schedule = Schedule(case.share, seed=case.seed)
    guard = case.guard()
    sent: list[str] = []
    with ForeignAgent(kind, work=LAZY_WORK) as agent:
        lossy: httpx.AsyncBaseTransport
        if kind == "lazy":
            lossy = Abandoning(lambda body: schedule.loses(_message_id(body)))
        else:
            lossy = LosingTransport(schedule.plan)
        meter = Meter(lossy)
        started = time.perf_counter()
        if door == "guard_client":
            http = httpx.AsyncClient(transport=meter, timeout=30.0, headers=VERSION)
            config = ClientConfig(
                streaming=False,
                httpx_client=http,
                supported_protocol_bindings=[TransportProtocol.JSONRPC],
            )
            client = guard_client(ClientFactory(config).create(agent.card), guard)

            async def send(message_id: str, own_context: bool) -> tuple[str, str]:
                request = _sdk_request(message_id, "hello")
                if own_context:
                    request.message.context_id = message_id
                return _sdk_answer([event async for event in client.send_message(request)])

        else:
            transport = AsyncGuardTransport(guard, meter, raise_failures=True)
            http = httpx.AsyncClient(transport=transport, timeout=30.0, headers=VERSION)
            client = None

            async def send(message_id: str, own_context: bool) -> tuple[str, str]:
                body = _raw_request(message_id, "hello")
                if own_context:
                    body["params"]["message"]["contextId"] = message_id
                return _raw_answer(await http.post(agent.url, json=body))

        try:
            for index in range(case.sends):
                message_id = f"F-{uuid.uuid4()}"
                schedule.expect(message_id, index)
                sent.append(message_id)
                row.outcomes[await _judged(agent, send(message_id, own), message_id)] += 1
        finally:
            if client is not None:
                await client.close()
            await http.aclose()
            await meter.aclose()
        row.seconds = time.perf_counter() - started
        _fill(row, agent, sent, meter)
    return row


def part_f(sends: int, seed: int) -> list[Row]:
    """Every kind of `tests.foreign`, every share of lost answers, through both doors."""
    return [
        asyncio.run(_foreign(Foreign(kind, own, door, share, sends, seed)))
        for kind, own in FOREIGN
        for share in LOST_SHARES
        for door in DOORS
    ]


# --- Part B: long sends lost to a read timeout ----------------------------------------------


class Releaser:
    """A thread that releases each held run ``after`` real seconds after it first saw it held.

    Args:
        peers: the agents whose held runs it watches.
        after: seconds from the first sight of a held run to its release.
        tick: seconds between two looks at the held runs.
    """

    def __init__(self, peers: list[EmbeddedPeer], after: float, tick: float = 0.01) -> None:
        self.peers = peers
        self.after = after
        self.tick = tick
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-releaser", daemon=True)

    def __enter__(self) -> Releaser:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        """Look at the held runs every tick; release the ones held long enough."""
        first_seen: dict[tuple[int, str], float] = {}
        while not self._stop.wait(self.tick):
            now = time.monotonic()
            for number, peer in enumerate(self.peers):
                for message_id in peer.ledger.held():
                    if now - first_seen.setdefault((number, message_id), now) >= self.after:
                        peer.release(message_id)


@dataclass(frozen=True, slots=True)
class LongRun:
    """The settings of Part B."""

    sends: int
    read_timeout: float
    hold: float
    seed: int


async def _long_sends(
    kind: Kind, peer: EmbeddedPeer, non_blocking: bool, share: float, run: LongRun
) -> Row:
    """``run.sends`` sends to ``peer``, a seeded ``share`` of them held past the read timeout."""
    mode = "non-blocking" if non_blocking else "blocking"
    row = Row("B", "guard_client", kind.name, f"{mode}, {share:.0%} long")
    finds = kind.makes_tasks if non_blocking else kind.lists_history or kind.deduplicate
    row.wants_got = share == TARGET_AT and finds
    settings = ExactlyOnce(
        non_blocking=non_blocking, poll_initial=0.05, poll_max=0.2, recheck_after=0.1
    )
    guard = Guard(exactly_once=settings, random=random.Random(run.seed).random)
    meter = Meter()
    sent: list[str] = []
    started = time.perf_counter()
    async with _door("guard_client", peer, guard, meter, read_timeout=run.read_timeout) as send:
        for index in range(run.sends):
            long = random.Random(f"{run.seed}/long/{share}/{index}").random() < share
            message_id = f"b-{uuid.uuid4()}"
            sent.append(message_id)
            row.outcomes[await _outcome(peer, send, message_id, HOLD if long else "hello")] += 1
    row.seconds = time.perf_counter() - started
    _tally(row, peer, sent, meter)
    return row


async def _side_by_side(
    cases: list[tuple[Kind, EmbeddedPeer, bool]], share: float, run: LongRun
) -> list[Row]:
    """Every case of one share at once, each against its own agent."""
    return list(
        await asyncio.gather(
            *(
                _long_sends(kind, peer, non_blocking, share, run)
                for kind, peer, non_blocking in cases
            )
        )
    )


def part_b(kinds: Iterable[Kind], run: LongRun) -> list[Row]:
    """Every kind, blocking and non-blocking, side by side, each against its own agent."""
    rows = []
    for share in LONG_SHARES:
        with contextlib.ExitStack() as stack:
            cases = [
                (kind, stack.enter_context(kind.peer()), non_blocking)
                for kind in kinds
                for non_blocking in (False, True)
            ]
            stack.enter_context(Releaser([peer for _, peer, _ in cases], run.hold))
            rows += asyncio.run(_side_by_side(cases, share, run))
    return rows


# --- Part C: a busy agent ---------------------------------------------------------------------


@dataclass(slots=True)
class BusyRow:
    """The look-ups of one door on the busy agent."""

    door: str
    tasks_held: int
    row: Row
    per_lookup: list[int]
    """Bytes of the reads of each look-up (each send has one)."""

    def missed(self) -> list[str]:
        """The targets this door misses."""
        missed = self.row.missed()
        if max(self.per_lookup) > TARGET_LOOKUP_BYTES:
            missed.append(
                f"C, {self.door}: {max(self.per_lookup) / 1024:.1f} KiB read by one look-up; "
                f"target <= {TARGET_LOOKUP_BYTES // 1024} KiB"
            )
        return missed

    def json(self) -> dict[str, Any]:
        """The row as JSON."""
        return {
            **self.row.json(),
            "tasks_held": self.tasks_held,
            "bytes_per_lookup": self.per_lookup,
            "missed": self.missed(),
        }


async def _busy(door: str, busy_tasks: int, sends: int, seed: int) -> BusyRow:
    """``sends`` sends, each first answer lost, to a plain agent holding large tasks."""
    row = Row("C", door, PLAIN.name, f"{busy_tasks} tasks of {ARTIFACT_BYTES // 1024} KiB")
    with PLAIN.peer() as peer:
        peer.fill(busy_tasks, artifact_bytes=ARTIFACT_BYTES)
        schedule = Schedule(1.0, seed=seed, attempts=1)
        per_lookup = await _scheduled(row, peer, door, schedule, sends)
    return BusyRow(door, busy_tasks, row, per_lookup)


def part_c(busy_tasks: int, sends: int, seed: int) -> list[BusyRow]:
    """Both doors' look-ups on a busy agent."""
    return [asyncio.run(_busy(door, busy_tasks, sends, seed)) for door in DOORS]


# --- Part D: a full outage ----------------------------------------------------------------------


def _drop(seen: Seen) -> str:
    """The proxy's plan in an outage: nothing reaches the agent."""
    return "drop"


@dataclass(slots=True)
class OutageRow:
    """What one door sent under a full outage, once the budget was spent."""

    door: str
    warmup: int
    calls: int
    warmup_requests: int = 0
    requests: int = 0
    sends: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    agent_runs: int = 0

    @property
    def per_call(self) -> float:
        """Requests (sends and reads) per counted call."""
        return self.requests / self.calls

    def missed(self) -> list[str]:
        """The target this door misses."""
        if self.per_call <= TARGET_OUTAGE:
            return []
        return [
            f"D, {self.door}: {self.per_call:.2f} requests per call once the budget is spent; "
            f"target <= {TARGET_OUTAGE}"
        ]

    def json(self) -> dict[str, Any]:
        """The row as JSON."""
        return {
            "part": "D",
            "door": self.door,
            "warmup_calls": self.warmup,
            "warmup_requests": self.warmup_requests,
            "calls": self.calls,
            "requests_per_call": self.per_call,
            "sends_per_call": self.sends / self.calls,
            "reads_per_call": (self.requests - self.sends) / self.calls,
            "outcomes": dict(self.outcomes),
            "agent_runs": self.agent_runs,
            "missed": self.missed(),
        }


async def _outage(door: str, warmup: int, calls: int) -> OutageRow:
    """Requests per call once the Guard's default budget is spent, every request dropped."""
    clock = FakeClock()
    guard = Guard(clock=clock, sleep=clock.sleep)
    meter = Meter()
    row = OutageRow(door, warmup, calls)
    with PLAIN.peer() as peer, LossyProxy(peer.http_target, _drop) as proxy:
        async with _door(door, peer, guard, meter, via=proxy.url) as send:
            before = (0, 0)
            for index in range(warmup + calls):
                if index == warmup:
                    before = (meter.requests, meter.sends)
                try:
                    await send(f"d-{uuid.uuid4()}", "hello")
                    outcome = "answered"
                except Exception as exc:  # every call should fail: what it raised is the result
                    outcome = type(exc).__name__
                if index >= warmup:
                    row.outcomes[outcome] += 1
        row.agent_runs = sum(peer.executions.values())
    row.warmup_requests = before[0]
    row.requests = meter.requests - before[0]
    row.sends = meter.sends - before[1]
    return row


def part_d(warmup: int, calls: int) -> list[OutageRow]:
    """Both doors under a full outage."""
    return [asyncio.run(_outage(door, warmup, calls)) for door in DOORS]


# --- the report ---------------------------------------------------------------------------------


def _of(figures: dict[str, Any], part: str) -> list[dict[str, Any]]:
    """The rows of one part, in the order they ran."""
    return [row for row in figures["rows"] if row["part"] == part]


def _pick(rows: list[dict[str, Any]], **where: str) -> dict[str, Any] | None:
    """The one row whose fields hold these values, if it ran."""
    return next((r for r in rows if all(r[k] == v for k, v in where.items())), None)


def _share(row: dict[str, Any] | None) -> str:
    return "-" if row is None else f"{row['got_own_task']:.1%}"


def _per_lost(row: dict[str, Any] | None, key: str, scale: float = 1.0, digits: int = 2) -> str:
    value = None if row is None else row[key]
    return "-" if value is None else f"{value / scale:.{digits}f}"


def _worst_runs(rows: list[dict[str, Any]]) -> str:
    return f"{max(r['runs_per_send'] for r in rows):.3f}"


def _kinds(rows: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(r["kind"] for r in rows))


def markdown(figures: dict[str, Any]) -> list[str]:
    """Part A and B by kind of agent; Part C and D by door."""
    a, b = _of(figures, "A"), _of(figures, "B")
    shares = [f"{share:.0%} lost" for share in LOST_SHARES]
    at = f"{TARGET_AT:.0%} lost"
    each = each_lost = " / ".join(f"{share:.0%}" for share in LOST_SHARES) + " lost"
    lines = ["Answers lost after the agent did the work (Part A):", ""]
    lines += table(
        [
            "kind",
            "runs per send (worst)",
            "wrong tasks",
            f"own task, guard_client ({each})",
            "own task, AsyncGuardTransport (same)",
            f"reads per lost answer ({at}, guard_client / AsyncGuardTransport)",
            "KiB per lost answer (same)",
        ],
        (
            [
                f"`{kind}`",
                _worst_runs(rows),
                sum(r["wrong_tasks"] for r in rows),
                *(
                    " / ".join(_share(_pick(rows, door=door, scenario=s)) for s in shares)
                    for door in DOORS
                ),
                " / ".join(
                    _per_lost(_pick(rows, door=door, scenario=at), "reads_per_lost_answer")
                    for door in DOORS
                ),
                " / ".join(
                    _per_lost(
                        _pick(rows, door=door, scenario=at), "read_bytes_per_lost_answer", 1024, 1
                    )
                    for door in DOORS
                ),
            ]
            for kind in _kinds(a)
            for rows in [[r for r in a if r["kind"] == kind]]
        ),
    )
    long = [f"{share:.0%} long" for share in LONG_SHARES]
    each = " / ".join(f"{share:.0%}" for share in LONG_SHARES) + " long"
    lines += ["", "Long sends lost to a read timeout, blocking or not (Part B, guard_client):", ""]
    lines += table(
        [
            "kind",
            f"own task, blocking ({each})",
            "own task, non-blocking (same)",
            "runs per send (worst)",
        ],
        (
            [
                f"`{kind}`",
                *(
                    " / ".join(_share(_pick(rows, scenario=f"{mode}, {s}")) for s in long)
                    for mode in ("blocking", "non-blocking")
                ),
                _worst_runs(rows),
            ]
            for kind in _kinds(b)
            for rows in [[r for r in b if r["kind"] == kind]]
        ),
    )
    crowd = _of(figures, "E")
    if crowd:
        lines += ["", "Many senders at once, one Guard, answers lost (Part E):", ""]
        lines += table(
            [
                "kind",
                "door",
                "scenario",
                "runs per send (worst)",
                "own task",
                "OutcomeUnknown",
                "reads per lost answer",
                "KiB per lost answer",
            ],
            (
                [
                    f"`{r['kind']}`",
                    r["door"],
                    r["scenario"],
                    _worst_runs([r]),
                    _share(r),
                    f"{r['outcomes'].get(UNKNOWN, 0) / max(r['sends'], 1):.1%}",
                    _per_lost(r, "reads_per_lost_answer"),
                    _per_lost(r, "read_bytes_per_lost_answer", 1024, 1),
                ]
                for r in crowd
            ),
        )
    foreign = _of(figures, "F")
    if foreign:
        lines += [
            "",
            "Agents no snapshot can prove empty, answers lost after they got the message "
            "(Part F, `tests.foreign`):",
            "",
        ]
        lines += table(
            [
                "kind",
                "runs per send (worst)",
                "wrong tasks",
                f"own task, guard_client ({each_lost})",
                "own task, AsyncGuardTransport (same)",
                f"reads per lost answer ({at}, guard_client / AsyncGuardTransport)",
                "99 % target",
            ],
            (
                [
                    f"`{kind}`",
                    _worst_runs(rows),
                    sum(r["wrong_tasks"] for r in rows),
                    *(
                        " / ".join(_share(_pick(rows, door=door, scenario=s)) for s in shares)
                        for door in DOORS
                    ),
                    " / ".join(
                        _per_lost(_pick(rows, door=door, scenario=at), "reads_per_lost_answer")
                        for door in DOORS
                    ),
                    " / ".join(
                        "yes"
                        if any(r["target_got_applies"] for r in rows if r["door"] == d)
                        else "no"
                        for d in DOORS
                    ),
                ]
                for kind in _kinds(foreign)
                for rows in [[r for r in foreign if r["kind"] == kind]]
            ),
        )
    lines += ["", "A busy agent, each send's first answer lost and looked up (Part C):", ""]
    lines += table(
        [
            "door",
            "tasks held",
            "look-ups",
            "runs per send",
            "own task",
            "reads per look-up",
            "KiB per look-up (max)",
            "KiB per look-up (mean)",
        ],
        (
            [
                r["door"],
                r["tasks_held"],
                r["answers_lost"],
                f"{r['runs_per_send']:.3f}",
                f"{r['got_own_task']:.1%}",
                _per_lost(r, "reads_per_lost_answer"),
                f"{max(r['bytes_per_lookup']) / 1024:.1f}",
                f"{sum(r['bytes_per_lookup']) / len(r['bytes_per_lookup']) / 1024:.1f}",
            ]
            for r in _of(figures, "C")
        ),
    )
    lines += ["", "A full outage, every request dropped, once the budget is spent (Part D):", ""]
    lines += table(
        [
            "door",
            "warm-up requests",
            "requests per call",
            "sends per call",
            "reads per call",
            "callers raised",
            "agent runs",
        ],
        (
            [
                r["door"],
                r["warmup_requests"],
                f"{r['requests_per_call']:.2f}",
                f"{r['sends_per_call']:.2f}",
                f"{r['reads_per_call']:.2f}",
                ", ".join(f"{n} {name}" for name, n in r["outcomes"].items()),
                r["agent_runs"],
            ]
            for r in _of(figures, "D")
        ),
        "lrrrrlr",
    )
    return lines


def targets(figures: dict[str, Any]) -> list[Target]:
    """One task per send, no wrong task, callers served, look-ups bounded, outages cheap."""
    sends = [r for r in figures["rows"] if r["part"] in ("A", "B", "C", "E", "F")]
    not_once = sum(r["sends_not_run_once"] for r in sends)
    two = sum(r["sends_with_two_tasks"] for r in sends)
    wrong = sum(r["wrong_tasks"] for r in sends)
    found = [
        Target(
            "exactly one run and one task per logical send, on every kind of agent",
            f"{not_once} sends not run once, {two} with two tasks",
            not_once == 0 and two == 0,
        ),
        Target("never a wrong task handed back", f"{wrong} wrong tasks", wrong == 0),
    ]
    served = [r for r in sends if r["target_got_applies"]]
    if served:
        worst = min(served, key=lambda r: r["got_own_task"])
        found.append(
            Target(
                f"≥ {TARGET_GOT:.0%} of callers get their task where the agent lists tasks with"
                " history, answers non-blocking sends, or deduplicates",
                f"{worst['got_own_task']:.1%} at worst ({worst['kind']}, {worst['door']},"
                f" {worst['scenario']})",
                worst["got_own_task"] >= TARGET_GOT,
            )
        )
    busy = _of(figures, "C")
    if busy:
        most = max(max(r["bytes_per_lookup"]) for r in busy)
        found.append(
            Target(
                f"a look-up reads ≤ {TARGET_LOOKUP_BYTES // 1024} KiB on a busy agent",
                f"{most / 1024:.1f} KiB at most",
                most <= TARGET_LOOKUP_BYTES,
            )
        )
    outage = _of(figures, "D")
    if outage:
        most = max(r["requests_per_call"] for r in outage)
        found.append(
            Target(
                f"a full outage: ≤ {TARGET_OUTAGE} requests per call once the budget is spent,"
                " look-ups included",
                f"{most:.2f} at most",
                most <= TARGET_OUTAGE,
            )
        )
    return found


def _version(name: str) -> str:
    """The installed version of distribution ``name``."""
    from importlib.metadata import version  # noqa: PLC0415

    return version(name)


def main(argv: list[str] | None = None) -> int:
    """Run the four parts; print the tables (or JSON); exit 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sends", type=int, default=200, help="logical sends per row of part A")
    parser.add_argument("--long-sends", type=int, default=60, help="sends per row of part B")
    parser.add_argument("--read-timeout", type=float, default=0.5, help="part B, seconds")
    parser.add_argument("--hold", type=float, default=0.8, help="part B: seconds work is held")
    parser.add_argument("--busy-tasks", type=int, default=200, help="part C: tasks the agent holds")
    parser.add_argument("--busy-sends", type=int, default=10, help="part C: look-ups per door")
    parser.add_argument("--outage-warmup", type=int, default=50, help="part D: uncounted calls")
    parser.add_argument("--outage-calls", type=int, default=200, help="part D: counted calls")
    parser.add_argument("--senders", type=int, default=200, help="part E: senders at once")
    parser.add_argument("--crowd-sends", type=int, default=600, help="part E: sends per row")
    parser.add_argument("--foreign-sends", type=int, default=60, help="part F: sends per row")
    parser.add_argument("--seed", type=int, default=7)
    add_json_option(parser)
    args = parser.parse_args(argv)
    if min(args.sends, args.long_sends, args.busy_sends, args.outage_calls, args.senders) < 1:
        parser.error("--sends, --long-sends, --busy-sends and --outage-calls must be at least 1")
    if min(args.busy_tasks, args.outage_warmup) < 0 or args.hold <= args.read_timeout:
        parser.error("counts must not be negative, and --hold must exceed --read-timeout")
    logging.disable(logging.WARNING)  # a warning per unknown outcome is the point, not the output
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    a = part_a(KINDS, args.sends, args.seed)
    seconds["A"], started = time.perf_counter() - started, time.perf_counter()
    b = part_b(KINDS, LongRun(args.long_sends, args.read_timeout, args.hold, args.seed))
    seconds["B"], started = time.perf_counter() - started, time.perf_counter()
    c = part_c(args.busy_tasks, args.busy_sends, args.seed)
    seconds["C"], started = time.perf_counter() - started, time.perf_counter()
    d = part_d(args.outage_warmup, args.outage_calls)
    seconds["D"], started = time.perf_counter() - started, time.perf_counter()
    e = part_e(Crowd(args.senders, args.crowd_sends, args.seed))
    seconds["E"], started = time.perf_counter() - started, time.perf_counter()
    f = part_f(args.foreign_sends, args.seed)
    seconds["F"] = time.perf_counter() - started
    rows: list[Row | BusyRow | OutageRow] = [*a, *b, *c, *d, *e, *f]
    missed = [line for row in rows for line in row.missed()]
    figures = {
        "a2a_sdk": _version("a2a-sdk"),
        "seed": args.seed,
        "seconds": seconds,
        "rows": [row.json() for row in rows],
        "missed": missed,
    }
    if not emit(args.json, figures):
        took = ", ".join(f"{part} {value:.0f} s" for part, value in seconds.items())
        heading = (
            f"Python {sys.version.split()[0]}, a2a-sdk {figures['a2a_sdk']}, JSON-RPC on"
            f" 127.0.0.1; seed {args.seed}; ran in {sum(seconds.values()):.0f} s ({took})"
        )
        show(heading, markdown(figures), targets(figures))
        for line in missed:
            print(f"  {line}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
