"""The table of A2A operations: every name and route maps to its operation, and back."""

from __future__ import annotations

import re
from typing import Any

import pytest
from google.api import annotations_pb2
from hypothesis import given, settings
from hypothesis import strategies as st

from a2a_client_errors._operations import (
    BY_NAME,
    GRPC_SERVICE,
    OPERATION_OF_LEGACY_RPC,
    OPERATION_OF_METHOD,
    OPERATIONS,
    STREAMING_OPERATIONS,
    WORK_OPERATIONS,
    ResultShape,
    rest_operation,
    rest_request,
)
from a2a_client_errors._reasons import A2A_OPERATIONS, NO_TASK_OPERATIONS

# (1.0 name, 0.3 JSON-RPC method), written out here as the specification the table must meet.
METHODS = [
    ("SendMessage", "message/send"),
    ("SendStreamingMessage", "message/stream"),
    ("GetTask", "tasks/get"),
    ("ListTasks", "tasks/list"),
    ("CancelTask", "tasks/cancel"),
    ("SubscribeToTask", "tasks/resubscribe"),
    ("CreateTaskPushNotificationConfig", "tasks/pushNotificationConfig/set"),
    ("GetTaskPushNotificationConfig", "tasks/pushNotificationConfig/get"),
    ("ListTaskPushNotificationConfigs", "tasks/pushNotificationConfig/list"),
    ("DeleteTaskPushNotificationConfig", "tasks/pushNotificationConfig/delete"),
    ("GetExtendedAgentCard", "agent/getAuthenticatedExtendedCard"),
]

# (verb, path, operation): the 1.0 routes (§11.3) and the 0.3 ones (under /v1, the card apart).
ROUTES_1_0 = [
    ("POST", "/message:send", "SendMessage"),
    ("POST", "/message:stream", "SendStreamingMessage"),
    ("GET", "/tasks/task-1", "GetTask"),
    ("GET", "/tasks", "ListTasks"),
    ("POST", "/tasks/task-1:cancel", "CancelTask"),
    ("POST", "/tasks/task-1:subscribe", "SubscribeToTask"),
    ("GET", "/tasks/task-1:subscribe", "SubscribeToTask"),
    ("POST", "/tasks/task-1/pushNotificationConfigs", "CreateTaskPushNotificationConfig"),
    ("GET", "/tasks/task-1/pushNotificationConfigs", "ListTaskPushNotificationConfigs"),
    ("GET", "/tasks/task-1/pushNotificationConfigs/cfg-1", "GetTaskPushNotificationConfig"),
    ("DELETE", "/tasks/task-1/pushNotificationConfigs/cfg-1", "DeleteTaskPushNotificationConfig"),
    ("GET", "/extendedAgentCard", "GetExtendedAgentCard"),
]
ROUTES_0_3 = [
    ("POST", "/v1/message:send", "SendMessage"),
    ("POST", "/v1/message:stream", "SendStreamingMessage"),
    ("GET", "/v1/tasks/task-1", "GetTask"),
    ("POST", "/v1/tasks/task-1:cancel", "CancelTask"),
    ("GET", "/v1/tasks/task-1:subscribe", "SubscribeToTask"),
    ("POST", "/v1/tasks/task-1/pushNotificationConfigs", "CreateTaskPushNotificationConfig"),
    ("GET", "/v1/tasks/task-1/pushNotificationConfigs", "ListTaskPushNotificationConfigs"),
    ("GET", "/v1/tasks/task-1/pushNotificationConfigs/c", "GetTaskPushNotificationConfig"),
    ("DELETE", "/v1/tasks/task-1/pushNotificationConfigs/c", "DeleteTaskPushNotificationConfig"),
    ("GET", "/v1/card", "GetExtendedAgentCard"),
]


# --- JSON-RPC and gRPC names -------------------------------------------------------------------


def test_the_table_holds_the_eleven_operations_of_a2a_1_0() -> None:
    """One row per operation, named as A2A 1.0 names it; the rest of the package reads it."""
    assert [op.name for op in OPERATIONS] == [name for name, _ in METHODS]
    assert frozenset(BY_NAME) == A2A_OPERATIONS


@pytest.mark.parametrize(("name", "legacy"), METHODS)
def test_each_json_rpc_method_maps_to_its_operation_and_back(name: str, legacy: str) -> None:
    """The 1.0 method is the operation; the 0.3 one maps to it; the row gives both back."""
    assert OPERATION_OF_METHOD[name] == name
    assert OPERATION_OF_METHOD[legacy] == name
    assert (BY_NAME[name].name, BY_NAME[name].legacy_method) == (name, legacy)


def test_no_other_method_is_an_operation() -> None:
    """The lookup holds the 22 names and nothing else (a typo is not an operation)."""
    assert len(OPERATION_OF_METHOD) == 2 * len(METHODS)
    assert "tasks/teleport" not in OPERATION_OF_METHOD


def test_the_0_3_grpc_rpcs_map_to_their_operations() -> None:
    """0.3's renamed rpcs map to the 1.0 operations; the others kept their names."""
    assert OPERATION_OF_LEGACY_RPC["TaskSubscription"] == "SubscribeToTask"
    assert OPERATION_OF_LEGACY_RPC["GetAgentCard"] == "GetExtendedAgentCard"
    assert OPERATION_OF_LEGACY_RPC["ListTaskPushNotificationConfig"] == (
        "ListTaskPushNotificationConfigs"
    )
    for op in OPERATIONS:
        if op.legacy_rpc is not None:
            assert OPERATION_OF_LEGACY_RPC[op.legacy_rpc] == op.name
    assert "ListTasks" not in OPERATION_OF_LEGACY_RPC  # 0.3 could not list tasks


def test_the_flags_read_from_the_rows() -> None:
    """Sends create work, two operations stream, four name no task in their route."""
    assert {"SendMessage", "SendStreamingMessage"} == WORK_OPERATIONS
    assert {"SendStreamingMessage", "SubscribeToTask"} == STREAMING_OPERATIONS
    assert {
        "SendMessage",
        "SendStreamingMessage",
        "ListTasks",
        "GetExtendedAgentCard",
    } == NO_TASK_OPERATIONS
    shapes = {op.name: op.result for op in OPERATIONS}
    assert shapes["GetTask"] is shapes["CancelTask"] is ResultShape.TASK
    assert shapes["SendMessage"] is ResultShape.TASK_OR_MESSAGE
    assert shapes["ListTasks"] is ResultShape.TASK_LIST
    assert shapes["GetExtendedAgentCard"] is ResultShape.AGENT_CARD


# --- the table against the proto a2a-sdk is built from -------------------------------------------


def _service() -> Any:
    """The ``A2AService`` of the 1.0 proto, as a2a-sdk 1.x ships it."""
    from a2a.types import a2a_pb2

    return a2a_pb2.DESCRIPTOR.services_by_name["A2AService"]


def _camel(match: re.Match[str]) -> str:
    """``{task_id=*}`` as the table writes it: ``{taskId}`` (the JSON name of the field)."""
    first, *rest = match[1].split("_")
    return "{" + first + "".join(part.title() for part in rest) + "}"


@pytest.mark.a2a_sdk("1")
def test_the_rows_are_the_rpcs_of_the_1_0_proto() -> None:
    """Names, messages and streaming, as in a2a-sdk's ``lf.a2a.v1`` descriptor."""
    service = _service()
    assert service.full_name == GRPC_SERVICE
    assert {method.name for method in service.methods} == set(BY_NAME)
    for method in service.methods:
        op = BY_NAME[method.name]
        assert method.input_type.name == op.grpc_request
        response = method.output_type
        full = response.full_name if response.file.package != "lf.a2a.v1" else response.name
        assert full == op.grpc_response
        assert method.server_streaming is op.streams


@pytest.mark.a2a_sdk("1")
@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_each_route_is_the_protos_http_binding(name: str) -> None:
    """The 1.0 route and its verb are the proto's ``google.api.http`` binding (and tenant's)."""
    method = _service().methods_by_name[name]
    rule = method.GetOptions().Extensions[annotations_pb2.http]
    verb = rule.WhichOneof("pattern")
    route = re.sub(r"\{(\w+)=\*\}", _camel, getattr(rule, verb))
    op = BY_NAME[method.name]
    assert route == op.route
    assert verb.upper() in op.verbs
    (tenant,) = rule.additional_bindings
    assert getattr(tenant, verb) == "/{tenant}" + getattr(rule, verb)


# --- HTTP+JSON routes -------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["", "/acme", "/v1", "/tenants/acme-corp"])
@pytest.mark.parametrize(("verb", "path", "operation"), ROUTES_1_0)
def test_each_1_0_route_maps_to_its_operation(
    prefix: str, verb: str, path: str, operation: str
) -> None:
    """A 1.0 route under no prefix, a tenant, /v1 or two segments names its operation."""
    assert rest_operation(verb, prefix + path) == operation
    assert rest_operation(verb, prefix + path + "/") == operation  # a trailing slash


@pytest.mark.parametrize(("verb", "path", "operation"), ROUTES_0_3)
def test_each_0_3_route_maps_to_its_operation(verb: str, path: str, operation: str) -> None:
    """0.3's routes (under /v1; the card at /v1/card) name the same operations."""
    assert rest_operation(verb, path) == operation
    op = BY_NAME[operation]
    assert op.legacy_route is not None
    assert verb in op.verbs


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
def test_each_operation_maps_to_its_route_and_back(op: Any) -> None:
    """The request `rest_request` builds for an operation is read back as that operation."""
    verb, path, _ = rest_request(op.name, {"id": "cfg-1", "taskId": "task-1"})
    assert verb == op.verbs[0]
    assert rest_operation(verb, path) == op.name
    assert rest_operation(verb, "/acme" + path) == op.name
    if op.legacy_route is not None:
        legacy = op.legacy_route.format(id="cfg-1", taskId="task-1")
        assert rest_operation(verb, legacy) == op.name


@pytest.mark.parametrize(
    ("verb", "path"),
    [
        ("GET", "/healthz"),
        ("GET", "/.well-known/agent-card.json"),
        ("POST", "/tasks"),  # ListTasks is a GET
        ("PUT", "/tasks/task-1"),
        ("GET", "/message:send"),  # a send is a POST
        ("POST", "/extendedAgentCard"),
        ("GET", "/tasks/task-1:cancel"),  # the cancel route, not GetTask of "task-1:cancel"
        ("GET", "/a/b/c/tasks/task-1"),  # three prefix segments
        ("GET", "/acme/v1/card"),  # 0.3's card, read from the path's start only
        ("GET", "/tasks/task-1/pushNotificationConfigs/cfg-1/more"),
        ("GET", "/"),
        ("GET", ""),
    ],
)
def test_other_requests_are_no_operation(verb: str, path: str) -> None:
    """A path no route has, or a route not served for the verb, is no operation."""
    assert rest_operation(verb, path) is None


@pytest.mark.parametrize(
    ("verb", "path", "operation"),
    [
        ("GET", "/tasks/tasks", "GetTask"),  # a task named "tasks"
        ("GET", "/tasks/t-1:cancel/pushNotificationConfigs", "ListTaskPushNotificationConfigs"),
        ("GET", "/tasks/a#GET", "GetTask"),  # a decoded %23 in an id
        ("POST", "/tasks/message:send", "SendMessage"),  # the tenant "tasks": GetTask is a GET
        ("GET", "/tasks/message:send", "GetTask"),  # the shortest prefix wins
        ("GET", "//acme//tasks//t-1", "GetTask"),  # empty segments are no segments
    ],
)
def test_ids_and_tenants_that_look_like_routes(verb: str, path: str, operation: str) -> None:
    """Ids and tenants spelt like route words: the shortest prefix, then the verb, decide."""
    assert rest_operation(verb, path) == operation


def test_rest_request_fills_the_route_and_leaves_the_rest() -> None:
    """Placeholders take their params, quoted; what is left is the body (None when nothing)."""
    message = {"messageId": "m-1"}
    assert rest_request("SendMessage", {"message": message}) == (
        "POST",
        "/message:send",
        {"message": message},
    )
    assert rest_request("GetTask", {"id": "a/b c"}) == ("GET", "/tasks/a%2Fb%20c", None)
    assert rest_request("CancelTask", {"id": "t-1"}) == ("POST", "/tasks/t-1:cancel", None)
    assert rest_request(
        "CreateTaskPushNotificationConfig", {"taskId": "t-1", "url": "https://hook.test"}
    ) == ("POST", "/tasks/t-1/pushNotificationConfigs", {"url": "https://hook.test"})
    assert rest_request("GetTask", {}) == ("GET", "/tasks/", None)
    with pytest.raises(ValueError, match="tasks/teleport"):
        rest_request("tasks/teleport", {})


# --- properties -----------------------------------------------------------------------------

ids = st.text(st.characters(exclude_characters="/", exclude_categories=["Cs"]), min_size=1)


@settings(deadline=None, max_examples=300)
@given(st.sampled_from(["GET", "POST", "DELETE", "PUT", "PATCH", ""]), st.text())
def test_rest_operation_never_raises(verb: str, path: str) -> None:
    """Any verb and any path text gives an operation of the table or None."""
    assert rest_operation(verb, path) in {None, *BY_NAME}


@settings(deadline=None, max_examples=200)
@given(st.sampled_from(OPERATIONS), ids, ids, st.sampled_from(["", "/acme", "/v1"]))
def test_any_ids_route_back_to_the_operation(
    op: Any, task_id: str, config: str, prefix: str
) -> None:
    """Whatever the ids (once quoted, as `rest_request` sends them), the route reads back."""
    verb, path, _ = rest_request(op.name, {"id": config, "taskId": task_id})
    assert rest_operation(verb, prefix + path) == op.name
