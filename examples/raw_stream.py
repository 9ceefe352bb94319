"""Raw httpx streaming: events first, then an error mid-stream that must not resend the message.

Without a2a-sdk's client: a SendStreamingMessage with the text ``"stream-error"`` goes to an
embedded a2a-sdk peer's JSON-RPC endpoint on 127.0.0.1 over plain httpx, and `iter_events`
reads the server-sent events. The peer's agent reports the task submitted, then working, then
fails mid-stream. Each event is yielded as it comes; the failure after them raises
`RetryExhausted` with ``give_up == "stream_started"``: the message was already taken, so the
caller resumes with SubscribeToTask (or reads the task with GetTask), never resends it.

Run it with ``python examples/raw_stream.py``.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from a2a_client_errors import GiveUp, RetryExhausted, iter_events
from a2a_client_errors.testing.peer import EmbeddedPeer


def describe(event: dict[str, Any]) -> str:
    """One line about a stream event: its kind and the task state it carries."""
    for kind in ("task", "statusUpdate", "artifactUpdate", "message"):
        if kind in event:
            state = event[kind].get("status", {}).get("state", "")
            return f"{kind} {state}".strip()
    return str(sorted(event))


def stream_error(url: str) -> tuple[list[str], RetryExhausted | None]:
    """Send the streaming message; return the events read and how the stream ended."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendStreamingMessage",
        "params": {
            "message": {
                "messageId": str(uuid.uuid4()),
                "role": "ROLE_USER",
                "parts": [{"text": "stream-error"}],
            }
        },
    }
    headers = {"A2A-Version": "1.0", "Accept": "text/event-stream"}
    seen: list[str] = []
    with (
        httpx.Client(timeout=10) as client,
        client.stream("POST", url, json=body, headers=headers) as response,
    ):
        try:
            for event in iter_events(response, operation="SendStreamingMessage"):
                seen.append(describe(event))
                print(f"event {len(seen)}: {seen[-1]}")
        except RetryExhausted as interrupted:
            return seen, interrupted
    return seen, None


def main() -> None:
    """Start a peer, read the stream, stop the peer."""
    with EmbeddedPeer() as peer:
        seen, interrupted = stream_error(peer.jsonrpc_url)
    assert interrupted is not None, "the stream ended without an error"
    decision = interrupted.decision
    reason = decision.reason or "no reason (the stream closed)"
    print(f"then RetryExhausted: {reason}, give_up={decision.give_up}")
    assert seen, "no event came before the error"
    assert decision.give_up == GiveUp.STREAM_STARTED
    assert str(decision.give_up) == "stream_started"
    print("ok: events first, then a failure that says resume, do not resend")


if __name__ == "__main__":
    main()
