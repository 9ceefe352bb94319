"""What instrumentation hooks cost a Guard on the success path, side by side.

Two measurements, each taking turns between the configurations (so drifts of the machine hit
all of them alike), medians reported:

* in memory: ``Guard.call`` of a function returning a prebuilt ``httpx.Response`` (a
  JSON-RPC result, a completed task), so the figure is the Guard's and the hooks' own CPU
  work per call, judging the body included (median and best round: on a shared machine the
  best round is the steadier figure);
* loopback: the same SendMessage to a loopback HTTP server in another process (the server of
  ``bench_guard.py``), so the figure is the share of a real call.

Configurations: no guard; ``Guard()``; with a hook that observes successes and does nothing
(the Guard's own cost of telling a hook); with a `LoggingHook` (it observes no success, so it
should cost nothing); with a `PrometheusHook` (fresh registry); with an `OpenTelemetryHook`
(SDK meter provider with an in-memory reader); with all three.

    python bench/bench_hooks.py [--rounds 15] [--number 2000] [--http-number 200] [--json [PATH]]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from prometheus_client import CollectorRegistry

from a2a_client_errors import Guard, Hook
from a2a_client_errors.instrumentation import LoggingHook, OpenTelemetryHook, PrometheusHook

if TYPE_CHECKING:
    from collections.abc import Callable

    from a2a_client_errors.hooks import GuardEvent

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_guard
from figures import Target, add_json_option, emit, show, table

PEER = "https://agent.example:443"


class _NoOp(Hook):
    """Observes successes and does nothing: the Guard's own cost of telling a hook."""

    def on_decision(self, event: GuardEvent) -> None:
        """Nothing."""


def _hooks() -> dict[str, list[Hook]]:
    def otel() -> OpenTelemetryHook:
        provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
        return OpenTelemetryHook(meter_provider=provider)

    return {
        "Guard()": [],
        "+ a no-op on_decision hook": [_NoOp()],
        "+ LoggingHook": [LoggingHook()],
        "+ PrometheusHook": [PrometheusHook(registry=CollectorRegistry())],
        "+ OpenTelemetryHook": [otel()],
        "+ all three": [LoggingHook(), PrometheusHook(registry=CollectorRegistry()), otel()],
    }


def in_memory(rounds: int, number: int) -> tuple[dict[str, float], dict[str, float]]:
    """Median and best seconds per call of each configuration, calling a function in memory."""
    response = httpx.Response(
        200, content=bench_guard.RESULT, headers={"content-type": "application/json"}
    )

    def fn() -> httpx.Response:
        return response

    calls: dict[str, Callable[[], object]] = {"no guard": fn}
    for name, hooks in _hooks().items():
        guard = Guard(hooks=hooks)
        calls[name] = lambda guard=guard: guard.call(fn, operation="SendMessage", peer=PEER)
    for call in calls.values():  # warm up
        for _ in range(200):
            call()
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            start = time.perf_counter()
            for _ in range(number):
                call()
            samples[name].append((time.perf_counter() - start) / number)
    return (
        {name: statistics.median(values) for name, values in samples.items()},
        {name: min(values) for name, values in samples.items()},
    )


def loopback(rounds: int, number: int) -> dict[str, float]:
    """Median seconds per call of each configuration, over HTTP to another process."""
    server = subprocess.Popen(  # noqa: S603 (the guard benchmark's server, by this interpreter)
        [sys.executable, bench_guard.__file__, "--serve"], stdout=subprocess.PIPE, text=True
    )
    assert server.stdout is not None
    port = int(server.stdout.readline())
    url = f"http://127.0.0.1:{port}/"
    headers = {"content-type": "application/json", "a2a-version": "1.0"}
    try:
        with httpx.Client(timeout=10) as client:

            def post() -> httpx.Response:
                return client.post(url, content=bench_guard.REQUEST, headers=headers)

            calls: dict[str, Callable[[], object]] = {"no guard": post}
            for name, hooks in _hooks().items():
                guard = Guard(hooks=hooks)
                calls[name] = lambda guard=guard: guard.call(
                    post, operation="SendMessage", peer=PEER
                )
            for call in calls.values():
                for _ in range(50):
                    call()
            samples: dict[str, list[float]] = {name: [] for name in calls}
            for _ in range(rounds * number):
                for name, call in calls.items():
                    start = time.perf_counter()
                    call()
                    samples[name].append(time.perf_counter() - start)
    finally:
        server.kill()
        server.wait(timeout=10)
    return {name: statistics.median(values) for name, values in samples.items()}


def markdown(figures: dict[str, dict[str, float]]) -> list[str]:
    """One table: each configuration in memory (median, best round) and over loopback."""
    memory, best, http = figures["in_memory"], figures["in_memory_best"], figures["loopback"]
    guard, bare = best["Guard()"], http["no guard"]
    return table(
        ["configuration", "in memory", "best round", "added to Guard()", "loopback", "vs no guard"],
        (
            [
                name,
                f"{memory[name] * 1e6:.2f} µs",
                f"{best[name] * 1e6:.2f} µs",
                "" if name in ("no guard", "Guard()") else f"{(best[name] - guard) * 1e6:+.2f} µs",
                f"{http[name] * 1e6:.1f} µs",
                f"{http[name] / bare:.3f}x",
            ]
            for name in memory
        ),
    )


def targets(figures: dict[str, dict[str, float]]) -> list[Target]:
    """A guarded call over loopback at most 1.05x the bare one, hooks included."""
    http = figures["loopback"]
    bare = http["no guard"]
    return [
        Target(
            f"{name}: ≤ {bench_guard.TARGET}x the bare call",
            f"{seconds / bare:.3f}x",
            seconds / bare <= bench_guard.TARGET,
        )
        for name, seconds in http.items()
        if name != "no guard"
    ]


def main() -> int:
    """Run both measurements and print the table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--number", type=int, default=2000)
    parser.add_argument("--http-number", type=int, default=200)
    add_json_option(parser)
    args = parser.parse_args()
    memory, best = in_memory(args.rounds, args.number)
    http = loopback(args.rounds, args.http_number)
    figures = {"in_memory": memory, "in_memory_best": best, "loopback": http}
    if emit(args.json, figures):
        return 0
    heading = (
        f"Python {sys.version.split()[0]}, {args.rounds} rounds of {args.number} calls in memory"
        f" and {args.http_number} over loopback, medians"
    )
    show(heading, markdown(figures), targets(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
