"""Circuit breaking under an outage, transient failures and a burst of call errors (fake clock).

A simulation in fake time, no sockets and no real sleep: calls arrive ``--rate`` per fake second
and run one after another on a `FakeClock` (each attempt takes ``--latency`` fake seconds; a
failed connect to the dead peer takes ``--connect-timeout``). Every strategy is a `Guard` with
its defaults (3 attempts, backoff, one `RetryBudget()` per peer); they differ in the breaker:

* ``budget``: no breaker: the retry budget alone.
* ``breaker``: ``Guard(breaker=CircuitBreaker())`` with its defaults (ratio 0.5 over 30 s,
  20 calls at least, cool-down 5 s doubling to 120 s, jitter 0.2).
* ``pybreaker``: ``pybreaker.CircuitBreaker(fail_max=10, reset_timeout=5)`` around each guarded
  call (ten failures in a row, the nearest it has to "half of twenty"; the same cool-down), as
  a generic breaker is used: every exception the call raises counts. Its clock is the fake one.

Scenarios:

* ``outage``: 10 s healthy, ``--outage`` s (60) every connect is refused, then 30 s healthy.
  Columns: requests sent to the dead peer per call once the breaker opened (target at most 0.05;
  the budget alone is 1.0 or more), over the whole outage, and the time from the recovery to
  the first successful call (target: at most the cool-down then in force plus one call).
* ``transient-20%``: 60 s where each attempt fails with a 503 with probability 0.2. Columns:
  calls that failed, and how often the breaker opened (target: never).
* ``task-not-found``: 20 s where every call answers TASK_NOT_FOUND (a call error of a healthy
  peer). Column: calls refused by the breaker (target: zero).

    python bench/bench_breaker.py [--rate 50] [--outage 60] [--seed 7] [--json [PATH]]
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
from figures import Target, add_json_option, emit, show, table

from a2a_client_errors import CallFailed, CircuitBreaker, Guard, PeerUnavailable
from a2a_client_errors.testing import FakeClock

try:  # the reference
    import pybreaker
except ImportError:  # pragma: no cover (in the dev extra)
    pybreaker = None

PEER = "https://agent.example:443"
REQUEST = httpx.Request("POST", PEER)
OK = {"jsonrpc": "2.0", "id": 1, "result": {"id": "t", "status": {"state": "TASK_STATE_COMPLETED"}}}
NOT_FOUND = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "Task not found"}}


@dataclass
class Peer:
    """The simulated agent: what it answers at each fake instant, and what it was sent."""

    clock: FakeClock
    latency: float
    connect_timeout: float
    mode: str = "up"  # up, down, flaky, not_found
    rng: random.Random = field(default_factory=lambda: random.Random(7))
    sent_down: int = 0

    def __call__(self) -> object:
        """One attempt."""
        if self.mode == "down":
            self.sent_down += 1
            self.clock.advance(self.connect_timeout)
            raise httpx.ConnectTimeout("connect timed out", request=REQUEST)
        self.clock.advance(self.latency)
        if self.mode == "flaky" and self.rng.random() < 0.2:
            return httpx.Response(503, request=REQUEST)
        if self.mode == "not_found":
            return NOT_FOUND
        return OK


class _Opens:
    """Counts a breaker's openings (a hook for ours, a listener for pybreaker)."""

    def __init__(self) -> None:
        self.opens = 0
        self.cooldown: float | None = 5.0  # the cool-down last set (pybreaker: always 5 s)

    def on_breaker(self, event: Any) -> None:
        if event.new.value == "open":
            self.opens += 1
            self.cooldown = event.retry_in

    # pybreaker's listener protocol
    def state_change(self, cb: Any, old: Any, new: Any) -> None:
        if new.name == "open":
            self.opens += 1

    def before_call(self, *args: Any, **kwargs: Any) -> None:
        """Nothing to count."""

    def success(self, *args: Any) -> None:
        """Nothing to count."""

    def failure(self, *args: Any) -> None:
        """Nothing to count."""


def _fake_datetime(clock: FakeClock) -> type[datetime]:
    epoch = datetime(2030, 1, 1, tzinfo=timezone.utc)

    class Fake(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return epoch + timedelta(seconds=clock())

    return Fake


def _strategy(name: str, clock: FakeClock, seed: int) -> tuple[Any, _Opens]:
    """A function running one call (True: success; None: refused; False: failed)."""
    rng = random.Random(seed)
    opens = _Opens()
    breaker = CircuitBreaker(clock=clock, random=rng.random) if name == "breaker" else None
    from a2a_client_errors import Hook  # noqa: PLC0415

    class Told(Hook):
        def on_breaker(self, event: Any) -> None:
            opens.on_breaker(event)

    guard = Guard(
        clock=clock, sleep=clock.sleep, random=rng.random, breaker=breaker, hooks=[Told()]
    )
    generic = None
    if name == "pybreaker":
        assert pybreaker is not None
        pybreaker.datetime = _fake_datetime(clock)  # type: ignore[attr-defined]
        generic = pybreaker.CircuitBreaker(fail_max=10, reset_timeout=5, listeners=[opens])

    def run(peer: Peer) -> bool | None:
        try:
            if generic is not None:
                generic.call(guard.call, peer, operation="GetTask", peer=PEER)
            else:
                guard.call(peer, operation="GetTask", peer=PEER)
        except PeerUnavailable:
            return None
        except CallFailed:
            return False
        except Exception as exc:
            if pybreaker is not None and isinstance(exc, pybreaker.CircuitBreakerError):
                return None
            raise
        return True

    return run, opens


def _calls(start: float, seconds: float, rate: float) -> list[float]:
    return [start + i / rate for i in range(int(seconds * rate))]


def outage(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """The outage scenario's figures for one strategy."""
    clock = FakeClock()
    run, opens = _strategy(name, clock, args.seed)
    peer = Peer(clock, args.latency, args.connect_timeout)
    down_at, up_at = 10.0, 10.0 + args.outage
    sent_after_open = calls_after_open = calls_down = 0
    first_ok = None
    opened_at = None
    cooldown = None
    for t in _calls(0.0, up_at + 30.0, args.rate):
        if clock() < t:
            clock.advance(t - clock())
        peer.mode = "down" if down_at <= t < up_at else "up"
        before = peer.sent_down
        result = run(peer)
        if peer.mode == "down":
            calls_down += 1
            if opened_at is None and opens.opens:
                opened_at = t
            if opened_at is not None:
                calls_after_open += 1
                sent_after_open += peer.sent_down - before
        elif t >= up_at and cooldown is None:
            cooldown = opens.cooldown if opens.opens else None
        if t >= up_at and result and first_ok is None:
            first_ok = t - up_at
    return {
        "sent_per_call_open": sent_after_open / calls_after_open if calls_after_open else None,
        "sent_per_call_outage": peer.sent_down / calls_down,
        "recovery_s": first_ok,
        "cooldown_at_recovery_s": cooldown,
        "opened_after_s": None if opened_at is None else opened_at - down_at,
    }


def transient(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """The transient scenario's figures."""
    clock = FakeClock()
    run, opens = _strategy(name, clock, args.seed)
    peer = Peer(
        clock, args.latency, args.connect_timeout, mode="flaky", rng=random.Random(args.seed)
    )
    failed = total = 0
    for t in _calls(0.0, 60.0, args.rate):
        if clock() < t:
            clock.advance(t - clock())
        total += 1
        failed += run(peer) is not True
    return {"failed": failed, "calls": total, "opens": opens.opens}


def not_found(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """The TASK_NOT_FOUND burst's figures."""
    clock = FakeClock()
    run, _ = _strategy(name, clock, args.seed)
    peer = Peer(clock, args.latency, args.connect_timeout, mode="not_found")
    refused = total = 0
    for t in _calls(0.0, 20.0, args.rate):
        if clock() < t:
            clock.advance(t - clock())
        total += 1
        refused += run(peer) is None
    return {"refused": refused, "calls": total}


OPEN_TARGET = 0.05
"""Requests to a dead peer per call once its breaker is open (design.md)."""


def _fmt(value: Any, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def markdown(figures: dict[str, Any]) -> list[str]:
    """The table: each strategy in the three scenarios."""
    lines = table(
        [
            "strategy",
            "sent/call, open",
            "sent/call, outage",
            "opened after",
            "recovery",
            "cool-down then",
            "transient: failed",
            "transient: opens",
            "not-found: refused",
        ],
        (
            [
                name,
                _fmt(r["outage"]["sent_per_call_open"]),
                _fmt(r["outage"]["sent_per_call_outage"]),
                _fmt(r["outage"]["opened_after_s"], ".2f") + " s",
                _fmt(r["outage"]["recovery_s"], ".2f") + " s",
                _fmt(r["outage"]["cooldown_at_recovery_s"], ".2f") + " s",
                f"{r['transient']['failed']}/{r['transient']['calls']}",
                r["transient"]["opens"],
                f"{r['not_found']['refused']}/{r['not_found']['calls']}",
            ]
            for name, r in figures.items()
        ),
    )
    ours, budget = figures["breaker"]["outage"], figures["budget"]["outage"]
    if ours["sent_per_call_outage"]:
        ratio = budget["sent_per_call_outage"] / ours["sent_per_call_outage"]
        lines += ["", f"Requests to the dead peer, the budget alone / the breaker: {ratio:.1f}x"]
    return lines


def targets(figures: dict[str, Any]) -> list[Target]:
    """The breaker's: few requests once open, never open at 20 % failures, no call refused."""
    ours = figures["breaker"]
    sent = ours["outage"]["sent_per_call_open"]
    return [
        Target(
            f"once a breaker is open: ≤ {OPEN_TARGET} requests per call to a dead peer",
            _fmt(sent),
            sent is not None and sent <= OPEN_TARGET,
        ),
        Target(
            "20 % transient failures never open it",
            f"opened {ours['transient']['opens']} times",
            ours["transient"]["opens"] == 0,
        ),
        Target(
            "a burst of TASK_NOT_FOUND (call errors) refuses no call",
            f"{ours['not_found']['refused']} refused",
            ours["not_found"]["refused"] == 0,
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    """Run every scenario for every strategy; print the table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=50.0, help="calls per fake second")
    parser.add_argument("--outage", type=float, default=60.0, help="fake seconds of outage")
    parser.add_argument("--latency", type=float, default=0.02, help="fake seconds per attempt")
    parser.add_argument("--connect-timeout", type=float, default=1.0, help="a dead connect")
    parser.add_argument("--seed", type=int, default=7)
    add_json_option(parser)
    args = parser.parse_args(argv)
    logging.getLogger("a2a_client_errors").setLevel(logging.ERROR)  # a table, not log lines
    names = ["budget", "breaker"] + (["pybreaker"] if pybreaker is not None else [])
    figures = {
        name: {
            "outage": outage(name, args),
            "transient": transient(name, args),
            "not_found": not_found(name, args),
        }
        for name in names
    }
    found = targets(figures)
    if not emit(args.json, figures):
        heading = (
            f"{args.outage:g} s outage at {args.rate:g} calls/s, then recovery; 20 % transient"
            " 503s for 60 s; 100 % TASK_NOT_FOUND for 20 s (fake clock)"
        )
        show(heading, markdown(figures), found)
    return 0 if all(target.met for target in found) else 1


if __name__ == "__main__":
    sys.exit(main())
