"""Exactly-once sends: tasks per logical send when answers are lost, guard vs tenacity vs none.

A real a2a-sdk agent (`EmbeddedPeer`, on 127.0.0.1) sits behind a `LossyProxy` (a TCP proxy on
127.0.0.1) that, by a seeded schedule, either loses the answer of a SendMessage after the agent
made its task and answered in full (mode ``lose``: the client's connection is closed without a
byte), or drops the request before it reaches the agent (mode ``drop``). Each client sends
``--sends`` messages one after the other, each with its own messageId, through a2a-sdk's own
client (``ClientFactory``, non-streaming SendMessage) on each of ``--bindings`` (JSON-RPC and
HTTP+JSON by default):

* ``guard``: ``guard_client(client, Guard(sleep=<no sleep>))``: an attempt whose answer is lost
  is looked up (ListTasks, messageId in the history) before anything is resent;
* ``tenacity``: ``AsyncRetrying(stop=stop_after_attempt(3), retry=retry_if_exception_type(
  Exception))`` around the same ``send_message`` with the same request (same messageId), no
  wait: the retry most code writes by hand;
* ``none``: one attempt.

The schedule is the same for the three clients: whether attempt ``k`` of send ``i`` is lost is
drawn from ``random.Random(f"{seed}/{mode}/{share}/{i}/{k}")``, so it depends neither on the
client nor on how many attempts the client made before. Each (scenario, client) pair runs
against a fresh agent, so the tasks one client made never stand in another's look-up.

Counted, per client and scenario: tasks the agent made per logical send (its task store,
`EmbeddedPeer.task_ids`, each task attributed to a send by the messageId in its history);
sends that made more than one task; the share of sends for which the caller got its task (it
received a task whose id is one the agent made for that message); the share that raised.
Targets (design card): exactly 1.000 task per send for the guard whatever is lost, and at least
99 % of sends give the caller its task at 30 % lost answers. The script exits 1 when the guard
misses either.

Then the latency of a guarded send (medians and p95, real sleeps, the backoff's jitter drawn
as 0 so that only the look-up's own pause is waited): with nothing lost; with its first answer
lost (one ListTasks finds the task); with its first request dropped (ListTasks, the pause of
``ExactlyOnce.recheck_after``, ListTasks again, then the resend), with the default pause
(0.5 s) and with ``recheck_after=0.05``. The agent holds ``--agent-tasks`` other tasks first
(a full ListTasks page, by default), so that a look-up reads what it would on a busy agent.

    python bench/bench_exactly_once.py [--sends 200] [--latency-sends 40] [--agent-tasks 100]
        [--bindings jsonrpc,rest] [--seed 7] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import logging
import random
import statistics
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx
import tenacity
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2
from a2a.utils.constants import TransportProtocol

from a2a_client_errors import Guard
from a2a_client_errors.integrations.a2a_sdk import guard_client
from a2a_client_errors.lookup import ExactlyOnce
from a2a_client_errors.testing.lossy import LossyProxy, Seen
from a2a_client_errors.testing.peer import EmbeddedPeer

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

SCENARIOS: tuple[tuple[str, float], ...] = (
    ("lose", 0.0),
    ("lose", 0.1),
    ("lose", 0.3),
    ("drop", 0.3),
)
CLIENTS = ("guard", "tenacity", "none")
TARGET_TASKS = 1.0
TARGET_GOT = 0.99
TARGET_AT = ("lose", 0.3)
BINDINGS = {"jsonrpc": TransportProtocol.JSONRPC, "rest": TransportProtocol.HTTP_JSON}
BINDING_NAMES = {"jsonrpc": "JSON-RPC", "rest": "HTTP+JSON"}


# --- the schedule -------------------------------------------------------------------------------


def _message_id(seen: Seen) -> str | None:
    """The messageId a SendMessage request carries (JSON-RPC or HTTP+JSON body)."""
    try:
        body: Any = json.loads(seen.body)
    except ValueError:
        return None
    if isinstance(body, dict) and "params" in body:
        body = body["params"]
    message = body.get("message") if isinstance(body, dict) else None
    if not isinstance(message, dict):
        return None
    value = message.get("messageId", message.get("message_id"))
    return value if isinstance(value, str) else None


class Schedule:
    """Lose (or drop) attempt ``k`` of send ``i`` by a draw keyed on ``(seed, i, k)`` only.

    The same sends lose the same attempts whoever sends them and however many attempts came
    before; a request that is not a send (a look-up) is always forwarded. ``reached`` holds the
    messageIds of which at least one attempt reached the agent (forwarded or its answer lost).
    """

    def __init__(self, share: float, *, seed: int, mode: str) -> None:
        self.share = share
        self.seed = seed
        self.mode = mode
        self.attempts: Counter[str] = Counter()
        self.reached: set[str] = set()

    def __call__(self, seen: Seen) -> str:
        """What the proxy does with one request."""
        if not seen.is_send:
            return "forward"
        message_id = _message_id(seen) or ""
        attempt = self.attempts[message_id]
        self.attempts[message_id] += 1
        index = message_id.rsplit("-", 1)[-1]
        key = f"{self.seed}/{self.mode}/{self.share}/{index}/{attempt}"
        action = self.mode if random.Random(key).random() < self.share else "forward"
        if action != "drop":
            self.reached.add(message_id)
        return action


def first_attempt_plan(mode: str) -> Callable[[Seen], str]:
    """Lose (or drop) the first attempt of every send whose messageId starts with "lat-"."""
    seen_ids: set[str] = set()

    def plan(seen: Seen) -> str:
        if not seen.is_send:
            return "forward"
        message_id = _message_id(seen) or ""
        if not message_id.startswith("lat-") or message_id in seen_ids:
            return "forward"
        seen_ids.add(message_id)
        return mode

    return plan


# --- clients ------------------------------------------------------------------------------------


def _request(message_id: str) -> a2a_pb2.SendMessageRequest:
    return a2a_pb2.SendMessageRequest(
        message=a2a_pb2.Message(
            message_id=message_id, role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text="hello")]
        )
    )


async def _events(client: Any, request: a2a_pb2.SendMessageRequest) -> list[Any]:
    return [event async for event in client.send_message(request)]


def _sdk_client(card: Any, http: httpx.AsyncClient, binding: str = "jsonrpc") -> Any:
    config = ClientConfig(
        streaming=False,
        httpx_client=http,
        supported_protocol_bindings=[BINDINGS[binding]],
    )
    return ClientFactory(config).create(card)


def _no_sleep(seconds: float) -> None:
    """The Guard's sleep in the counting runs: no real time is waited."""


def _sender(name: str, client: Any) -> Callable[[a2a_pb2.SendMessageRequest], Awaitable[Any]]:
    """How client ``name`` sends one message: the events it receives, or it raises."""
    if name == "guard":
        guarded = guard_client(client, Guard(sleep=_no_sleep))
        return lambda request: _events(guarded, request)
    if name == "tenacity":

        async def with_tenacity(request: a2a_pb2.SendMessageRequest) -> list[Any]:
            retrying = tenacity.AsyncRetrying(
                stop=tenacity.stop_after_attempt(3),
                retry=tenacity.retry_if_exception_type(Exception),
                wait=tenacity.wait_none(),
                reraise=True,
            )
            return await retrying(_events, client, request)

        return with_tenacity
    return lambda request: _events(client, request)


def _task_id(events: list[Any]) -> str | None:
    for event in events:
        if event.HasField("task"):
            return str(event.task.id)
        if event.HasField("status_update"):
            return str(event.status_update.task_id)
    return None


async def _tasks_by_message(peer: EmbeddedPeer) -> dict[str, set[str]]:
    """The tasks the agent holds, by the messageIds in their histories (read from the agent)."""
    async with httpx.AsyncClient(timeout=30, headers={"A2A-Version": "1.0"}) as http:
        client = _sdk_client(peer.agent_card, http)
        made: dict[str, set[str]] = defaultdict(set)
        token = ""
        try:
            while True:
                page = await client.list_tasks(
                    a2a_pb2.ListTasksRequest(page_size=100, page_token=token)
                )
                for task in page.tasks:
                    for message in task.history:
                        made[message.message_id].add(task.id)
                token = page.next_page_token
                if not token:
                    return made
        finally:
            await client.close()


# --- counting -------------------------------------------------------------------------------


@dataclass(slots=True)
class Count:
    """What one client did in one scenario."""

    binding: str
    scenario: str
    client: str
    sends: int
    reached: int = 0
    tasks: int = 0
    duplicated: int = 0
    got: int = 0
    raised: int = 0
    wrong: int = 0
    raised_as: Counter[str] = field(default_factory=Counter)
    proxy: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def tasks_per_reached(self) -> float:
        """Tasks per send of which at least one attempt reached the agent."""
        return self.tasks / self.reached if self.reached else 0.0

    @property
    def exactly_once(self) -> bool:
        """Every send that reached the agent made exactly one task, no send made two."""
        return not self.duplicated and self.tasks == self.reached

    def row(self) -> dict[str, Any]:
        """The row as JSON."""
        return {
            "binding": self.binding,
            "scenario": self.scenario,
            "client": self.client,
            "sends": self.sends,
            "reached_the_agent": self.reached,
            "tasks": self.tasks,
            "tasks_per_send": self.tasks / self.sends,
            "tasks_per_send_reaching_the_agent": self.tasks_per_reached,
            "sends_with_two_tasks_or_more": self.duplicated,
            "got_its_task": self.got / self.sends,
            "raised": self.raised / self.sends,
            "answered_without_its_task": self.wrong,
            "raised_as": dict(self.raised_as),
            "proxy": self.proxy,
            "seconds": self.seconds,
        }


def _scenario_name(mode: str, share: float) -> str:
    return f"{mode} {share:.0%}"


async def _count(
    peer: EmbeddedPeer,
    proxy: LossyProxy,
    schedule: Schedule,
    *,
    binding: str,
    name: str,
    sends: int,
) -> Count:
    count = Count(binding, _scenario_name(schedule.mode, schedule.share), name, sends)
    before = set(peer.task_ids())
    received: dict[str, str | None] = {}
    started = time.perf_counter()
    async with httpx.AsyncClient(timeout=10, headers={"A2A-Version": "1.0"}) as http:
        client = _sdk_client(peer.via(proxy.url), http, binding)
        send = _sender(name, client)
        try:
            for i in range(sends):
                message_id = f"send-{i}"
                try:
                    received[message_id] = _task_id(await send(_request(message_id)))
                except Exception as exc:  # the caller's outcome: counted, not hidden
                    count.raised += 1
                    count.raised_as[type(exc).__name__] += 1
        finally:
            await client.close()
    count.seconds = time.perf_counter() - started
    made = await _tasks_by_message(peer)
    new = set(peer.task_ids()) - before
    count.tasks = len(new)
    attributed = set().union(*made.values()) if made else set()
    assert new <= attributed, "a task the agent made names no messageId of this run"
    count.duplicated = sum(len(ids) > 1 for ids in made.values())
    for message_id, task_id in received.items():
        if task_id is not None and task_id in made.get(message_id, ()):
            count.got += 1
        else:
            count.wrong += 1
    count.proxy = dict(proxy.counts)
    count.reached = len(schedule.reached)
    return count


def count_all(bindings: list[str], sends: int, seed: int) -> list[Count]:
    """Every client in every scenario, each against a fresh agent behind a fresh proxy."""
    counts = []
    for binding, (mode, share), name in itertools.product(bindings, SCENARIOS, CLIENTS):
        schedule = Schedule(share, seed=seed, mode=mode)
        with (
            EmbeddedPeer(streaming=False) as peer,
            LossyProxy(peer.http_target, schedule) as proxy,
        ):
            count = asyncio.run(
                _count(peer, proxy, schedule, binding=binding, name=name, sends=sends)
            )
        counts.append(count)
    return counts


# --- latency --------------------------------------------------------------------------------

LATENCY_CASES: tuple[tuple[str, str, float], ...] = (
    # (case, what the proxy does to the first attempt of a timed lossy send, recheck_after)
    ("answer lost: found by one look-up", "lose", 0.5),
    ("request dropped: two looks + resend, recheck_after=0.5 (default)", "drop", 0.5),
    ("request dropped: two looks + resend, recheck_after=0.05", "drop", 0.05),
)


async def _latencies(
    peer: EmbeddedPeer,
    proxy: LossyProxy,
    *,
    binding: str,
    recheck_after: float,
    sends: int,
    agent_tasks: int,
) -> tuple[list[float], list[float]]:
    """Seconds per guarded send: clean ones and lossy ones, taking turns send by send."""
    async with httpx.AsyncClient(timeout=10, headers={"A2A-Version": "1.0"}) as http:
        client = _sdk_client(peer.via(proxy.url), http, binding)
        guard = Guard(random=lambda: 0.0, exactly_once=ExactlyOnce(recheck_after=recheck_after))
        guarded = guard_client(client, guard)
        try:
            for i in range(agent_tasks):  # the agent's other work, in the look-up's window
                await _events(guarded, _request(f"other-{i}"))
            samples: dict[str, list[float]] = {"clean": [], "lat": []}
            for i in range(sends):
                for kind in ("clean", "lat") if i % 2 else ("lat", "clean"):
                    request = _request(f"{kind}-{i}")
                    start = time.perf_counter()
                    events = await _events(guarded, request)
                    samples[kind].append(time.perf_counter() - start)
                    assert _task_id(events), "a guarded send came back without its task"
            return samples["clean"], samples["lat"]
        finally:
            await client.close()


def _stats(
    binding: str, case: str, samples: list[float], recheck_after: float | None
) -> dict[str, Any]:
    ordered = sorted(samples)
    return {
        "binding": binding,
        "case": case,
        "sends": len(ordered),
        "recheck_after_s": recheck_after,
        "median_ms": statistics.median(ordered) * 1e3,
        "p95_ms": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1e3,
    }


def latency_all(binding: str, sends: int, agent_tasks: int) -> list[dict[str, Any]]:
    """The guard's latency on the clean and the recovered paths, each case on a fresh agent.

    Every other timed send has its first attempt lost (or dropped); the clean sends of all
    cases are pooled into the "no loss" row.
    """
    clean: list[float] = []
    rows = []
    for case, mode, recheck_after in LATENCY_CASES:
        with (
            EmbeddedPeer(streaming=False) as peer,
            LossyProxy(peer.http_target, first_attempt_plan(mode)) as proxy,
        ):
            clean_here, lossy = asyncio.run(
                _latencies(
                    peer,
                    proxy,
                    binding=binding,
                    recheck_after=recheck_after,
                    sends=sends,
                    agent_tasks=agent_tasks,
                )
            )
            made = len(peer.task_ids()) - agent_tasks
        clean += clean_here
        row = _stats(binding, case, lossy, recheck_after if mode == "drop" else None)
        row["tasks_per_send"] = made / (2 * sends)
        rows.append(row)
    base = _stats(binding, "no loss", clean, None)
    base["tasks_per_send"] = 1.0
    rows.insert(0, base)
    for row in rows:
        row["vs_no_loss"] = row["median_ms"] / base["median_ms"]
        row["p95_vs_no_loss"] = row["p95_ms"] / base["p95_ms"]
    return rows


# --- the report -------------------------------------------------------------------------------


def verdict(counts: list[Count], latency: list[dict[str, Any]]) -> list[str]:
    """The targets the guard misses (empty: all met)."""
    missed = [
        f"guard, {row['binding']}, latency run '{row['case']}': "
        f"{row['tasks_per_send']:.3f} tasks per send"
        for row in latency
        if row["tasks_per_send"] != TARGET_TASKS
    ]
    for count in counts:
        if count.client != "guard":
            continue
        where = f"guard, {count.binding}, {count.scenario}"
        if not count.exactly_once:
            missed.append(
                f"{where}: {count.tasks_per_reached:.3f} tasks per send that reached the agent, "
                f"{count.duplicated} sends with more than one task; target exactly 1.000 and none"
            )
        if count.scenario == _scenario_name(*TARGET_AT) and count.got < TARGET_GOT * count.sends:
            missed.append(
                f"{where}: {count.got / count.sends:.1%} of sends got their task, "
                f"target >= {TARGET_GOT:.0%}"
            )
    return missed


def _target(count: Count) -> str:
    if count.client != "guard":
        return ""
    parts = ["1.000 " + ("met" if count.exactly_once else "MISSED")]
    if count.scenario == _scenario_name(*TARGET_AT):
        got = count.got >= TARGET_GOT * count.sends
        parts.append(f"≥ {TARGET_GOT:.0%} got: " + ("met" if got else "MISSED"))
    return "; ".join(parts)


def _raised_as(count: Count) -> str:
    return ", ".join(f"{n} {name}" for name, n in count.raised_as.most_common()) or ""


def main() -> int:
    """Run both parts and print the tables (or JSON); exit 1 when the guard misses a target."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sends", type=int, default=200, help="logical sends per client, scenario")
    parser.add_argument("--latency-sends", type=int, default=40, help="lossy sends per case")
    parser.add_argument("--agent-tasks", type=int, default=100, help="tasks made before timing")
    parser.add_argument(
        "--bindings", default="jsonrpc,rest", help="comma-separated: jsonrpc, rest (HTTP+JSON)"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    bindings = [b.strip() for b in args.bindings.split(",") if b.strip()]
    unknown = [b for b in bindings if b not in BINDINGS]
    if unknown or not bindings:
        parser.error(f"unknown bindings {unknown}; use {', '.join(BINDINGS)}")
    logging.getLogger("a2a_client_errors").setLevel(logging.ERROR)
    started = time.perf_counter()
    counts = count_all(bindings, args.sends, args.seed)
    latency = [
        row for b in bindings for row in latency_all(b, args.latency_sends, args.agent_tasks)
    ]
    missed = verdict(counts, latency)
    if args.json:
        json.dump({"counts": [c.row() for c in counts], "latency": latency}, sys.stdout, indent=2)
        print()
        return 1 if missed else 0
    names = " and ".join(BINDING_NAMES[b] for b in bindings)
    print(
        f"Python {sys.version.split()[0]}, a2a-sdk {_version('a2a-sdk')} ({names}) on 127.0.0.1 "
        f"behind LossyProxy, tenacity {_version('tenacity')}; {args.sends} sends per client "
        f"and scenario, seed {args.seed}; ran in {time.perf_counter() - started:.1f} s"
    )
    print()
    print(
        "| binding | lost | client | tasks/send | tasks/send reaching the agent "
        "| sends with 2+ tasks | got its task | raised | raised as | target |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---|---|")
    for c in counts:
        print(
            f"| {BINDING_NAMES[c.binding]} | {c.scenario} | {c.client} | {c.tasks / c.sends:.3f} "
            f"| {c.tasks_per_reached:.3f} | {c.duplicated} | {c.got / c.sends:.1%} "
            f"| {c.raised / c.sends:.1%} | {_raised_as(c)} | {_target(c)} |"
        )
    print()
    print(
        f"Guarded send latency ({args.latency_sends} lossy sends per case, each beside a clean "
        f"one; the agent holds {args.agent_tasks} other tasks; real sleeps, backoff jitter "
        "drawn as 0):"
    )
    print()
    print("| binding | guarded send | sends | median | p95 | median vs no loss | p95 vs no loss |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for row in latency:
        print(
            f"| {BINDING_NAMES[row['binding']]} | {row['case']} | {row['sends']} "
            f"| {row['median_ms']:.1f} ms | {row['p95_ms']:.1f} ms "
            f"| {row['vs_no_loss']:.2f}x | {row['p95_vs_no_loss']:.2f}x |"
        )
    print()
    if missed:
        print("TARGET MISSED:")
        for line in missed:
            print(f"  {line}")
        return 1
    print(
        "Targets met: the guard made exactly 1.000 task per send that reached the agent, and "
        f"never two, in every scenario; it gave at least {TARGET_GOT:.0%} of callers their "
        f"task at {TARGET_AT[1]:.0%} lost answers."
    )
    return 0


def _version(name: str) -> str:
    from importlib.metadata import version  # noqa: PLC0415

    return version(name)


if __name__ == "__main__":
    sys.exit(main())
