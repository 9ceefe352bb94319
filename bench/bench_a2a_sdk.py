"""What `guard_client` costs on the success path: guarded vs bare a2a-sdk calls on loopback.

A real a2a-sdk server of the installed line (a2a-sdk 1.x: `EmbeddedPeer`; 0.3: the tests' 0.3
agent, ``tests/agent03.py``), JSON-RPC on 127.0.0.1 in a background thread with its own event
loop, answers two operations:

* GetTask of an existing (completed) task;
* SendMessage "hello" (non-streaming: one request, one completed task back; the guarded client
  sends it blocking too, ``ExactlyOnce(non_blocking=False)``, so that both send the same).

One a2a-sdk ``Client`` (``ClientFactory``, JSON-RPC only) is called bare and through
``guard_client(client)``. The two take turns call by call (so drifts of the machine hit both
alike; which of the two goes first alternates); each call is timed on its own, and the table
reports, per operation, the median of each, their ratio and the microseconds the guard adds.
Target: at most 1.05x.

``--python-other-line PYTHON`` runs the same under a Python whose a2a-sdk is of the other line
(CI's 0.3 environment), and the table shows both lines side by side.

    python bench/bench_a2a_sdk.py [--rounds 10] [--number 150] [--python-other-line PY]
        [--json [PATH]]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from figures import Target, add_json_option, emit, show, table

from a2a_client_errors import ExactlyOnce, Guard
from a2a_client_errors.integrations.a2a_sdk import guard_client

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

WARMUP = 50
"""Untimed calls per client and operation before measuring."""
ROOT = Path(__file__).resolve().parent.parent


def _line() -> str:
    """The installed a2a-sdk's line: ``"1.x"`` or ``"0.3"``."""
    return "0.3" if metadata.version("a2a-sdk").startswith("0.") else "1.x"


def _guard() -> Guard:
    # The guarded client sends what the bare one sends: a blocking send (to an agent without
    # ListTasks, a 0.3 one, it would otherwise go without blocking and read the task after).
    return Guard(exactly_once=ExactlyOnce(non_blocking=False))


@contextlib.contextmanager
def _agent() -> Iterator[Any]:
    """The agent on 127.0.0.1: the embedded a2a-sdk 1.x peer, or the tests' 0.3 agent."""
    if _line() == "1.x":
        from a2a_client_errors.testing.peer import EmbeddedPeer  # noqa: PLC0415 (the installed line decides)

        with EmbeddedPeer(streaming=False, push_notifications=False) as peer:
            yield peer.agent_card
    else:
        sys.path.insert(0, str(ROOT))
        from tests.agent03 import build_agent03, serve03  # noqa: PLC0415 (the installed line decides)

        with serve03(build_agent03(streaming=False)) as running:
            yield running.card


@contextlib.asynccontextmanager
async def _clients(
    card: Any,
) -> AsyncIterator[dict[str, dict[str, Callable[[], Awaitable[object]]]]]:
    """The calls to time, by operation and client (bare, guarded), on one JSON-RPC client."""
    from a2a.client import ClientConfig, ClientFactory  # noqa: PLC0415 (the installed line decides)

    if _line() == "1.x":
        from a2a.types import a2a_pb2  # noqa: PLC0415 (the installed line decides)
        from a2a.utils.constants import TransportProtocol  # noqa: PLC0415 (the installed line decides)

        http = httpx.AsyncClient(timeout=10, headers={"A2A-Version": "1.0"})
        config: Any = ClientConfig(
            streaming=False,
            httpx_client=http,
            supported_protocol_bindings=[TransportProtocol.JSONRPC],
        )
        # The same message_id every time: the guard assigns one only when it is missing, so
        # both clients send identical requests.
        hello: Any = a2a_pb2.SendMessageRequest(
            message=a2a_pb2.Message(
                message_id="bench-hello", role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text="hello")]
            )
        )

        def get_request(task_id: str) -> Any:
            return a2a_pb2.GetTaskRequest(id=task_id)

        def task_of(events: list[Any]) -> Any:
            return events[0].task
    else:
        from a2a.types import Message, Part, Role, TaskQueryParams, TextPart  # noqa: PLC0415 (the installed line decides)

        http = httpx.AsyncClient(timeout=10)
        config = ClientConfig(streaming=False, httpx_client=http)
        hello = Message(
            message_id="bench-hello", role=Role.user, parts=[Part(root=TextPart(text="hello"))]
        )

        def get_request(task_id: str) -> Any:
            return TaskQueryParams(id=task_id)

        def task_of(events: list[Any]) -> Any:
            return events[0][0]

    async def send(client: Any) -> list[Any]:
        return [event async for event in client.send_message(hello)]

    bare = ClientFactory(config).create(card)
    guarded = guard_client(bare, _guard())
    try:
        get = get_request(task_of(await send(bare)).id)
        yield {
            "GetTask": {
                "bare": lambda: bare.get_task(get),
                "guarded": lambda: guarded.get_task(get),
            },
            "SendMessage": {"bare": lambda: send(bare), "guarded": lambda: send(guarded)},
        }
    finally:
        await bare.close()
        await http.aclose()


async def _measure(card: Any, calls: int) -> dict[str, dict[str, list[float]]]:
    """Seconds per call, by operation and client, the clients taking turns call by call."""
    async with _clients(card) as operations:
        for clients in operations.values():  # warm up connections and caches
            for call in clients.values():
                for _ in range(WARMUP):
                    await call()
        samples: dict[str, dict[str, list[float]]] = {
            op: {name: [] for name in clients} for op, clients in operations.items()
        }
        for turn in range(calls):
            for op, clients in operations.items():
                names = list(clients)
                if turn % 2:  # who goes first alternates, so neither always follows the other
                    names.reverse()
                for name in names:
                    call = clients[name]
                    start = time.perf_counter()
                    await call()
                    samples[op][name].append(time.perf_counter() - start)
    return samples


def run(rounds: int, number: int, other: str | None = None) -> list[dict[str, Any]]:
    """Median microseconds per call, bare and guarded, for each operation.

    ``other``: a Python whose a2a-sdk is of the other line, run for the same figures, which
    are added (one run, both lines side by side).
    """
    with _agent() as card:
        samples = asyncio.run(_measure(card, rounds * number))
    results = []
    version = metadata.version("a2a-sdk")
    for op, clients in samples.items():
        bare = statistics.median(clients["bare"]) * 1e6
        guarded = statistics.median(clients["guarded"]) * 1e6
        results.append(
            {
                "a2a_sdk": version,
                "operation": op,
                "calls": len(clients["bare"]),
                "bare_us": bare,
                "guarded_us": guarded,
                "added_us": guarded - bare,
                "ratio": guarded / bare,
            }
        )
    if other:
        with tempfile.TemporaryDirectory(prefix="a2a-bench-") as scratch:
            path = Path(scratch) / "other.json"
            command = [other, __file__, "--rounds", str(rounds), "--number", str(number)]
            subprocess.run([*command, "--json", str(path)], check=True, cwd=ROOT)  # noqa: S603
            results += json.loads(path.read_text(encoding="utf-8"))
    return results


TARGET = 1.05
"""A guarded call on the success path: at most 5 % over the bare call (design.md)."""


def markdown(figures: list[dict[str, Any]]) -> list[str]:
    """The table: each operation bare and guarded, the time added and the ratio."""
    return table(
        ["a2a-sdk", "operation", "bare", "`guard_client`", "added", "vs bare", "target"],
        (
            [
                r.get("a2a_sdk", "1.x"),
                r["operation"],
                f"{r['bare_us']:.1f} µs",
                f"{r['guarded_us']:.1f} µs",
                f"{r['added_us']:+.1f} µs",
                f"{r['ratio']:.3f}x",
                f"≤ {TARGET}x",
            ]
            for r in figures
        ),
    )


def targets(figures: list[dict[str, Any]]) -> list[Target]:
    """Each operation through `guard_client` at most 1.05x the bare client."""
    return [
        Target(
            f"{r['operation']} through `guard_client` (a2a-sdk {r.get('a2a_sdk', '1.x')}): "
            f"≤ {TARGET}x the bare client",
            f"{r['ratio']:.3f}x",
            r["ratio"] <= TARGET,
        )
        for r in figures
    ]


def main() -> int:
    """Run the benchmark and print the table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--number", type=int, default=150)
    parser.add_argument(
        "--python-other-line",
        metavar="PYTHON",
        help="a Python whose a2a-sdk is of the other line (1.x or 0.3): measured too",
    )
    add_json_option(parser)
    args = parser.parse_args()
    figures = run(args.rounds, args.number, args.python_other_line)
    if emit(args.json, figures):
        return 0
    heading = (
        f"Python {sys.version.split()[0]}, a2a-sdk JSON-RPC on 127.0.0.1, "
        f"{args.rounds} rounds x {args.number} calls per client, medians"
    )
    show(heading, markdown(figures), targets(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
