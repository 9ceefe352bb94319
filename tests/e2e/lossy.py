"""What the exactly-once tests share: plans for the lossy proxy, a hook, messages, states.

The tests put `a2a_client_errors.testing.lossy.LossyProxy` between a client and a real a2a-sdk
agent, lose or drop answers by a plan, and count the tasks the agent holds before and after.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from a2a.types import a2a_pb2

from a2a_client_errors import Hook

if TYPE_CHECKING:
    from collections.abc import Callable

    from a2a_client_errors._lookup import Resolution
    from a2a_client_errors.hooks import UnknownOutcomeEvent
    from a2a_client_errors.testing.lossy import Plan, Seen
    from a2a_client_errors.testing.peer import EmbeddedPeer

VERSION = {"A2A-Version": "1.0"}
COMPLETED = "TASK_STATE_COMPLETED"
WORKING = "TASK_STATE_WORKING"
CANCELED = "TASK_STATE_CANCELED"


class Unknowns(Hook):
    """A hook that keeps every unknown outcome it is told about."""

    def __init__(self) -> None:
        self.events: list[UnknownOutcomeEvent] = []

    def on_unknown_outcome(self, event: UnknownOutcomeEvent) -> None:
        """Keep it."""
        self.events.append(event)

    @property
    def resolutions(self) -> list[Resolution]:
        """How each was resolved, in order."""
        return [event.resolution for event in self.events]


# --- what the proxy sees ----------------------------------------------------------------------


def is_send(seen: Seen) -> bool:
    """A SendMessage or SendStreamingMessage, on any HTTP binding."""
    return seen.is_send


def is_list_tasks(seen: Seen) -> bool:
    """A ListTasks: the JSON-RPC method, or ``GET .../tasks``."""
    route = seen.path.split("?", 1)[0]
    return seen.rpc_method == "ListTasks" or (seen.method == "GET" and route.endswith("/tasks"))


def is_cancel(seen: Seen) -> bool:
    """A CancelTask: the JSON-RPC method, or ``POST .../tasks/{id}:cancel``."""
    return seen.rpc_method == "CancelTask" or seen.path.endswith(":cancel")


def is_batch(seen: Seen) -> bool:
    """A JSON-RPC batch (a JSON array body)."""
    return seen.body.lstrip()[:1] == b"["


def script(*rules: tuple[Callable[[Seen], bool], str, int | None]) -> Plan:
    """A plan: each rule ``(matches, action, times)`` applies to the first ``times`` matches.

    The first rule that still applies to a request decides; ``times`` None applies for ever.
    Anything no rule takes is forwarded.
    """
    left = [times for _, _, times in rules]

    def plan(seen: Seen) -> str:
        for index, (matches, action, _) in enumerate(rules):
            count = left[index]
            if matches(seen) and (count is None or count > 0):
                if count is not None:
                    left[index] = count - 1
                return action
        return "forward"

    return plan


def sends_seen(seen: list[Seen]) -> int:
    """How many sends reached the proxy (forwarded or lost: each reached the agent)."""
    return sum(1 for request in seen if request.is_send)


# --- the agent's tasks ------------------------------------------------------------------------


def new_tasks(peer: EmbeddedPeer, before: list[str]) -> list[str]:
    """The tasks the agent holds now that it did not hold in ``before``."""
    known = set(before)
    return [task_id for task_id in peer.task_ids() if task_id not in known]


# --- messages and what came back --------------------------------------------------------------


def message(text: str = "hello", **fields: Any) -> Any:
    """An a2a-sdk user message with a fresh messageId."""
    return a2a_pb2.Message(
        role=a2a_pb2.Role.ROLE_USER,
        message_id=f"msg-{uuid.uuid4()}",
        parts=[a2a_pb2.Part(text=text)],
        **fields,
    )


def send_request(text: str = "hello", *, wait: bool = True, **fields: Any) -> Any:
    """A SendMessageRequest; ``wait=False`` asks the agent to answer at once."""
    configuration = a2a_pb2.SendMessageConfiguration(return_immediately=not wait)
    return a2a_pb2.SendMessageRequest(message=message(text, **fields), configuration=configuration)


def sdk_state(event: Any) -> str:
    """The task state an a2a-sdk StreamResponse carries (its payload's name otherwise)."""
    kind = event.WhichOneof("payload")
    if kind == "task":
        return str(a2a_pb2.TaskState.Name(event.task.status.state))
    if kind == "status_update":
        return str(a2a_pb2.TaskState.Name(event.status_update.status.state))
    return str(kind)


def sdk_task_ids(events: list[Any]) -> set[str]:
    """The task ids the events name."""
    ids = set()
    for event in events:
        kind = event.WhichOneof("payload")
        if kind == "task":
            ids.add(event.task.id)
        elif kind in ("status_update", "artifact_update"):
            ids.add(getattr(event, kind).task_id)
    return ids


def raw_message(text: str = "hello", **fields: Any) -> dict[str, Any]:
    """A JSON user message with a fresh messageId."""
    return {
        "messageId": f"msg-{uuid.uuid4()}",
        "role": "ROLE_USER",
        "parts": [{"text": text}],
        **fields,
    }


def raw_state(event: dict[str, Any]) -> str:
    """The task state of a JSON result or stream event (``task`` or ``statusUpdate``)."""
    holder = event.get("task") or event.get("statusUpdate") or event
    return str(holder.get("status", {}).get("state", ""))


def raw_task_ids(events: list[dict[str, Any]]) -> set[str]:
    """The task ids JSON results or stream events name."""
    ids = set()
    for event in events:
        if "task" in event:
            ids.add(event["task"]["id"])
        for update in ("statusUpdate", "artifactUpdate"):
            if update in event:
                ids.add(event[update]["taskId"])
    return ids
