"""The operations of A2A, written once: their names, routes and answers in A2A 1.0 and 0.3.

One row per operation (`Operation`) in `OPERATIONS`: its 1.0 name (the JSON-RPC method and the
gRPC rpc, spec §5.3, §9.1), its 0.3 JSON-RPC method and gRPC rpc (v0.3.0 §3.5.6), its HTTP+JSON
route in 1.0 (§11.3; the proto's ``google.api.http`` bindings) and in 0.3 (under ``/v1``, the
card at ``/v1/card``), its 1.0 proto messages (package ``lf.a2a.v1``), the shape of its
successful answer, and whether it creates work. Every module that needs one of these facts
reads it here; the lookups below are built from the rows at import:

* `OPERATION_OF_METHOD`: a JSON-RPC method (1.0 or 0.3) to its operation;
* `rest_operation`: an HTTP+JSON verb and path to its operation;
* `OPERATION_OF_LEGACY_RPC`: a 0.3 gRPC rpc to its operation;
* `rest_request`: an operation and its params to the HTTP+JSON request that carries them.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from string import Formatter
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "BY_NAME",
    "GRPC_SERVICE",
    "LEGACY_GRPC_SERVICE",
    "OPERATIONS",
    "OPERATION_OF_LEGACY_RPC",
    "OPERATION_OF_METHOD",
    "STREAMING_OPERATIONS",
    "WORK_OPERATIONS",
    "Operation",
    "ResultShape",
    "params_of",
    "rest_operation",
    "rest_request",
]

GRPC_SERVICE: Final = "lf.a2a.v1.A2AService"
"""The gRPC service of A2A 1.0 (``/lf.a2a.v1.A2AService/<rpc>``)."""
LEGACY_GRPC_SERVICE: Final = "a2a.v1.A2AService"
"""The gRPC service of A2A 0.3 (and of the 1.0 release candidates)."""


class ResultShape(str, enum.Enum):
    """What an operation answers when it succeeds (the value describes it, for messages)."""

    TASK_OR_MESSAGE = "a Task or a Message"
    """1.0 ``{"task": ...}`` or ``{"message": ...}``; 0.3 the Task or the Message itself."""
    STREAM = "a stream of events"
    TASK = "a Task"
    TASK_LIST = "a list of tasks"
    PUSH_CONFIG = "a push configuration"
    PUSH_CONFIG_LIST = "a list of push configurations"
    EMPTY = "an empty answer"
    AGENT_CARD = "an agent card"


@dataclass(frozen=True, slots=True)
class Operation:
    """One A2A operation, as each binding and version names it.

    Attributes:
        name: the 1.0 name: its JSON-RPC method and its gRPC rpc.
        legacy_method: its 0.3 JSON-RPC method.
        verbs: the HTTP verbs of its HTTP+JSON route; the first is the one sent.
        route: its 1.0 HTTP+JSON path, placeholders named as the request's JSON fields. It is
            served under a tenant (``/{tenant}/...``) too; any prefix of up to two segments
            (a tenant, ``/v1``) is read as one.
        legacy_route: its 0.3 HTTP+JSON path (None: 0.3 had no such route).
        legacy_rpc: its 0.3 gRPC rpc (None: 0.3 had no such rpc).
        grpc_request: the 1.0 proto message of its request.
        grpc_response: the 1.0 proto message of its answer (of each event, for a stream).
        result: the shape of its successful answer.
        creates_work: whether it may make a task: a blind resend may make a second one.

    """

    name: str
    legacy_method: str
    verbs: tuple[str, ...]
    route: str
    legacy_route: str | None
    legacy_rpc: str | None
    grpc_request: str
    grpc_response: str
    result: ResultShape
    creates_work: bool = False

    @property
    def streams(self) -> bool:
        """Whether it answers with a stream of events."""
        return self.result is ResultShape.STREAM

    @property
    def names_task(self) -> bool:
        """Whether its route names a task (a web server's 404 for the others cannot be one)."""
        return "/tasks/{" in self.route

    def path(self, **values: str) -> str:
        """Its 1.0 route with ``values`` in its placeholders, as given (not quoted)."""
        return self.route.format_map(values)


_S = ResultShape

# fmt: off
OPERATIONS: Final[tuple[Operation, ...]] = (
    # 1.0 name, 0.3 method; HTTP verbs, 1.0 route, 0.3 route; 0.3 rpc, 1.0 request, response
    Operation("SendMessage", "message/send",
              ("POST",), "/message:send", "/v1/message:send",
              "SendMessage", "SendMessageRequest", "SendMessageResponse",
              _S.TASK_OR_MESSAGE, creates_work=True),
    Operation("SendStreamingMessage", "message/stream",
              ("POST",), "/message:stream", "/v1/message:stream",
              "SendStreamingMessage", "SendMessageRequest", "StreamResponse",
              _S.STREAM, creates_work=True),
    Operation("GetTask", "tasks/get",
              ("GET",), "/tasks/{id}", "/v1/tasks/{id}",
              "GetTask", "GetTaskRequest", "Task",
              _S.TASK),
    # 0.3.0 has no ListTasks (no route, no rpc): "tasks/list" is read as it, never sent.
    Operation("ListTasks", "tasks/list",
              ("GET",), "/tasks", None,
              None, "ListTasksRequest", "ListTasksResponse",
              _S.TASK_LIST),
    Operation("CancelTask", "tasks/cancel",
              ("POST",), "/tasks/{id}:cancel", "/v1/tasks/{id}:cancel",
              "CancelTask", "CancelTaskRequest", "Task",
              _S.TASK),
    # POST in the spec's text (§11.3.2), GET in the proto's binding: both are served.
    Operation("SubscribeToTask", "tasks/resubscribe",
              ("POST", "GET"), "/tasks/{id}:subscribe", "/v1/tasks/{id}:subscribe",
              "TaskSubscription", "SubscribeToTaskRequest", "StreamResponse",
              _S.STREAM),
    Operation("CreateTaskPushNotificationConfig", "tasks/pushNotificationConfig/set",
              ("POST",), "/tasks/{taskId}/pushNotificationConfigs",
              "/v1/tasks/{taskId}/pushNotificationConfigs",
              "CreateTaskPushNotificationConfig", "TaskPushNotificationConfig",
              "TaskPushNotificationConfig",
              _S.PUSH_CONFIG),
    Operation("GetTaskPushNotificationConfig", "tasks/pushNotificationConfig/get",
              ("GET",), "/tasks/{taskId}/pushNotificationConfigs/{id}",
              "/v1/tasks/{taskId}/pushNotificationConfigs/{id}",
              "GetTaskPushNotificationConfig", "GetTaskPushNotificationConfigRequest",
              "TaskPushNotificationConfig",
              _S.PUSH_CONFIG),
    Operation("ListTaskPushNotificationConfigs", "tasks/pushNotificationConfig/list",
              ("GET",), "/tasks/{taskId}/pushNotificationConfigs",
              "/v1/tasks/{taskId}/pushNotificationConfigs",
              "ListTaskPushNotificationConfig", "ListTaskPushNotificationConfigsRequest",
              "ListTaskPushNotificationConfigsResponse",
              _S.PUSH_CONFIG_LIST),
    Operation("DeleteTaskPushNotificationConfig", "tasks/pushNotificationConfig/delete",
              ("DELETE",), "/tasks/{taskId}/pushNotificationConfigs/{id}",
              "/v1/tasks/{taskId}/pushNotificationConfigs/{id}",
              "DeleteTaskPushNotificationConfig", "DeleteTaskPushNotificationConfigRequest",
              "google.protobuf.Empty",
              _S.EMPTY),
    Operation("GetExtendedAgentCard", "agent/getAuthenticatedExtendedCard",
              ("GET",), "/extendedAgentCard", "/v1/card",
              "GetAgentCard", "GetExtendedAgentCardRequest", "AgentCard",
              _S.AGENT_CARD),
)
# fmt: on

BY_NAME: Final[Mapping[str, Operation]] = MappingProxyType({op.name: op for op in OPERATIONS})
"""Each operation by its 1.0 name."""

OPERATION_OF_METHOD: Final[Mapping[str, str]] = MappingProxyType(
    {method: op.name for op in OPERATIONS for method in (op.name, op.legacy_method)}
)
"""The operation (its 1.0 name) of each JSON-RPC method, 1.0 and 0.3."""

OPERATION_OF_LEGACY_RPC: Final[Mapping[str, str]] = MappingProxyType(
    {op.legacy_rpc: op.name for op in OPERATIONS if op.legacy_rpc is not None}
)
"""The operation (its 1.0 name) of each gRPC rpc of the 0.3 service."""

WORK_OPERATIONS: Final = frozenset(op.name for op in OPERATIONS if op.creates_work)
"""The operations that create work: a blind resend of one may make a second task."""

STREAMING_OPERATIONS: Final = frozenset(op.name for op in OPERATIONS if op.streams)
"""The operations that answer with a stream of events."""


# --- HTTP+JSON routes --------------------------------------------------------------------------

_MAX_PREFIX: Final = 2
"""Segments read as a prefix before a 1.0 route: a tenant, ``/v1``, ``/tenants/<name>``."""


_ID: Final = "[^/]+"


def _piece(segment: str) -> str:
    """A route's segment as a regex: ``{id}`` any segment, ``{id}:cancel`` one that ends so."""
    if not segment.startswith("{"):
        return re.escape(segment)
    suffix = segment.partition("}")[2]
    return "[^/]*" + re.escape(suffix) if suffix else _ID


def _routes() -> tuple[re.Pattern[str], dict[str, str]]:
    """One regex of every route and verb, matched against ``path + "#" + verb``.

    An alternative per route and operation, named ``r<n>``: the route's segments after its
    first (a literal, under which the alternatives are grouped), then the verbs the operation
    is served for. At each prefix the most specific route decides: a less specific one
    (``/tasks/{id}``) stands back where a more specific one as long (``/tasks/{id}:cancel``)
    fits, whatever the verb; then a wrong verb tries the next prefix. 0.3's routes carry their
    ``/v1`` and are read from the path's start only.
    """
    rows = []
    for op in OPERATIONS:
        for route, legacy in ((op.route, False), (op.legacy_route, True)):
            if route is not None:
                head, *rest = route.strip("/").split("/")
                tail = "".join("/+" + _piece(segment) for segment in rest)
                rows.append((legacy, head, tail, op.verbs, op.name))
    names: dict[str, str] = {}
    heads: dict[tuple[bool, str], list[tuple[str, str]]] = {}  # (0.3?, head): (tail, regex)
    for legacy, head, tail, verbs, name in sorted(rows, key=lambda row: row[2].count(_ID)):
        siblings = heads.setdefault((legacy, head), [])
        specific = sorted(
            {
                other
                for other, _ in siblings
                if other.count("/+") == tail.count("/+") and other.count(_ID) < tail.count(_ID)
            }
        )
        back = f"(?!(?:{'|'.join(specific)})/*#[A-Z]+\\Z)" if specific else ""
        group = f"r{len(names)}"
        names[group] = name
        siblings.append((tail, f"(?P<{group}>{back}{tail}/*#(?:{'|'.join(verbs)}))"))

    def alternatives(legacy: bool) -> str:
        return "|".join(
            re.escape(head) + "(?:" + "|".join(regex for _, regex in siblings) + ")"
            for (of_legacy, head), siblings in heads.items()
            if of_legacy is legacy
        )

    prefix = f"(?:[^/]+/+){{0,{_MAX_PREFIX}}}?"
    return re.compile(f"/*(?:{alternatives(True)}|{prefix}(?:{alternatives(False)}))"), names


_ROUTES, _NAMES = _routes()


def params_of(body: object) -> dict[str, Any] | None:
    """A request body's parameters: a JSON-RPC request's ``params``, or an HTTP+JSON body itself.

    None when there are none to read (not an object, or ``params`` that is not one).
    """
    if not isinstance(body, dict):
        return None
    params = body.get("params") if "method" in body else body
    return params if isinstance(params, dict) else None


def rest_operation(verb: str, path: str) -> str | None:
    """The operation of an HTTP+JSON request, by its verb and its path (None: no A2A route).

    A 1.0 route is read under a prefix of up to two segments (a tenant, ``/v1``), a 0.3 route
    from the path's start. The shortest prefix wins; an id ending in ``:cancel`` or
    ``:subscribe`` is that route's (not GetTask's); when the route is not served for
    ``verb``, a longer prefix is tried.
    """
    found = _ROUTES.fullmatch(f"{path}#{verb}")
    return None if found is None else _NAMES[found.lastgroup]  # type: ignore[index]


def rest_request(
    operation: str, params: Mapping[str, Any]
) -> tuple[str, str, dict[str, Any] | None]:
    """The HTTP+JSON request of a 1.0 operation: its verb, its path and what is left of ``params``.

    The params named by the route's placeholders fill them, quoted (an absent one gives "");
    the others are left, for the body (None when none are left).

    Raises:
        ValueError: ``operation`` is not one of A2A's.

    """
    op = BY_NAME.get(operation)
    if op is None:
        raise ValueError(f"no HTTP+JSON route for operation {operation!r}")
    left = dict(params)
    values = {
        name: quote(str(left.pop(name, "")), safe="")
        for _, name, _, _ in Formatter().parse(op.route)
        if name
    }
    return op.verbs[0], op.path(**values), left or None
