"""The A2A TCK's sends under one messageId, against a real agent with and without `deduplicate`.

The A2A TCK (a2aproject/a2a-tck, branch ``1.0-dev``) gives CORE-SEND-001,
CORE-EXECUTION-MODE-001/002 and CORE-MULTI-001/001a/002/002a/003 one messageId,
``tck-complete-task-<run>``, suffixed with the binding (``tck/requirements/core_operations.py``,
``tck/transport/dispatch.py``), and a text, a contextId and a configuration of each one's own.
It sends them in that order, with no credentials, and asks each for a success (and for
MULTI-001a a contextId in the answer). Here the same sequence, in our own code, goes to
`EmbeddedPeer` (a2a-sdk's ``DefaultRequestHandler``) on JSON-RPC, HTTP+JSON and gRPC, wrapped
by `deduplicate` and not: every answer must be what the unwrapped agent answers. Then the same
message again, under the same messageId, is a resend: one executor run, the first task.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import grpc
import httpx
import pytest
from a2a.types import a2a_pb2, a2a_pb2_grpc
from google.protobuf.json_format import MessageToDict, ParseDict

from a2a_client_errors.testing.peer import EmbeddedPeer

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.e2e

TIMEOUT = 10.0
BINDINGS = ("jsonrpc", "http+json", "grpc")
TRANSPORT = {"jsonrpc": "jsonrpc", "http+json": "http_json", "grpc": "grpc"}
"""The TCK's name of each binding, the suffix it puts on the messageId."""


def tck_sends(run: str) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """The TCK's sends under ``tck-complete-task-<run>``: (requirement, message, configuration)."""

    def sent(text: str, context_id: str = "") -> dict[str, Any]:
        message: dict[str, Any] = {"role": "ROLE_USER", "parts": [{"text": text}]}
        if context_id:
            message["contextId"] = context_id
        return message

    return [
        ("CORE-SEND-001", sent("Hello from TCK"), {}),
        ("CORE-EXECUTION-MODE-001", sent("Blocking request"), {"returnImmediately": False}),
        ("CORE-EXECUTION-MODE-002", sent("Non-blocking request"), {"returnImmediately": True}),
        ("CORE-MULTI-001a", sent("Message without contextId"), {}),
        (
            "CORE-MULTI-002a",
            sent("Message with client contextId", f"tck-client-context-rejected-{run}"),
            {},
        ),
        ("CORE-MULTI-003", sent("New task request"), {}),
        ("CORE-MULTI-001", sent("Message without contextId"), {}),  # MULTI-001a's again
        ("CORE-MULTI-002", sent("Message with contextId", f"tck-client-context-001-{run}"), {}),
    ]


def send(
    peer: EmbeddedPeer, binding: str, message: dict[str, Any], configuration: dict[str, Any]
) -> dict[str, Any]:
    """SendMessage as the TCK sends it (no credentials): the answer as JSON, or its error."""
    params: dict[str, Any] = {"message": message}
    if configuration:
        params["configuration"] = configuration
    if binding == "grpc":
        request = ParseDict(params, a2a_pb2.SendMessageRequest())
        with grpc.insecure_channel(peer.grpc_target) as channel:
            stub: Any = a2a_pb2_grpc.A2AServiceStub(channel)  # type: ignore[no-untyped-call]
            try:
                answer = stub.SendMessage(
                    request, metadata=[("a2a-version", "1.0")], timeout=TIMEOUT
                )
            except grpc.RpcError as exc:
                return {"error": str(exc.code())}
        return MessageToDict(answer)
    with httpx.Client(timeout=TIMEOUT, headers={"A2A-Version": "1.0"}) as client:
        if binding == "jsonrpc":
            body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}
            payload: dict[str, Any] = client.post(peer.jsonrpc_url, json=body).json()
            return payload["result"] if "result" in payload else {"error": payload["error"]["code"]}
        response = client.post(peer.rest_url + "/message:send", json=params)
        return response.json() if response.status_code == 200 else {"error": response.status_code}


def shape(answer: dict[str, Any], sent: dict[str, Any]) -> dict[str, Any]:
    """What the TCK reads of an answer, and what must match between the two agents."""
    assert "task" in answer, answer  # every one of these sends makes a task
    task = answer["task"]
    return {
        "state": task["status"]["state"],
        "has id": bool(task.get("id")),
        "has contextId": bool(task.get("contextId")),
        "client contextId kept": task.get("contextId")
        == sent.get("contextId", task.get("contextId")),
        "user text": task["history"][0]["parts"][0]["text"],
    }


@pytest.fixture(scope="module")
def agents() -> Iterator[dict[str, EmbeddedPeer]]:
    """The same a2a-sdk agent twice, on the three bindings: as it is, and deduplicated."""
    with EmbeddedPeer() as plain, EmbeddedPeer(deduplicate=True) as deduplicated:
        yield {"plain": plain, "deduplicated": deduplicated}


@pytest.mark.parametrize("binding", BINDINGS)
def test_the_tck_sequence_is_answered_as_without_deduplicate(
    agents: dict[str, EmbeddedPeer], binding: str
) -> None:
    """Eight sends under one messageId: each answered as the unwrapped agent answers it."""
    run = uuid.uuid4().hex[:8]
    message_id = f"tck-complete-task-{run}-{TRANSPORT[binding]}"
    seen: dict[str, list[dict[str, Any]]] = {}
    tasks: dict[str, dict[str, str]] = {}
    for name, peer in agents.items():
        before = len(peer.task_ids())
        shapes, ids = [], {}
        for requirement, message, configuration in tck_sends(run):
            sent = {**message, "messageId": message_id}
            answer = send(peer, binding, sent, configuration)
            shapes.append(shape(answer, sent))
            ids[requirement] = answer["task"]["id"]
        assert len(peer.task_ids()) == before + len(set(ids.values())), name
        seen[name], tasks[name] = shapes, ids
    assert seen["deduplicated"] == seen["plain"]
    assert all(
        s["has id"] and s["has contextId"] and s["client contextId kept"] for s in seen["plain"]
    )
    # without deduplicate, a task per send; with it, the one send that repeats another's
    # message exactly (MULTI-001 after MULTI-001a) is a resend, answered with that task
    plain, deduplicated = tasks["plain"], tasks["deduplicated"]
    assert len(set(plain.values())) == len(plain)
    assert deduplicated["CORE-MULTI-001"] == deduplicated["CORE-MULTI-001a"]
    others = {r: t for r, t in deduplicated.items() if r != "CORE-MULTI-001"}
    assert len(set(others.values())) == len(others)


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_true_resend_of_a_tck_message_still_runs_once(
    agents: dict[str, EmbeddedPeer], binding: str
) -> None:
    """After the sequence, the blocking request again (same messageId, same message): its task."""
    peer = agents["deduplicated"]
    run = uuid.uuid4().hex[:8]
    message_id = f"tck-complete-task-{run}-{TRANSPORT[binding]}"
    answers = {}
    for requirement, message, configuration in tck_sends(run):
        answers[requirement] = send(
            peer, binding, {**message, "messageId": message_id}, configuration
        )
    runs = peer.executions.get(message_id, 0)
    _, blocking, configuration = tck_sends(run)[1]
    again = send(peer, binding, {**blocking, "messageId": message_id}, configuration)
    assert again["task"]["id"] == answers["CORE-EXECUTION-MODE-001"]["task"]["id"]
    assert peer.executions.get(message_id, 0) == runs == len(tck_sends(run)) - 1
