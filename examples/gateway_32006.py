"""A gateway whose peer answers GetTask with something that is not a Task: -32006, not -32603.

The gateway forwards its caller's GetTask to a peer agent. Here the peer sits behind a broken
proxy (an ``httpx.MockTransport`` in front of an embedded a2a-sdk peer on 127.0.0.1) that wraps
the Task the way SendMessage would, ``{"task": {...}}``: a successful JSON-RPC answer of the
wrong shape. ``Guard().call(..., operation="GetTask")`` judges it INVALID_AGENT_RESPONSE and
raises `ReportNeeded` at once (resending would not fix a broken peer). The gateway re-encodes
that failure for its own caller with `from_failure` and `to_jsonrpc`: code -32006 with an
ErrorInfo whose reason is INVALID_AGENT_RESPONSE.

Run it with ``python examples/gateway_32006.py``.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx

from a2a_client_errors import Guard, ReportNeeded, normalize, to_jsonrpc
from a2a_client_errors.server import from_failure
from a2a_client_errors.testing.peer import EmbeddedPeer

HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}


def broken_proxy(peer: EmbeddedPeer) -> httpx.MockTransport:
    """Forward to the peer; answer GetTask with the task wrapped as ``{"task": ...}``."""

    def handle(request: httpx.Request) -> httpx.Response:
        with httpx.Client(timeout=10) as upstream:
            answer = upstream.post(peer.jsonrpc_url, content=request.content, headers=HEADERS)
        body = answer.json()
        if json.loads(request.content).get("method") == "GetTask" and "result" in body:
            body["result"] = {"task": body["result"]}  # the bug: not a Task any more
        return httpx.Response(200, json=body)

    return httpx.MockTransport(handle)


def jsonrpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC request body."""
    return {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}


def gateway_get_task(client: httpx.Client, request: dict[str, Any]) -> dict[str, Any]:
    """The gateway's GetTask: forward under a Guard, re-encode a failure for the caller."""
    guard = Guard(sleep=lambda _: None)
    try:
        answer = guard.call(
            client.post,
            "/",
            json=jsonrpc("GetTask", request["params"]),
            headers=HEADERS,
            operation="GetTask",
            peer="peer-agent",
        )
    except ReportNeeded as failed:
        failure = failed
    else:
        result: dict[str, Any] = answer.json()["result"]
        return {"jsonrpc": "2.0", "id": request["id"], "result": result}
    error = failure.decision.error
    assert error is not None
    print(f"peer answer judged {failure.reason} after {failure.attempts} attempt(s)")
    print(f"  why: {error.message} (source {error.source.value})")
    assert failure.attempts == 1  # a broken peer is reported, never retried
    return to_jsonrpc(from_failure(failure), request_id=request["id"])


def main() -> None:
    """Start a peer, put the broken proxy in front of it, serve one GetTask through it."""
    with (
        EmbeddedPeer() as peer,
        httpx.Client(base_url="http://peer-agent", transport=broken_proxy(peer)) as client,
    ):
        message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "hi"}]}
        sent = client.post("/", json=jsonrpc("SendMessage", {"message": message}), headers=HEADERS)
        task_id = sent.json()["result"]["task"]["id"]
        print(f"created task {task_id} on the peer")

        reply = gateway_get_task(client, {"jsonrpc": "2.0", "id": 42, "params": {"id": task_id}})

    error = reply["error"]
    info = error["data"][0]
    print(f"the gateway tells its caller: code {error['code']}, {error['message']!r}")
    print(f"  ErrorInfo reason {info['reason']}, domain {info['domain']}, {info['metadata']}")
    assert reply["id"] == 42
    assert error["code"] == -32006
    assert info["reason"] == "INVALID_AGENT_RESPONSE"
    assert info["domain"] == "a2a-protocol.org"
    again = normalize(reply)
    assert again is not None
    assert again.reason == "INVALID_AGENT_RESPONSE"  # its own caller reads it back the same
    print("ok: a broken peer answer reached the gateway's caller as -32006, not -32603")


if __name__ == "__main__":
    main()
