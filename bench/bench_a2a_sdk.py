"""What `guard_client` costs on the success path: guarded vs bare a2a-sdk calls on loopback.

A real a2a-sdk server (`EmbeddedPeer`, JSON-RPC binding on 127.0.0.1, in a background thread
with its own event loop) answers two operations:

* GetTask of an existing (completed) task;
* SendMessage "hello" (non-streaming: one request, one completed task back).

Nagle's algorithm is turned off on the peer's listening socket first (see `_no_delay`).

One a2a-sdk ``Client`` (``ClientFactory``, JSON-RPC only) is called bare and through
``guard_client(client)``. The two take turns call by call (so drifts of the machine hit both
alike; which of the two goes first alternates); each call is timed on its own, and the table
reports, per operation, the median of each, their ratio and the microseconds the guard adds.
Target: at most 1.05x.

    python bench/bench_a2a_sdk.py [--rounds 10] [--number 150] [--json [PATH]]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from typing import TYPE_CHECKING, Any

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2
from a2a.utils.constants import TransportProtocol
from figures import Target, add_json_option, emit, show, table

from a2a_client_errors.integrations.a2a_sdk import guard_client
from a2a_client_errors.testing.peer import EmbeddedPeer

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

WARMUP = 50
"""Untimed calls per client and operation before measuring."""


def _hello() -> a2a_pb2.SendMessageRequest:
    # The same message_id every time: the guard assigns one only when it is missing, so both
    # clients send identical requests.
    return a2a_pb2.SendMessageRequest(
        message=a2a_pb2.Message(
            message_id="bench-hello", role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text="hello")]
        )
    )


async def _send(client: Any) -> list[Any]:
    return [event async for event in client.send_message(_hello())]


async def _measure(peer: EmbeddedPeer, calls: int) -> dict[str, dict[str, list[float]]]:
    """Seconds per call, by operation and client, the clients taking turns call by call."""
    http = httpx.AsyncClient(timeout=10, headers={"A2A-Version": "1.0"})
    config = ClientConfig(
        streaming=False,
        httpx_client=http,
        supported_protocol_bindings=[TransportProtocol.JSONRPC],
    )
    bare = ClientFactory(config).create(peer.agent_card)
    guarded = guard_client(bare)
    try:
        created = await _send(bare)
        task_id = created[0].task.id
        get = a2a_pb2.GetTaskRequest(id=task_id)
        operations: dict[str, dict[str, Callable[[], Awaitable[object]]]] = {
            "GetTask": {
                "bare": lambda: bare.get_task(get),
                "guarded": lambda: guarded.get_task(get),
            },
            "SendMessage": {
                "bare": lambda: _send(bare),
                "guarded": lambda: _send(guarded),
            },
        }
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
    finally:
        await bare.close()
        await http.aclose()
    return samples


def run(rounds: int, number: int) -> list[dict[str, Any]]:
    """Median microseconds per call, bare and guarded, for each operation."""
    with EmbeddedPeer(streaming=False, push_notifications=False) as peer:
        samples = asyncio.run(_measure(peer, rounds * number))
    results = []
    for op, clients in samples.items():
        bare = statistics.median(clients["bare"]) * 1e6
        guarded = statistics.median(clients["guarded"]) * 1e6
        results.append(
            {
                "operation": op,
                "calls": len(clients["bare"]),
                "bare_us": bare,
                "guarded_us": guarded,
                "added_us": guarded - bare,
                "ratio": guarded / bare,
            }
        )
    return results


TARGET = 1.05
"""A guarded call on the success path: at most 5 % over the bare call (design.md)."""


def markdown(figures: list[dict[str, Any]]) -> list[str]:
    """The table: each operation bare and guarded, the time added and the ratio."""
    return table(
        ["operation", "bare", "`guard_client`", "added", "vs bare", "target"],
        (
            [
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
            f"{r['operation']} through `guard_client`: ≤ {TARGET}x the bare client",
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
    add_json_option(parser)
    args = parser.parse_args()
    figures = run(args.rounds, args.number)
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
