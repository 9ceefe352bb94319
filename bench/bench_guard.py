"""What a Guard costs on the success path: guarded vs bare calls to a loopback peer.

A small HTTP/1.1 keep-alive server on 127.0.0.1, in its own process (as a real peer would be),
answers every POST with a JSON-RPC result (a completed task). Three clients send the same
SendMessage:

* bare: ``httpx.Client().post(...)``;
* transport: the same client with ``GuardTransport(Guard())`` mounted;
* guard.call: ``Guard().call(client.post, ...)`` around the bare client.

The clients take turns call by call (so drifts of the machine hit all of them alike); each call
is timed on its own, and the table reports the median per client and its ratio to bare.
Target: at most 1.05x.

    python bench/bench_guard.py [--rounds 10] [--number 300] [--json [PATH]]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import httpx
from figures import Target, add_json_option, emit, show, table

from a2a_client_errors import Guard, GuardTransport

if TYPE_CHECKING:
    from collections.abc import Callable

RESULT = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "task": {
                "id": "task-123",
                "contextId": "ctx-1",
                "status": {"state": "TASK_STATE_COMPLETED"},
                "artifacts": [{"artifactId": "a-1", "parts": [{"text": "done " * 100}]}],
            }
        },
    }
).encode()
REQUEST = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hello"}]}
        },
    }
).encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body leave at once, no delayed-ACK stall

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        self.rfile.read(length)
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(RESULT)))
        self.end_headers()
        self.wfile.write(RESULT)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


def _time(send: Callable[[], object]) -> float:
    start = time.perf_counter()
    send()
    return time.perf_counter() - start


def serve() -> None:
    """Serve until killed, printing the port first (the server process)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


def run(rounds: int, number: int) -> list[dict[str, Any]]:
    """Median seconds per call of each client, interleaved."""
    server = subprocess.Popen(  # noqa: S603 (this very script, by the interpreter running it)
        [sys.executable, __file__, "--serve"], stdout=subprocess.PIPE, text=True
    )
    assert server.stdout is not None
    port = int(server.stdout.readline())
    url = f"http://127.0.0.1:{port}/"
    headers = {"content-type": "application/json", "a2a-version": "1.0"}
    try:
        with (
            httpx.Client(timeout=10) as bare,
            httpx.Client(timeout=10, transport=GuardTransport(Guard())) as guarded,
        ):
            guard = Guard()
            clients: dict[str, Callable[[], object]] = {
                "bare httpx.Client": lambda: bare.post(url, content=REQUEST, headers=headers),
                "GuardTransport": lambda: guarded.post(url, content=REQUEST, headers=headers),
                "Guard.call(client.post)": lambda: guard.call(
                    bare.post, url, content=REQUEST, headers=headers, operation="SendMessage"
                ),
            }
            for send in clients.values():  # warm up connections and caches
                for _ in range(50):
                    send()
            samples: dict[str, list[float]] = {name: [] for name in clients}
            for _ in range(rounds * number):
                for name, send in clients.items():
                    samples[name].append(_time(send))
    finally:
        server.kill()
        server.wait(timeout=10)
    base = statistics.median(samples["bare httpx.Client"])
    return [
        {
            "client": name,
            "us_per_call": statistics.median(values) * 1e6,
            "ratio": statistics.median(values) / base,
        }
        for name, values in samples.items()
    ]


TARGET = 1.05
"""A guarded call on the success path: at most 5 % over the bare call (design.md; goal 2 %)."""


def markdown(figures: list[dict[str, Any]]) -> list[str]:
    """The table: each client's median call and its ratio to the bare one."""
    return table(
        ["client", "per call", "vs bare", "target"],
        (
            [r["client"], f"{r['us_per_call']:.1f} µs", f"{r['ratio']:.3f}x", f"≤ {TARGET}x"]
            for r in figures
        ),
        "lrrr",
    )


def targets(figures: list[dict[str, Any]]) -> list[Target]:
    """Each guarded client at most 1.05x the bare one."""
    return [
        Target(
            f"`{r['client']}`: ≤ {TARGET}x the bare call",
            f"{r['ratio']:.3f}x",
            r["ratio"] <= TARGET,
        )
        for r in figures[1:]
    ]


def main() -> int:
    """Run the benchmark and print the table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--number", type=int, default=300)
    add_json_option(parser)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return 0
    figures = run(args.rounds, args.number)
    if emit(args.json, figures):
        return 0
    python = sys.version.split()[0]
    heading = f"Python {python}, {args.rounds} rounds x {args.number} calls, medians"
    show(heading, markdown(figures), targets(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
