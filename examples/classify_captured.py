"""Classify captured A2A error responses, one per wire shape, and print the decisions.

Run it with ``python examples/classify_captured.py``.
"""

from __future__ import annotations

import httpx

from a2a_client_errors import classify

ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"

CAPTURES: dict[str, object] = {
    "JSON-RPC, ErrorInfo in data (HTTP 200)": httpx.Response(
        200,
        json={
            "jsonrpc": "2.0",
            "id": 7,
            "error": {
                "code": -32002,
                "message": "Task cannot be canceled",
                "data": [
                    {
                        "@type": ERROR_INFO,
                        "reason": "TASK_NOT_CANCELABLE",
                        "domain": "a2a-protocol.org",
                        "metadata": {"taskId": "task-123"},
                    }
                ],
            },
        },
    ),
    "HTTP+JSON google.rpc.Status, 1.0.1 table": httpx.Response(
        400,
        headers={"content-type": "application/a2a+json"},
        json={
            "error": {
                "code": 400,
                "status": "FAILED_PRECONDITION",
                "message": "Streaming is not supported",
                "details": [
                    {"@type": "type.googleapis.com/google.rpc.DebugInfo", "detail": "-"},
                    {
                        "@type": ERROR_INFO,
                        "reason": "UNSUPPORTED_OPERATION",
                        "domain": "a2a-protocol.org",
                    },
                ],
            }
        },
    ),
    "problem+json from a pre-1.0 server (spec section 6.4)": httpx.Response(
        400,
        headers={"content-type": "application/problem+json"},
        json={
            "type": "https://a2a-protocol.org/errors/version-not-supported",
            "title": "Protocol Version Not Supported",
            "status": 400,
            "detail": "The requested A2A protocol version 0.5 is not supported",
            "supportedVersions": ["0.3"],
        },
    ),
    "a bare 409 from a 1.0.0 peer": httpx.Response(409),
    "a gateway's 503 with Retry-After": httpx.Response(
        503, headers={"retry-after": "2"}, text="<html>busy</html>"
    ),
    "an SSE error event's data": {
        "error": {"code": 500, "status": "INTERNAL", "message": "the agent crashed"}
    },
    "a FAILED task in a successful call": httpx.Response(
        200,
        json={
            "jsonrpc": "2.0",
            "id": 8,
            "result": {"task": {"id": "t-9", "status": {"state": "TASK_STATE_FAILED"}}},
        },
    ),
    "a connection refused": httpx.ConnectError("connection refused"),
}


def main() -> None:
    """Print one line per capture: the action, the reason and the signal that decided."""
    for name, capture in CAPTURES.items():
        decision = classify(capture)
        error = decision.error
        source = error.source.value if error is not None else "-"
        hint = f", retry after {decision.retry_after:g}s" if decision.retry_after else ""
        print(f"{name:<55} {decision.action.value:<12} {decision.reason or '-'} ({source}{hint})")


if __name__ == "__main__":
    main()
