"""Retry amplification and success rate: the Guard's defaults next to tenacity and stamina.

A simulation in fake time: every strategy runs the same stream of calls (``--calls``, arriving
``--rate`` per fake second) against a simulated peer, on an asyncio event loop whose clock is
virtual (a sleep of 20 s takes no real time; no sockets, no threads). Calls overlap in fake
time, so a shared retry budget sees spends and credits in the order they would happen. Every
attempt takes ``--latency`` fake seconds. Randomness is seeded: a run is reproducible.

Strategies:

* ``guard``: ``Guard()`` with its defaults (3 attempts, full-jitter backoff 0.5 s x2 capped at
  20 s, server hints as a floor, one ``RetryBudget()`` per peer: 10 tokens, a retry costs 1, a
  success returns 0.5), through ``acall``; only the clock, sleep and random are injected.
* ``tenacity``: ``AsyncRetrying(stop=stop_after_attempt(3), wait=wait_exponential_jitter(
  multiplier=0.5, max=20, jitter=0.5), retry=retry_if_exception_type(PeerUnavailable))``: the
  naive retry most code writes by hand.
* ``stamina``: ``stamina.retry_context(on=PeerUnavailable)`` with its defaults (10 attempts,
  45 s timeout, 0.1 s x2 capped at 5 s, jitter up to 1 s), if stamina is importable. Its
  timeout reads the real monotonic clock; in this simulation its waits (at most ~30 s in all)
  stay under 45 s anyway, so it does not bind here either.

Scenarios: ``outage`` (every attempt fails with 503), ``transient-20%`` (each attempt fails
with 503 independently with probability 0.2), ``retry-after-30%`` (probability 0.3, each
failure carries ``Retry-After: 1``).

Columns: success rate; attempts per call over all calls and "after warm-up" (over calls that
arrive after the first 10 % of the arrival window, i.e. once a budget had time to be spent);
early retries (retries sent before the server's Retry-After had passed); fake latency per
call. Targets (design card): under a full outage at most 1.2 attempts per call once the budget
is spent (after warm-up); at 20 % transient failures at least 99 % success with at most 1.3
attempts per call. The retry-after scenario has no numeric target; it is there to show whose
retries respect the hint.

    python bench/bench_retry.py [--calls 10000] [--rate 50] [--latency 0.02] [--seed 7]
        [--json [PATH]]
"""

from __future__ import annotations

import argparse
import asyncio
import asyncio.base_events
import inspect
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx
import tenacity
from figures import Target, add_json_option, emit, show, table

from a2a_client_errors import CallFailed, Guard

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

try:  # an optional comparison
    import stamina
    import stamina.instrumentation
except ImportError:  # pragma: no cover (depends on the environment)
    stamina = None  # type: ignore[assignment]

WARM_UP = 0.1
"""The share of the arrival window left out of the "after warm-up" amplification."""


# --- a virtual-time event loop ----------------------------------------------------------------


class _NoSelector:
    """The loop's "selector": waiting for ``timeout`` just moves the virtual clock."""

    def __init__(self, loop: VirtualTimeLoop) -> None:
        self._loop = loop

    def select(self, timeout: float | None) -> list[Any]:
        """Advance the virtual clock to the next timer; there is never any I/O."""
        if timeout:
            self._loop.virtual_now += timeout
        return []

    def close(self) -> None:
        """Nothing to close."""


class VirtualTimeLoop(asyncio.base_events.BaseEventLoop):
    """An asyncio loop whose ``time()`` is virtual: sleeping is free and instant.

    It has no I/O at all (no selector, no self-pipe): when every task waits on a timer, the
    loop jumps its clock to the earliest one.
    """

    def __init__(self) -> None:
        super().__init__()
        self.virtual_now = 0.0
        self._selector = _NoSelector(self)
        self._clock_resolution = 1e-9

    def time(self) -> float:
        """The virtual time, in seconds."""
        return self.virtual_now

    def _process_events(self, event_list: list[Any]) -> None:
        """No I/O: nothing to process."""

    def _write_to_self(self) -> None:
        """No other thread ever wakes this loop."""


# --- the simulated peer ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Scenario:
    """How the peer fails."""

    name: str
    fail_p: float
    retry_after: float | None = None


SCENARIOS = (
    Scenario("outage", 1.0),
    Scenario("transient-20%", 0.2),
    Scenario("retry-after-30%", 0.3, retry_after=1.0),
)

OK_BODY = {"jsonrpc": "2.0", "id": 1, "result": {"id": "task-1", "status": {"state": "working"}}}


class PeerUnavailable(Exception):  # noqa: N818 (named like what it is)
    """A 503 from the peer, raised for tenacity and stamina (which judge exceptions)."""

    def __init__(self, response: httpx.Response) -> None:
        super().__init__("503 Service Unavailable")
        self.response = response


@dataclass(slots=True)
class CallRecord:
    """What happened to one call."""

    arrival: float
    attempts: int = 0
    ok: bool = False
    latency: float = 0.0
    early_retries: int = 0
    hint_until: float | None = None


@dataclass(slots=True)
class Peer:
    """A peer that fails each attempt with probability ``fail_p`` (a 503), after ``latency``."""

    scenario: Scenario
    rng: random.Random
    latency: float
    loop: VirtualTimeLoop
    failure: httpx.Response = field(init=False)

    def __post_init__(self) -> None:
        headers = {}
        if self.scenario.retry_after is not None:
            headers["Retry-After"] = f"{self.scenario.retry_after:g}"
        self.failure = httpx.Response(503, headers=headers, content=b"Service Unavailable")

    async def send(self, record: CallRecord) -> httpx.Response | dict[str, Any]:
        """One attempt: the peer's answer (a 503 response, or a JSON-RPC result)."""
        now = self.loop.time()
        if record.hint_until is not None and now + 1e-9 < record.hint_until:
            record.early_retries += 1
        record.attempts += 1
        await asyncio.sleep(self.latency)
        if self.rng.random() < self.scenario.fail_p:
            hint = self.scenario.retry_after
            record.hint_until = None if hint is None else self.loop.time() + hint
            return self.failure
        return OK_BODY

    async def send_or_raise(self, record: CallRecord) -> dict[str, Any]:
        """One attempt, with the 503 raised (what tenacity and stamina retry on)."""
        answer = await self.send(record)
        if isinstance(answer, httpx.Response):
            raise PeerUnavailable(answer)
        return answer


# --- the strategies ---------------------------------------------------------------------------

Strategy = "Callable[[Peer, VirtualTimeLoop, int], Callable[[CallRecord], Awaitable[object]]]"


def guard_strategy(
    peer: Peer, loop: VirtualTimeLoop, seed: int
) -> Callable[[CallRecord], Awaitable[object]]:
    """The Guard with its defaults; only the clock, the sleep and the random are injected."""
    guard = Guard(clock=loop.time, sleep=asyncio.sleep, random=random.Random(seed).random)

    async def call(record: CallRecord) -> object:
        return await guard.acall(peer.send, record, operation="GetTask", peer="peer-a")

    return call


def _tenacity_wait() -> tenacity.wait.wait_base:
    """0.5 s x2 capped at 20 s, plus up to 0.5 s of jitter (``initial`` before tenacity 9.1)."""
    params = inspect.signature(tenacity.wait_exponential_jitter).parameters
    first = "multiplier" if "multiplier" in params else "initial"
    return tenacity.wait_exponential_jitter(**{first: 0.5}, max=20, jitter=0.5)


def tenacity_strategy(
    peer: Peer, loop: VirtualTimeLoop, seed: int
) -> Callable[[CallRecord], Awaitable[object]]:
    """Naive retry with tenacity: 3 attempts, exponential backoff with jitter, on 503."""
    del loop
    random.seed(seed)  # tenacity's jitter draws from the module's random

    async def call(record: CallRecord) -> object:
        retrying = tenacity.AsyncRetrying(
            stop=tenacity.stop_after_attempt(3),
            wait=_tenacity_wait(),
            retry=tenacity.retry_if_exception_type(PeerUnavailable),
            sleep=asyncio.sleep,
            reraise=True,
        )
        return await retrying(peer.send_or_raise, record)

    return call


def stamina_strategy(
    peer: Peer, loop: VirtualTimeLoop, seed: int
) -> Callable[[CallRecord], Awaitable[object]]:
    """Stamina's defaults, retrying on 503."""
    del loop
    assert stamina is not None
    random.seed(seed)  # stamina's jitter draws from the module's random
    stamina.instrumentation.set_on_retry_hooks([])  # no log line per retry

    async def call(record: CallRecord) -> object:
        async for attempt in stamina.retry_context(on=PeerUnavailable):
            with attempt:
                return await peer.send_or_raise(record)
        return None  # pragma: no cover (stamina re-raises the last failure)

    return call


STRATEGIES: dict[str, Any] = {"guard": guard_strategy, "tenacity": tenacity_strategy}
if stamina is not None:
    STRATEGIES["stamina"] = stamina_strategy


# --- running ----------------------------------------------------------------------------------


def simulate(
    strategy: str, scenario: Scenario, *, calls: int, rate: float, latency: float, seed: int
) -> list[CallRecord]:
    """Run ``calls`` calls through ``strategy`` against a peer failing as ``scenario`` says."""
    loop = VirtualTimeLoop()
    try:
        peer = Peer(scenario, random.Random(seed), latency, loop)
        call = STRATEGIES[strategy](peer, loop, seed + 1)
        records = [CallRecord(arrival=i / rate) for i in range(calls)]

        async def one(record: CallRecord) -> None:
            await asyncio.sleep(record.arrival)
            start = loop.time()
            try:
                await call(record)
            except (CallFailed, PeerUnavailable):
                record.ok = False
            else:
                record.ok = True
            record.latency = loop.time() - start

        async def everything() -> None:
            await asyncio.gather(*(one(r) for r in records))

        loop.run_until_complete(everything())
        return records
    finally:
        loop.close()


def target(scenario: Scenario, success: float, all_amp: float, steady_amp: float) -> str:
    """Whether the design card's target for ``scenario`` is met ("n/a" when it has none)."""
    if scenario.name == "outage":
        return "yes" if steady_amp <= 1.2 else "no"
    if scenario.name == "transient-20%":
        return "yes" if success >= 0.99 and all_amp <= 1.3 else "no"
    return "n/a"


TARGETS = {
    "outage": "≤ 1.2 attempts/call after warm-up",
    "transient-20%": "≥ 99 % success and ≤ 1.3 attempts/call",
    "retry-after-30%": "none (shows who honours Retry-After)",
}


def summarise(
    strategy: str, scenario: Scenario, records: list[CallRecord], *, rate: float
) -> dict[str, Any]:
    """The row of the table for one run."""
    n = len(records)
    cut = WARM_UP * n / rate
    steady = [r for r in records if r.arrival >= cut]
    attempts = sum(r.attempts for r in records)
    success = sum(r.ok for r in records) / n
    all_amp = attempts / n
    steady_amp = sum(r.attempts for r in steady) / len(steady)
    latencies = sorted(r.latency for r in records)
    return {
        "strategy": strategy,
        "scenario": scenario.name,
        "calls": n,
        "success_rate": success,
        "attempts": attempts,
        "attempts_per_call": all_amp,
        "attempts_per_call_after_warm_up": steady_amp,
        "early_retries": sum(r.early_retries for r in records),
        "mean_latency_s": statistics.fmean(latencies),
        "p99_latency_s": latencies[min(n - 1, int(0.99 * n))],
        "target": TARGETS[scenario.name],
        "target_met": target(scenario, success, all_amp, steady_amp),
    }


def run(*, calls: int, rate: float, latency: float, seed: int) -> list[dict[str, Any]]:
    """Every strategy in every scenario."""
    rows = []
    for scenario in SCENARIOS:
        for strategy in STRATEGIES:
            records = simulate(
                strategy, scenario, calls=calls, rate=rate, latency=latency, seed=seed
            )
            rows.append(summarise(strategy, scenario, records, rate=rate))
    return rows


def markdown(figures: dict[str, Any]) -> list[str]:
    """The table: every strategy in every scenario."""
    return table(
        [
            "scenario",
            "strategy",
            "success",
            "attempts/call",
            "after warm-up",
            "retries before Retry-After",
            "mean latency",
            "p99 latency",
            "target",
            "target met",
        ],
        (
            [
                r["scenario"],
                r["strategy"],
                f"{r['success_rate']:.2%}",
                f"{r['attempts_per_call']:.3f}",
                f"{r['attempts_per_call_after_warm_up']:.3f}",
                r["early_retries"],
                f"{r['mean_latency_s']:.2f} s",
                f"{r['p99_latency_s']:.2f} s",
                r["target"],
                r["target_met"],
            ]
            for r in figures["rows"]
        ),
        "llrrrrrrll",
    )


def targets(figures: dict[str, Any]) -> list[Target]:
    """The Guard's targets (tenacity and stamina are there to compare with)."""
    return [
        Target(
            f"{r['scenario']}: {r['target']}",
            f"{r['success_rate']:.2%} success, {r['attempts_per_call']:.3f} attempts/call "
            f"({r['attempts_per_call_after_warm_up']:.3f} after warm-up)",
            r["target_met"] == "yes",
        )
        for r in figures["rows"]
        if r["strategy"] == "guard" and r["target_met"] != "n/a"
    ]


def main() -> int:
    """Run the simulation and print the table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=50.0, help="calls per fake second")
    parser.add_argument("--latency", type=float, default=0.02, help="fake seconds per attempt")
    parser.add_argument("--seed", type=int, default=7)
    add_json_option(parser)
    args = parser.parse_args()
    started = time.perf_counter()
    rows = run(calls=args.calls, rate=args.rate, latency=args.latency, seed=args.seed)
    versions = {"tenacity": _version("tenacity")}
    if stamina is not None:
        versions["stamina"] = _version("stamina")
    figures = {"versions": versions, "rows": rows}
    if emit(args.json, figures):
        return 0
    heading = (
        f"{args.calls} calls at {args.rate:g}/fake s, {args.latency:g} fake s per attempt, "
        f"seed {args.seed}; "
        + ", ".join(f"{name} {version}" for name, version in versions.items())
        + f"; ran in {time.perf_counter() - started:.1f} s real"
    )
    show(heading, markdown(figures), targets(figures))
    return 0


def _version(name: str) -> str:
    from importlib.metadata import version  # noqa: PLC0415

    return version(name)


if __name__ == "__main__":
    sys.exit(main())
