"""Task outcomes: what a task that came back in a *successful* call means. Never an error.

A task in FAILED or REJECTED came back in a call that succeeded: it is the agent's answer, and
resending the message would create a second task. `task_outcome` reads the state of whatever
a call returned (an a2a-sdk ``Task``, ``StreamResponse`` or ``SendMessageResponse``; a JSON
task, a JSON-RPC result, an HTTP+JSON body; an ``httpx.Response``) and says what it means,
without turning it into a protocol error:

    >>> from a2a_client_errors._outcomes import task_outcome
    >>> outcome = task_outcome({"id": "t-1", "status": {"state": "TASK_STATE_REJECTED"}})
    >>> outcome.state, outcome.is_terminal, outcome.resend_creates_a_new_task
    ('TASK_STATE_REJECTED', True, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import httpx

from a2a_client_errors._parsing import parse_json
from a2a_client_errors._reasons import (
    ACTIVE_STATES,
    INTERRUPTED_STATES,
    TERMINAL_STATES,
    canonical_task_state,
)
from a2a_client_errors._wire import cut

__all__ = ["TaskOutcome", "task_outcome"]

_MAX_BODY: Final = 32 * 1024 * 1024  # as `Limits.max_body`: a larger body is not read

_NEXT: Final = {
    "TASK_STATE_COMPLETED": "done: read the artifacts",
    "TASK_STATE_FAILED": "the task failed: a result, not an error; a retry needs a new task",
    "TASK_STATE_REJECTED": "the agent declined the task: a result; ask differently, or elsewhere",
    "TASK_STATE_CANCELED": "the task was canceled",
    "TASK_STATE_INPUT_REQUIRED": "the agent waits for input: reply in the same task",
    "TASK_STATE_AUTH_REQUIRED": (
        "the agent waits for credentials for this task (not an HTTP 401): provide them in the "
        "task or out of band"
    ),
    "TASK_STATE_SUBMITTED": "still running: wait for events, or poll with GetTask",
    "TASK_STATE_WORKING": "still running: wait for events, or poll with GetTask",
}


@dataclass(frozen=True, slots=True)
class TaskOutcome:
    """What a returned task's state means for an orchestrator.

    Attributes:
        state: the 1.0 state name (``TASK_STATE_FAILED``, ...); 0.3 names are translated.
        task_id: the task's id, if the answer named it.
        context_id: the task's context, where a follow-up task belongs.
        message: the text of the status message, if any (the agent's words: untrusted, for
            humans).
    """

    state: str
    task_id: str | None = None
    context_id: str | None = None
    message: str | None = None

    @property
    def is_terminal(self) -> bool:
        """COMPLETED, FAILED, CANCELED or REJECTED: the task will never change again."""
        return self.state in TERMINAL_STATES

    @property
    def is_interrupted(self) -> bool:
        """INPUT_REQUIRED or AUTH_REQUIRED: the task waits for the client."""
        return self.state in INTERRUPTED_STATES

    @property
    def is_final(self) -> bool:
        """Terminal or interrupted: a stream about the task ends here, polling can stop."""
        return self.is_terminal or self.is_interrupted

    @property
    def is_active(self) -> bool:
        """SUBMITTED or WORKING: the task is still running."""
        return self.state in ACTIVE_STATES

    @property
    def succeeded(self) -> bool:
        """COMPLETED."""
        return self.state == "TASK_STATE_COMPLETED"

    @property
    def failed(self) -> bool:
        """FAILED or REJECTED: the agent's answer was no. A result, not a call error."""
        return self.state in ("TASK_STATE_FAILED", "TASK_STATE_REJECTED")

    @property
    def resend_creates_a_new_task(self) -> bool:
        """Whether sending the message again would start a second task (it is terminal)."""
        return self.is_terminal

    @property
    def next_step(self) -> str:
        """What an orchestrator usually does next, in words."""
        return _NEXT.get(self.state, "the state is unknown: read the task with GetTask")


def _text_of(message: Any) -> str | None:
    if isinstance(message, dict):
        parts = message.get("parts")
        if isinstance(parts, list):
            texts = [
                p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)
            ]
            return "\n".join(texts) or None
        return None
    parts = getattr(message, "parts", None)
    if parts is None:
        return None
    # a2a-sdk 0.3 wraps each part (``Part(root=TextPart(...))``); 1.x does not.
    texts = [
        str(text) for part in parts if (text := getattr(getattr(part, "root", part), "text", ""))
    ]
    return "\n".join(texts) or None


def _from_json(value: Any) -> TaskOutcome | None:
    if not isinstance(value, dict):
        return None
    if "result" in value and "jsonrpc" in value:
        return _from_json(value["result"])
    for key in ("task", "statusUpdate", "status_update"):
        if isinstance(value.get(key), dict):
            return _from_json(value[key])
    status = value.get("status")
    if not isinstance(status, dict) or not isinstance(status.get("state"), str):
        return None
    task_id = value.get("id", value.get("taskId"))
    context_id = value.get("contextId")
    return TaskOutcome(
        state=cut(canonical_task_state(status["state"])),
        task_id=cut(task_id) if isinstance(task_id, str) else None,
        context_id=cut(context_id) if isinstance(context_id, str) else None,
        message=_text_of(status.get("message")),
    )


def _from_object(value: Any) -> TaskOutcome | None:
    """A task of an SDK's types: a protobuf message (a2a-sdk 1.x) or a pydantic model (0.3).

    a2a-sdk 0.3's client yields ``(task, update)`` pairs, the task kept up to date: the task
    tells the state. Its states are strings (``"completed"``), 1.x's enum numbers.
    """
    if isinstance(value, tuple):
        return _from_object(value[0]) if value else None
    state = getattr(getattr(value, "status", None), "state", None)
    if isinstance(state, str):  # a2a-sdk 0.3 (a str enum), or another SDK's models
        raw = getattr(state, "value", state)
        status = value.status
        task_id = getattr(value, "task_id", None) or getattr(value, "id", None)  # update, task
        return TaskOutcome(
            state=cut(canonical_task_state(str(raw))),
            task_id=cut(task_id) if isinstance(task_id, str) and task_id else None,
            context_id=getattr(value, "context_id", None) or None,
            message=_text_of(getattr(status, "message", None)),
        )
    return _from_proto(value)


def _from_proto(value: Any) -> TaskOutcome | None:
    which = getattr(value, "WhichOneof", None)
    if which is not None:
        try:
            kind = which("payload")  # StreamResponse, SendMessageResponse
        except ValueError:
            kind = None  # a Task, or a status update, itself
        else:
            if kind in ("task", "status_update"):
                return _from_proto(getattr(value, kind))
            return None  # a Message, an artifact update: no task state
    status = getattr(value, "status", None)
    state = getattr(status, "state", None)
    if not isinstance(state, int):
        return None
    from a2a.types import a2a_pb2  # noqa: PLC0415 (a proto answer means a2a-sdk is there)

    try:
        name = str(a2a_pb2.TaskState.Name(state))
    except ValueError:
        name = "TASK_STATE_UNSPECIFIED"
    task_id = getattr(value, "id", None) or getattr(value, "task_id", None)
    return TaskOutcome(
        state=name,
        task_id=task_id or None,
        context_id=getattr(value, "context_id", None) or None,
        message=_text_of(getattr(status, "message", None)),
    )


def task_outcome(answer: object) -> TaskOutcome | None:
    """The outcome of the task a successful call returned, or None when it returned no task.

    Never raises. A Message (not a task), an error, or anything unreadable gives None.
    """
    try:
        if isinstance(answer, httpx.Response):
            if not 200 <= answer.status_code < 300:
                return None
            return _from_json(parse_json(answer.content))
        if isinstance(answer, dict):
            return _from_json(answer)
        if isinstance(answer, bytes | bytearray | str):  # every form of a body is one input
            if len(answer) > _MAX_BODY:
                return None
            raw = answer.encode("utf-8", "surrogatepass") if isinstance(answer, str) else answer
            return _from_json(parse_json(bytes(raw)))
        return _from_object(answer)
    except Exception:  # the promise: never raise, whatever the answer
        return None
