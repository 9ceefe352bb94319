"""Memory and deadlines against a hostile peer: peak RSS of large bodies, elapsed time of trickles.

    python bench/bench_memory.py [--mb 300] [--pace 0.2] [--deadline 2.0] [--json [PATH]]

Memory: each reading runs in a child process of its own (``python -m tests.memory_worker``,
the worker the memory tests use), on a body generated as it is read, and reports how much its
peak RSS (``ru_maxrss``) grew:

* ``GuardTransport`` / ``AsyncGuardTransport``: a ``client.stream()`` GET of a ``--mb`` MB
  JSON body, a hook watching (so the body is judged), read chunk by chunk by the caller;
* ``iter_events``, complete events: ``--mb`` MB of 64 KiB events;
* ``iter_events``, one event that never ends: ``--mb`` MB without a blank line.

Deadlines: a server on 127.0.0.1 (tests/loopback.py) sends a 60-byte body a byte every
``--pace`` seconds (12 s at the defaults), and the time a call takes is measured:

* ``GuardTransport`` and ``AsyncGuardTransport`` (unwatched, and watched by a hook) under
  ``Guard(deadline=--deadline)``;
* ``a2a-errors probe --timeout --deadline`` against an agent whose card comes fast and whose
  every other answer trickles, and against one whose card trickles.

Target (issue: hostile peers): peak RSS under +150 MB for 300 MB; a trickle ends within the
deadline plus one read timeout. Run from the repository's root.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from figures import Target, add_json_option, emit, show, table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from a2a_client_errors import AsyncGuardTransport, Guard, GuardTransport
from a2a_client_errors.testing import RecordingHook
from tests.loopback import Loopback, Recorded, Reply

MODES = {
    "transport": "`GuardTransport`, 1 JSON body",
    "async-transport": "`AsyncGuardTransport`, 1 JSON body",
    "events": "`iter_events`, 64 KiB events",
    "unfinished": "`iter_events`, 1 event that never ends",
}
BODY = b'{"jsonrpc": "2.0", "id": 1, "result": {"id": "t", "pad": "' + b"x" * 10 + b'"}}'


def _memory(mode: str, megabytes: int) -> tuple[float, str]:
    """Peak RSS growth of a worker reading ``megabytes`` in ``mode``, and what it read."""
    done = subprocess.run(  # noqa: S603 (our own worker)
        [sys.executable, "-m", "tests.memory_worker", mode, "--mb", str(megabytes)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode:  # a worker that fails is a benchmark that crashed
        lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
        raise RuntimeError(f"the memory worker ({mode}) failed: {lines[-1]}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return (found["peak_kb"] - found["before_kb"]) / 1024, str(found["result"])


def _timed(call: object) -> tuple[float, str]:
    started = time.monotonic()
    try:
        result = call() if callable(call) else None
        outcome = f"HTTP {result.status_code}" if isinstance(result, httpx.Response) else "done"
    except Exception as exc:
        outcome = type(exc).__name__
    return time.monotonic() - started, outcome


def _sync(url: str, deadline: float, *, watched: bool) -> httpx.Response:
    guard = Guard(deadline=deadline, hooks=[RecordingHook()] if watched else [])
    with httpx.Client(transport=GuardTransport(guard)) as client:
        return client.get(f"{url}/tasks/t-1")


def _async(url: str, deadline: float, *, watched: bool) -> httpx.Response:
    async def run() -> httpx.Response:
        guard = Guard(deadline=deadline, hooks=[RecordingHook()] if watched else [])
        async with httpx.AsyncClient(transport=AsyncGuardTransport(guard)) as client:
            return await client.get(f"{url}/tasks/t-1")

    return asyncio.run(run())


def _agent(url: str, pace: float, *, card: bool) -> object:
    document = {
        "name": "dripping agent",
        "supportedInterfaces": [
            {"url": f"{url}/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": False, "pushNotifications": False},
    }

    def answer(request: Recorded) -> Reply:
        if request.path == "/.well-known/agent-card.json":
            reply = Reply.json(200, document)
            return Reply(200, reply.body, reply.headers, pace=pace) if card else reply
        if b"Stream" in request.body or b"Subscribe" in request.body:
            return Reply(200, b"data: " + BODY, {"content-type": "text/event-stream"}, pace=pace)
        return Reply(200, BODY, {"content-type": "application/json"}, pace=pace)

    return answer


def _probe(url: str, deadline: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 (our own command)
        [sys.executable, "-m", "a2a_client_errors", "probe", url, "--timeout", str(deadline)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


MEMORY_TARGET_MB = 150


def run(megabytes: int, pace: float, deadline: float) -> dict[str, Any]:
    """Both measurements: each reading's peak RSS growth, each trickle's elapsed time."""
    memory = []
    for mode, label in MODES.items():
        growth, result = _memory(mode, megabytes)
        memory.append({"reading": label, "growth_mb": growth, "result": result})
    trickles = []
    with Loopback([Reply(200, BODY, {"content-type": "application/json"}, pace=pace)]) as lb:
        for name, call in (("GuardTransport", _sync), ("AsyncGuardTransport", _async)):
            for watched in (False, True):
                elapsed, outcome = _timed(
                    lambda call=call, watched=watched: call(lb.url, deadline, watched=watched)
                )
                how = "watched" if watched else "unwatched"
                trickles.append(
                    {"call": f"`{name}` ({how})", "elapsed_s": elapsed, "outcome": outcome}
                )
        for card in (False, True):
            lb.script(_agent(lb.url, pace, card=card))  # type: ignore[arg-type]
            elapsed, _ = _timed(lambda: _probe(lb.url, deadline))
            what = "a dripping card" if card else "dripping answers and events"
            call = f"`a2a-errors probe --timeout {deadline:g}`, {what}"
            trickles.append({"call": call, "elapsed_s": elapsed, "outcome": ""})
    return {
        "mb": megabytes,
        "pace_s": pace,
        "deadline_s": deadline,
        "memory": memory,
        "trickles": trickles,
    }


def markdown(figures: dict[str, Any]) -> list[str]:
    """Two tables: memory, then time."""
    lines = table(
        [f"reading {figures['mb']} MB", "peak RSS growth", "result", "target"],
        (
            [r["reading"], f"+{r['growth_mb']:.0f} MB", r["result"], f"< +{MEMORY_TARGET_MB} MB"]
            for r in figures["memory"]
        ),
        "lrlr",
    )
    lines.append("")
    lines += table(
        [
            f"a byte every {figures['pace_s']:g} s, deadline {figures['deadline_s']:g} s",
            "elapsed",
            "outcome",
        ],
        ([r["call"], f"{r['elapsed_s']:.1f} s", r["outcome"]] for r in figures["trickles"]),
        "lrl",
    )
    return lines


def targets(figures: dict[str, Any]) -> list[Target]:
    """Memory bounded whatever a peer streams; a trickle stopped by the deadline."""
    worst = max(figures["memory"], key=lambda r: r["growth_mb"])
    deadline = figures["deadline_s"]
    slowest = max(figures["trickles"], key=lambda r: r["elapsed_s"])
    return [
        Target(
            f"reading {figures['mb']} MB from a peer: peak RSS under +{MEMORY_TARGET_MB} MB",
            f"+{worst['growth_mb']:.0f} MB at most ({worst['reading']})",
            worst["growth_mb"] < MEMORY_TARGET_MB,
        ),
        Target(
            "a trickle ends within the deadline plus one read timeout (at most twice the deadline)",
            f"{slowest['elapsed_s']:.1f} s at most ({slowest['call']})",
            slowest["elapsed_s"] <= 2 * deadline,
        ),
    ]


def main() -> int:
    """Run both measurements and print the tables (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--mb", type=int, default=300)
    parser.add_argument("--pace", type=float, default=0.2)
    parser.add_argument("--deadline", type=float, default=2.0)
    add_json_option(parser)
    args = parser.parse_args()
    figures = run(args.mb, args.pace, args.deadline)
    if not emit(args.json, figures):
        show(f"Python {sys.version.split()[0]}", markdown(figures), targets(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
