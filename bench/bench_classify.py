"""How much `classify(httpx.Response)` costs next to a bare ``json.loads`` + dict walk.

The reference is the sketch every A2A client writes by hand: parse the body, look for an
ErrorInfo in ``error.data``/``error.details``, map its reason (or the code) to an action. It
reads no headers, checks no envelope, keeps no details and never survives a bad body, so it is a
floor, not a competitor.

Both run on the same pre-built responses, in one process, interleaved round by round; the table
reports the median time per call of each, their ratio, and the ratio of the best rounds (the
least disturbed by the machine). The last column times the whole parse alone (pydantic-core's
``from_json``, called as `classify` calls it): the floor under `classify` on an error body,
which it parses once, whole; the rest of its time is its reading of what the parse built. A
success body's envelope is read without building the rest, for less than the whole parse.
Targets (design.md, "Numbers we hold ourselves to"): at most 0.75x the reference on error
bodies, 0.5x on success bodies.

    python bench/bench_classify.py [--rounds 15] [--number 20000] [--json [PATH]]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import TYPE_CHECKING, Any

import httpx
from figures import Target, add_json_option, emit, show, table
from pydantic_core import from_json

from a2a_client_errors import classify

if TYPE_CHECKING:
    from collections.abc import Callable

ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
ACTIONS = {
    "TASK_NOT_FOUND": "reconcile",
    "TASK_NOT_CANCELABLE": "reconcile",
    "UNSUPPORTED_OPERATION": "degrade",
    "VERSION_NOT_SUPPORTED": "fix_request",
}
CODES = {-32001: "reconcile", -32002: "reconcile", -32004: "degrade", -32603: "retry"}
ERROR_TARGET = 0.75
SUCCESS_TARGET = 0.5


def reference(response: httpx.Response) -> str:
    """The hand-written sketch: json.loads and a dict walk."""
    body: Any = json.loads(response.content)
    error = body.get("error")
    if error is None:
        return "ok"
    for detail in error.get("data") or error.get("details") or ():
        if detail.get("@type") == ERROR_INFO and detail.get("domain") == "a2a-protocol.org":
            return ACTIONS.get(detail.get("reason"), "report")
    return CODES.get(error.get("code"), "report")


def _info(reason: str) -> dict[str, Any]:
    return {
        "@type": ERROR_INFO,
        "reason": reason,
        "domain": "a2a-protocol.org",
        "metadata": {"taskId": "task-123", "timestamp": "2025-11-09T10:30:00.000Z"},
    }


def _task(state: str) -> dict[str, Any]:
    return {
        "id": "task-123",
        "contextId": "ctx-456",
        "status": {
            "state": state,
            "timestamp": "2025-11-09T10:30:00.000Z",
            "message": {
                "messageId": "m-2",
                "role": "ROLE_AGENT",
                "parts": [{"text": "Here is the itinerary you asked for."}],
            },
        },
        "artifacts": [
            {
                "artifactId": "a-1",
                "name": "itinerary",
                "parts": [{"text": "Day 1: arrive, check in. Day 2: museum, dinner. " * 8}],
            }
        ],
        "history": [
            {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "Plan my trip."}]}
        ],
    }


def cases() -> list[tuple[str, bool, httpx.Response]]:
    """(name, is_error, response) for every body the benchmark times."""
    json_ct = {"content-type": "application/json"}
    return [
        (
            "JSON-RPC -32001 + ErrorInfo (HTTP 200)",
            True,
            httpx.Response(
                200,
                headers=json_ct,
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "error": {
                        "code": -32001,
                        "message": "Task not found",
                        "data": [_info("TASK_NOT_FOUND")],
                    },
                },
            ),
        ),
        (
            "JSON-RPC -32603, no data (HTTP 200)",
            True,
            httpx.Response(
                200,
                headers=json_ct,
                json={"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "boom"}},
            ),
        ),
        (
            "HTTP+JSON 400 Status + ErrorInfo",
            True,
            httpx.Response(
                400,
                headers={"content-type": "application/a2a+json"},
                json={
                    "error": {
                        "code": 400,
                        "status": "FAILED_PRECONDITION",
                        "message": "Task cannot be canceled",
                        "details": [_info("TASK_NOT_CANCELABLE")],
                    }
                },
            ),
        ),
        (
            "JSON-RPC result: task FAILED (HTTP 200)",
            False,
            httpx.Response(
                200,
                headers=json_ct,
                json={"jsonrpc": "2.0", "id": 1, "result": {"task": _task("TASK_STATE_FAILED")}},
            ),
        ),
        (
            "HTTP+JSON 200 task COMPLETED",
            False,
            httpx.Response(200, headers=json_ct, json=_task("TASK_STATE_COMPLETED")),
        ),
    ]


def _time(func: Callable[[httpx.Response], object], response: httpx.Response, number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        func(response)
    return (time.perf_counter() - start) / number


def _classify(response: httpx.Response) -> object:
    return classify(response)


def _parse(response: httpx.Response) -> object:
    """The parse `classify` makes of a body, alone (its parser, its options)."""
    return from_json(response.content, cache_strings="keys")


def run(rounds: int, number: int) -> list[dict[str, Any]]:
    """Time the three on every case, interleaved; medians per call in microseconds."""
    results = []
    for name, is_error, response in cases():
        ours: list[float] = []
        theirs: list[float] = []
        parses: list[float] = []
        for _ in range(rounds):
            theirs.append(_time(reference, response, number))
            ours.append(_time(_classify, response, number))
            parses.append(_time(_parse, response, number))
        mine, ref = statistics.median(ours), statistics.median(theirs)
        parse = statistics.median(parses)
        results.append(
            {
                "case": name,
                "error": is_error,
                "bytes": len(response.content),
                "reference_us": ref * 1e6,
                "classify_us": mine * 1e6,
                "parse_us": parse * 1e6,
                "parse_ratio": parse / ref,
                "ratio": mine / ref,
                "best_ratio": min(ours) / min(theirs),
                "target": ERROR_TARGET if is_error else SUCCESS_TARGET,
            }
        )
    return results


def markdown(figures: list[dict[str, Any]]) -> list[str]:
    """The table: each body, the timings, classify's ratio and its target, the parse's ratio."""
    return table(
        [
            "body",
            "bytes",
            "json.loads + walk",
            "classify",
            "ratio",
            "best-of ratio",
            "target",
            "the parse alone",
        ],
        (
            [
                r["case"],
                r["bytes"],
                f"{r['reference_us']:.2f} µs",
                f"{r['classify_us']:.2f} µs",
                f"{r['ratio']:.2f}x",
                f"{r['best_ratio']:.2f}x",
                f"≤ {r['target']}x",
                f"{r['parse_us']:.2f} µs ({r['parse_ratio']:.2f}x)",
            ]
            for r in figures
        ),
    )


def targets(figures: list[dict[str, Any]]) -> list[Target]:
    """Error bodies at most 0.75x the reference, success bodies at most 0.5x (medians)."""
    found = []
    for error, what in (
        (True, f"error bodies: ≤ {ERROR_TARGET}x a json.loads + dict walk"),
        (False, f"success bodies: ≤ {SUCCESS_TARGET}x"),
    ):
        rows = [r for r in figures if r["error"] is error]
        if rows:
            worst = max(rows, key=lambda r: r["ratio"])
            measured = f"{worst['ratio']:.2f}x at worst ({worst['case']})"
            found.append(Target(what, measured, worst["ratio"] <= worst["target"]))
    return found


def main() -> int:
    """Run the benchmark and print the table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--number", type=int, default=20_000)
    add_json_option(parser)
    args = parser.parse_args()
    figures = run(args.rounds, args.number)
    if emit(args.json, figures):
        return 0
    python = sys.version.split()[0]
    heading = f"Python {python}, {args.rounds} rounds x {args.number} calls, medians"
    show(heading, markdown(figures), targets(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
