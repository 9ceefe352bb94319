"""Interface failover: an agent whose JSON-RPC endpoint is dead while HTTP+JSON serves (fake clock).

A real a2a-sdk client (built by its ClientFactory for a card listing JSON-RPC, then HTTP+JSON)
over an `httpx.MockTransport` agent, in fake time: calls arrive ``--rate`` per fake second, one
after another; each answer takes ``--latency`` fake seconds, and each attempt at the dead
endpoint ``--connect-timeout`` (a connect that times out: nothing sent). 10 s healthy, then
``--outage`` s with the JSON-RPC endpoint dead, then 130 s healthy (longer than the longest
cool-down). Strategies, each a
`guard_client` with the Guard's defaults:

* ``no failover``: ``failover=False``, with a breaker: calls to JSON-RPC fail (fast, once the
  breaker opened);
* ``failover``: the default, no breaker: every call tries JSON-RPC first, then HTTP+JSON;
* ``failover + breaker``: ``Guard(breaker=CircuitBreaker())``: once JSON-RPC's breaker opened,
  calls go straight to HTTP+JSON, and come back after the recovery.

Columns: calls served during the outage, attempts at the dead endpoint per call once the
breaker opened (or over the outage when there is none), the added latency per call during the
outage, and the seconds from the recovery until calls are served over JSON-RPC again.

    python bench/bench_failover.py [--rate 50] [--outage 60] [--seed 7] [--json [PATH]]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import random
import sys
from typing import Any

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.types import AgentCard, AgentInterface, a2a_pb2
from figures import Target, add_json_option, emit, show, table

from a2a_client_errors import CallFailed, CircuitBreaker, Guard
from a2a_client_errors.integrations.a2a_sdk import guard_client
from a2a_client_errors.testing import FakeClock

TAIL = 130.0
"""Fake seconds after the recovery: more than the longest cool-down (120 s)."""
TASK = {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}
CARD = AgentCard(
    name="agent",
    supported_interfaces=[
        AgentInterface(url="http://agent.test/jsonrpc", protocol_binding="JSONRPC"),
        AgentInterface(url="http://agent.test/rest", protocol_binding="HTTP+JSON"),
    ],
)


class Agent:
    """The simulated agent: JSON-RPC dead between two fake instants; HTTP+JSON always up."""

    def __init__(self, clock: FakeClock, args: argparse.Namespace, down: tuple[float, float]):
        self.clock = clock
        self.args = args
        self.down = down
        self.dead_attempts = 0
        self.served_by: list[tuple[float, str]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        """One request: refused after a connect timeout, or answered after the latency."""
        now = self.clock.now()
        jsonrpc = request.url.path.startswith("/jsonrpc")
        if jsonrpc and self.down[0] <= now < self.down[1]:
            self.dead_attempts += 1
            self.clock.advance(self.args.connect_timeout)
            raise httpx.ConnectTimeout("connect timed out", request=request)
        self.clock.advance(self.args.latency)
        self.served_by.append((now, "JSONRPC" if jsonrpc else "HTTP+JSON"))
        if jsonrpc:
            rpc = json.loads(request.content)
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": rpc["id"], "result": TASK})
        return httpx.Response(200, json=TASK)


async def run(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """One strategy through the whole run; its row."""
    clock = FakeClock()
    down = (10.0, 10.0 + args.outage)
    agent = Agent(clock, args, down)
    http = httpx.AsyncClient(transport=httpx.MockTransport(agent))
    config = ClientConfig(httpx_client=http, supported_protocol_bindings=["JSONRPC", "HTTP+JSON"])
    draws = random.Random(args.seed)
    breaker = None if name == "failover" else CircuitBreaker(clock=clock.now, random=draws.random)
    guard = Guard(breaker=breaker, clock=clock.now, sleep=clock.sleep, random=draws.random)
    client = guard_client(ClientFactory(config).create(CARD), guard, failover=name != "no failover")
    request = a2a_pb2.GetTaskRequest(id="t")
    end = down[1] + TAIL
    served = failed = outage_calls = 0
    outage_time = 0.0
    opened_at: float | None = None
    dead_at_open = 0
    try:
        tick = 0
        while (at := tick / args.rate) < end:
            tick += 1
            clock.advance(max(0.0, at - clock.now()))
            started = clock.now()
            in_outage = down[0] <= started < down[1]
            try:
                await client.get_task(request)
                ok = True
            except CallFailed:
                ok = False
            if (
                breaker is not None
                and opened_at is None
                and breaker.retry_in(client.interfaces[0].peer)
            ):
                opened_at, dead_at_open = clock.now(), agent.dead_attempts
            if in_outage:
                outage_calls += 1
                outage_time += clock.now() - started
                served += ok
                failed += not ok
    finally:
        await client.close()
        await http.aclose()
    after = [at for at, binding in agent.served_by if at >= down[1] and binding == "JSONRPC"]
    since = outage_calls if opened_at is None else max(1, round((down[1] - opened_at) * args.rate))
    dead = agent.dead_attempts - (0 if opened_at is None else dead_at_open)
    return {
        "strategy": name,
        "served_during_outage": served,
        "failed_during_outage": failed,
        "outage_calls": outage_calls,
        "dead_attempts_per_call": dead / since,
        "latency_per_call_ms": 1000 * (outage_time / outage_calls - args.latency),
        "back_on_jsonrpc_after_s": (after[0] - down[1]) if after else None,
    }


def markdown(figures: dict[str, Any]) -> list[str]:
    """The table: each strategy during the outage and after it."""
    return [
        *table(
            [
                "strategy",
                "served during the outage",
                "dead attempts per call",
                "added latency",
                "back on JSON-RPC after",
            ],
            (
                [
                    r["strategy"],
                    f"{r['served_during_outage']}/{r['outage_calls']}",
                    f"{r['dead_attempts_per_call']:.3f}",
                    f"{r['latency_per_call_ms']:.1f} ms",
                    "-"
                    if r["back_on_jsonrpc_after_s"] is None
                    else f"{r['back_on_jsonrpc_after_s']:.2f} s",
                ]
                for r in figures["rows"]
            ),
        ),
        "",
        f"-: not back on JSON-RPC within the {figures['tail_s']:g} s after the recovery.",
    ]


def targets(figures: dict[str, Any]) -> list[Target]:
    """None: design.md sets no number for failover; the table compares the strategies."""
    return []


def main(argv: list[str] | None = None) -> int:
    """Run the three strategies side by side; print the table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=50.0, help="calls per fake second")
    parser.add_argument("--outage", type=float, default=60.0, help="fake seconds JSON-RPC is dead")
    parser.add_argument("--latency", type=float, default=0.002, help="fake seconds per answer")
    parser.add_argument("--connect-timeout", type=float, default=0.5, help="per dead attempt")
    parser.add_argument("--seed", type=int, default=7, help="of the jitter draws")
    add_json_option(parser)
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)  # one line per failover is the point, not the output
    rows = [
        asyncio.run(run(name, args)) for name in ("no failover", "failover", "failover + breaker")
    ]
    figures = {"tail_s": TAIL, "rows": rows}
    if emit(args.json, figures):
        return 0
    heading = (
        f"JSON-RPC dead for {args.outage:g} s of {args.outage + 10 + TAIL:g}, HTTP+JSON up, "
        f"{args.rate:g} calls/s, connect timeout {args.connect_timeout:g} s (fake clock)"
    )
    show(heading, markdown(figures), targets(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
