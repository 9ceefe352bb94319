"""HttpLookup: the look-up queries of a raw JSON-RPC or HTTP+JSON SendMessage, and the answers."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from a2a_client_errors._http_lookup import (
    CannotLookError,
    HttpLookup,
    answer_kind,
    sent_message,
    task_view,
)
from a2a_client_errors._lookup import (
    GetTaskQuery,
    ListTasksQuery,
    ReadFailedError,
    SentMessage,
    TaskPage,
    TaskView,
)
from a2a_client_errors.types import DEFAULT_LIMITS
from tests.conftest import error_info, jsonrpc_error, jsonrpc_result, status_body

URL = "https://agent.test/a2a"
SECRET = "Bearer tok-SECRET-19ab"
MESSAGE = {"messageId": "msg-0001", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
LIST = ListTasksQuery("ctx-1", "", 100, 20)
GET = GetTaskQuery("task-1")


def task(state: str = "TASK_STATE_COMPLETED", task_id: str = "task-1") -> dict[str, Any]:
    """A JSON task in ``state`` whose history holds msg-0001."""
    return {
        "id": task_id,
        "contextId": "ctx-1",
        "status": {"state": state},
        "history": [MESSAGE],
    }


def rpc_request(method: str = "SendMessage", rpc_id: Any = 7) -> tuple[httpx.Request, Any]:
    """A JSON-RPC send request with credentials and a custom header, and its parsed body."""
    body = {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": {"message": MESSAGE}}
    request = httpx.Request(
        "POST",
        URL,
        json=body,
        headers={"Authorization": SECRET, "A2A-Version": "1.0", "X-Trace": "t-1"},
        extensions={"marker": "kept"},
    )
    return request, body


def rest_request(path: str = "/message:send") -> tuple[httpx.Request, Any]:
    """An HTTP+JSON send request to ``path``, with credentials, and its parsed body."""
    body = {"message": MESSAGE}
    request = httpx.Request(
        "POST",
        f"https://agent.test{path}?tenant=ignored",
        json=body,
        headers={"Authorization": SECRET, "X-Trace": "t-1"},
    )
    return request, body


def rpc_body(request: httpx.Request) -> dict[str, Any]:
    """The JSON body of a built request."""
    loaded: dict[str, Any] = json.loads(request.content)
    return loaded


def answer(status: int, body: Any, content_type: str = "application/json") -> httpx.Response:
    """A JSON response."""
    return httpx.Response(
        status, content=json.dumps(body).encode(), headers={"content-type": content_type}
    )


# --- what a SendMessage names ------------------------------------------------------------------


def test_sent_message_from_jsonrpc_and_rest_bodies() -> None:
    """The messageId, contextId and taskId are read from either binding's body."""
    message = {**MESSAGE, "contextId": "ctx-1", "taskId": "task-1"}
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    expected = SentMessage("msg-0001", "ctx-1", "task-1", 12.5)
    assert sent_message(rpc, 12.5) == expected
    assert sent_message({"message": message}, 12.5) == expected


def test_sent_message_reads_snake_case_and_empty_ids() -> None:
    """snake_case names are read; empty context and task ids count as absent."""
    body = {"message": {"message_id": "m", "context_id": "", "task_id": "t"}}
    assert sent_message(body, None) == SentMessage("m", None, "t", None)


@pytest.mark.parametrize(
    "body",
    [None, [], {"message": "x"}, {"params": {}}, {"message": {"messageId": ""}}, {"message": {}}],
)
def test_sent_message_without_a_message_id_is_none(body: Any) -> None:
    """A body without a message, or a message without a messageId, names nothing."""
    assert sent_message(body, 1.0) is None


def test_task_view_of_a_json_task() -> None:
    """Id, context, status timestamp, history (both spellings, user or not) and settledness."""
    history = [
        {"messageId": "a", "role": "ROLE_USER"},
        {"message_id": "b", "role": "agent"},
        {"messageId": 3, "role": "user"},
        {"messageId": "d", "role": 1},
        "x",
    ]
    raw = {
        "id": "t",
        "contextId": "c",
        "status": {"state": "TASK_STATE_WORKING", "timestamp": "1970-01-01T00:00:05Z"},
        "history": history,
    }
    assert task_view(raw) == TaskView(
        "t", "c", 5.0, (("a", True), ("b", False), ("", True), ("d", True)), False
    )
    assert task_view({"status": {"state": "completed"}, "context_id": "c"}).settled


@pytest.mark.parametrize("raw", ["task", None, [], {"history": "x", "status": "y", "id": 4}])
def test_task_view_of_anything_else_shows_nothing(raw: Any) -> None:
    """What is not a task gives a view with no id, no history, no time."""
    seen = task_view(raw)
    assert (seen.task_id, seen.history, seen.updated_at, seen.settled) == ("", (), None, False)


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (jsonrpc_result({"task": {"id": "t"}}), "task"),
        (jsonrpc_result({"message": {"messageId": "m"}}), "message"),
        (jsonrpc_result({"kind": "task", "id": "t"}), "task"),
        (jsonrpc_result({"kind": "message", "role": "agent"}), "message"),
        ({"task": {}}, "task"),
        ({"msg": {}}, "message"),
        ({"id": "t", "status": {"state": "completed"}}, "task"),
        ({"role": "agent", "parts": []}, "message"),
        ({"other": 1}, None),
        (jsonrpc_result("text"), None),
        ("body", None),
    ],
)
def test_answer_kind_of_a_send(body: Any, kind: str | None) -> None:
    """Whether a send's answer holds a task or a Message, in 1.0 and 0.3 shapes."""
    assert answer_kind(body) == kind


# --- JSON-RPC queries --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "get", "streams"),
    [
        ("SendMessage", "GetTask", False),
        ("SendStreamingMessage", "GetTask", True),
        ("message/send", "tasks/get", False),
        ("message/stream", "tasks/get", True),
    ],
)
def test_jsonrpc_queries_follow_the_request_method_names(
    method: str, get: str, streams: bool
) -> None:
    """1.0 method names for a 1.0 request, 0.3 names for a 0.3 one, to the same URL."""
    request, body = rpc_request(method)
    lookup = HttpLookup(request, body)
    assert lookup.streams is streams
    got = lookup.query(GET)
    assert (got.method, str(got.url)) == ("POST", URL)
    assert rpc_body(got)["method"] == get
    assert rpc_body(got)["params"] == {"id": "task-1"}


def test_jsonrpc_list_asks_no_artifacts_and_bounded_history() -> None:
    """ListTasks asks for no artifacts, the history bound, the context, no timestamp filter."""
    request, body = rpc_request()
    lookup = HttpLookup(request, body)
    assert lookup.lists
    listed = lookup.query(LIST)
    assert rpc_body(listed)["method"] == "ListTasks"
    assert rpc_body(listed)["params"] == {
        "pageSize": 100,
        "includeArtifacts": False,
        "contextId": "ctx-1",
        "historyLength": 20,
    }


@pytest.mark.parametrize("method", ["message/send", "message/stream"])
def test_a_03_request_has_no_list_tasks(method: str) -> None:
    """A2A 0.3 has no ListTasks: the query is refused before anything is sent."""
    request, body = rpc_request(method)
    lookup = HttpLookup(request, body)
    assert not lookup.lists
    with pytest.raises(ReadFailedError, match=r"0\.3 has no ListTasks"):
        lookup.query(LIST)


def test_jsonrpc_query_has_its_own_id_and_version() -> None:
    """Each query is a JSON-RPC 2.0 request with a fresh id (never the send's)."""
    request, body = rpc_request()
    lookup = HttpLookup(request, body)
    first, second = rpc_body(lookup.query(GET)), rpc_body(lookup.query(GET))
    assert first["jsonrpc"] == "2.0"
    assert first["id"] != second["id"]
    assert 7 not in (first["id"], second["id"])


def test_jsonrpc_list_params_with_token_and_no_history_bound() -> None:
    """The page token is passed; a history bound of None asks for the agent's default."""
    request, body = rpc_request()
    query = ListTasksQuery(None, "page-2", 20, None)
    params = rpc_body(HttpLookup(request, body).query(query))["params"]
    assert params == {"pageSize": 20, "includeArtifacts": False, "pageToken": "page-2"}


def test_jsonrpc_query_keeps_the_headers_but_the_body_ones() -> None:
    """Credentials and service headers are copied; content-length and host are not."""
    request, body = rpc_request()
    got = HttpLookup(request, body).query(LIST)
    assert got.headers["authorization"] == SECRET
    assert got.headers["a2a-version"] == "1.0"
    assert got.headers["x-trace"] == "t-1"
    assert got.headers["content-type"] == "application/json"
    assert got.headers["content-length"] == str(len(got.content))
    assert [name for name, _ in got.headers.raw].count(b"Host") <= 1
    assert got.headers["host"] == "agent.test"
    assert got.extensions["marker"] == "kept"


def test_jsonrpc_other_methods_cannot_be_looked_up() -> None:
    """A JSON-RPC request that sends no message cannot be looked up."""
    request = httpx.Request("POST", URL, json={"method": "GetTask"})
    with pytest.raises(CannotLookError, match="GetTask"):
        HttpLookup(request, {"jsonrpc": "2.0", "id": 1, "method": "GetTask"})


# --- HTTP+JSON queries -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "prefix", "streams"),
    [
        ("/message:send", "", False),
        ("/tenant-a/message:send", "/tenant-a", False),
        ("/v1/message:stream", "/v1", True),
    ],
)
def test_rest_queries_stay_under_the_prefix(path: str, prefix: str, streams: bool) -> None:
    """GetTask and ListTasks are GETs under the send route's prefix (a tenant, /v1)."""
    request, body = rest_request(path)
    lookup = HttpLookup(request, body)
    assert lookup.streams is streams
    got = lookup.query(GET)
    assert got.method == "GET"
    assert str(got.url) == f"https://agent.test{prefix}/tasks/task-1"
    listed = lookup.query(LIST)
    assert listed.method == "GET"
    assert listed.url.path == f"{prefix}/tasks"
    assert dict(listed.url.params) == {
        "pageSize": "100",
        "includeArtifacts": "false",
        "contextId": "ctx-1",
        "historyLength": "20",
    }


def test_rest_list_query_string_with_token() -> None:
    """The REST list query carries pageToken as a query parameter."""
    request, body = rest_request()
    listed = HttpLookup(request, body).query(ListTasksQuery(None, "tok", 5, 3))
    assert dict(listed.url.params) == {
        "pageSize": "5",
        "includeArtifacts": "false",
        "historyLength": "3",
        "pageToken": "tok",
    }


def test_rest_query_keeps_credentials_and_drops_body_headers() -> None:
    """A REST GET keeps Authorization and custom headers, and has no body headers."""
    request, body = rest_request()
    got = HttpLookup(request, body).query(GET)
    assert got.headers["authorization"] == SECRET
    assert got.headers["x-trace"] == "t-1"
    assert "content-type" not in got.headers
    assert "content-length" not in got.headers
    assert got.content == b""


@pytest.mark.parametrize("path", ["/tasks/t1:cancel", "/message", "/"])
def test_rest_other_routes_cannot_be_looked_up(path: str) -> None:
    """A REST request to a route other than message:send or message:stream cannot be looked up."""
    request = httpx.Request("POST", f"https://agent.test{path}", json={"message": MESSAGE})
    with pytest.raises(CannotLookError):
        HttpLookup(request, {"message": MESSAGE})


# --- reading the answers -----------------------------------------------------------------------


def test_read_get_task_jsonrpc_and_rest() -> None:
    """A GetTask answer is the task (the JSON-RPC result, or the REST body)."""
    rpc, rpc_sent = rpc_request()
    rest, rest_sent = rest_request()
    assert HttpLookup(rpc, rpc_sent).read(GET, answer(200, jsonrpc_result(task()))) == task()
    assert HttpLookup(rest, rest_sent).read(GET, answer(200, task())) == task()


@pytest.mark.parametrize(
    "response",
    [
        answer(200, jsonrpc_error(-32001, "Task not found")),
        answer(404, status_body(404, "NOT_FOUND", "gone", [error_info("TASK_NOT_FOUND")])),
        answer(404, {"type": "https://a2a-protocol.org/errors/task-not-found"}),
    ],
    ids=["jsonrpc-code", "status-error-info", "problem-type"],
)
def test_read_get_task_not_found_in_the_agents_words_is_none(response: httpx.Response) -> None:
    """TASK_NOT_FOUND said by the agent (code, ErrorInfo, problem type): the task is not there."""
    request, body = rest_request()
    assert HttpLookup(request, body).read(GET, response) is None


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(404, text="<html>Not Found</html>", headers={"content-type": "text/html"}),
        httpx.Response(404),
    ],
    ids=["html-page", "empty"],
)
def test_read_get_task_bare_404_cannot_look(response: httpx.Response) -> None:
    """A bare 404 (a wrong URL, a proxy's page) does not say the task is missing."""
    request, body = rest_request()
    with pytest.raises(ReadFailedError):
        HttpLookup(request, body).read(GET, response)


@pytest.mark.parametrize(
    "response",
    [
        answer(503, {"error": "busy"}),
        answer(200, jsonrpc_error(-32603, "Internal error")),
        answer(200, jsonrpc_error(-32004, "ListTasks is not supported")),
        answer(401, {}),
    ],
    ids=["503", "internal", "unsupported", "401"],
)
def test_read_an_error_cannot_look(response: httpx.Response) -> None:
    """Any other error answer, to either query, fails with the error attached (to judge)."""
    request, body = rpc_request()
    lookup = HttpLookup(request, body)
    for query in (GET, LIST):
        with pytest.raises(ReadFailedError) as caught:
            lookup.read(query, response)
        assert caught.value.error is not None


@pytest.mark.parametrize(
    "result",
    [{"messageId": "m", "role": "ROLE_AGENT"}, {"id": "t"}, "task", [task()]],
    ids=["message", "no-status", "string", "list"],
)
def test_read_get_task_that_is_not_a_task_cannot_look(result: Any) -> None:
    """A GetTask result that is not a task fails."""
    request, body = rpc_request()
    with pytest.raises(ReadFailedError):
        HttpLookup(request, body).read(GET, answer(200, jsonrpc_result(result)))


def test_read_rest_get_task_list_body_cannot_look() -> None:
    """A REST GetTask answer that is JSON but not an object fails."""
    request, body = rest_request()
    with pytest.raises(ReadFailedError, match="GetTask"):
        HttpLookup(request, body).read(GET, answer(200, []))


def test_read_get_task_non_json_cannot_look() -> None:
    """A 200 that is not JSON cannot say anything about the task."""
    request, body = rest_request()
    with pytest.raises(ReadFailedError):
        HttpLookup(request, body).read(GET, httpx.Response(200, text="ok"))


def test_read_a_huge_body_that_is_not_json_cannot_look() -> None:
    """A 2xx body too big to be judged, and not JSON, fails."""
    request, body = rest_request()
    huge = httpx.Response(200, content=b"x" * (DEFAULT_LIMITS.max_body + 1))
    with pytest.raises(ReadFailedError, match="not JSON"):
        HttpLookup(request, body).read(LIST, huge)


def test_read_list_tasks_page_jsonrpc_and_rest() -> None:
    """A ListTasks answer is a page: its task objects and the next page token."""
    page = {"tasks": [task(), "junk", task(task_id="task-2")], "nextPageToken": "p2"}
    tasks = (task(), task(task_id="task-2"))
    rpc, rpc_sent = rpc_request()
    rest, rest_sent = rest_request()
    wrapped = answer(200, jsonrpc_result(page))
    assert HttpLookup(rpc, rpc_sent).read(LIST, wrapped) == TaskPage(
        tasks, "p2", None, len(wrapped.content)
    )
    bare = answer(200, {**page, "totalSize": 9})
    assert HttpLookup(rest, rest_sent).read(LIST, bare) == TaskPage(
        tasks, "p2", 9, len(bare.content)
    )


def test_read_list_tasks_last_page_has_no_token() -> None:
    """A page without (or with a non-string) nextPageToken is the last one."""
    request, body = rest_request()
    lookup = HttpLookup(request, body)
    for page in ({"tasks": []}, {"tasks": [], "nextPageToken": 3, "totalSize": True}):
        read = lookup.read(LIST, answer(200, page))
        assert (read.tasks, read.next_page_token, read.total_size) == ((), "", None)


@pytest.mark.parametrize("body", [{"task": task()}, {"tasks": "x"}, [], {}])
def test_read_list_tasks_without_tasks_cannot_look(body: Any) -> None:
    """A ListTasks answer without a list of tasks fails (read against the call it answers)."""
    request, sent = rest_request()
    with pytest.raises(ReadFailedError, match=r"ListTasks|INVALID_AGENT_RESPONSE"):
        HttpLookup(request, sent).read(LIST, answer(200, body))


def test_read_list_tasks_bare_404_cannot_look() -> None:
    """A bare 404 to ListTasks (not served here) fails, not an empty list."""
    request, body = rest_request()
    with pytest.raises(ReadFailedError):
        HttpLookup(request, body).read(LIST, httpx.Response(404, text="no"))


# --- the lost answer ----------------------------------------------------------------------------


def test_answer_jsonrpc_echoes_the_send_id() -> None:
    """The JSON-RPC 1.0 answer is the send's id with a {"task": ...} result."""
    request, body = rpc_request(rpc_id="req-9")
    response = HttpLookup(request, body).answer(task())
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"jsonrpc": "2.0", "id": "req-9", "result": {"task": task()}}
    assert response.request is request


def test_answer_jsonrpc_03_is_the_bare_task() -> None:
    """The 0.3 answer's result is the task itself."""
    request, body = rpc_request("message/send")
    assert HttpLookup(request, body).answer(task()).json() == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": task(),
    }


def test_answer_rest_wraps_the_task() -> None:
    """The REST answer is {"task": ...}."""
    request, body = rest_request("/tenant-a/message:send")
    assert HttpLookup(request, body).answer(task()).json() == {"task": task()}


@pytest.mark.parametrize(
    ("make", "payload"),
    [
        (
            lambda: rpc_request("SendStreamingMessage"),
            {"jsonrpc": "2.0", "id": 7, "result": {"task": task()}},
        ),
        (lambda: rpc_request("message/stream"), {"jsonrpc": "2.0", "id": 7, "result": task()}),
        (lambda: rest_request("/v1/message:stream"), {"task": task()}),
    ],
    ids=["jsonrpc", "jsonrpc-0.3", "rest"],
)
def test_answer_of_a_stream_is_one_sse_event(make: Any, payload: Any) -> None:
    """A stream's answer is an event stream holding one event: the task."""
    request, body = make()
    response = HttpLookup(request, body).answer(task())
    assert response.headers["content-type"] == "text/event-stream"
    assert HttpLookup.opened(response)
    text = response.content.decode()
    assert text.startswith("data: ")
    assert text.endswith("\n\n")
    assert json.loads(text.removeprefix("data: ")) == payload


# --- subscriptions -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "state",
    ["TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_INPUT_REQUIRED"],
)
def test_no_subscription_for_a_final_task(state: str) -> None:
    """A terminal or interrupted task needs no subscription: its one event is the stream."""
    request, body = rpc_request("SendStreamingMessage")
    assert HttpLookup(request, body).subscription(task(state)) is None


def test_no_subscription_for_a_unary_send_or_an_unreadable_task() -> None:
    """A unary send is never subscribed; nor is a task without a state or an id."""
    request, body = rpc_request("SendMessage")
    assert HttpLookup(request, body).subscription(task("TASK_STATE_WORKING")) is None
    request, body = rpc_request("SendStreamingMessage")
    lookup = HttpLookup(request, body)
    assert lookup.subscription({"id": "t"}) is None
    assert lookup.subscription({"status": {"state": "TASK_STATE_WORKING"}}) is None


@pytest.mark.parametrize(
    ("method", "name"),
    [("SendStreamingMessage", "SubscribeToTask"), ("message/stream", "tasks/resubscribe")],
)
def test_jsonrpc_subscription_to_a_working_task(method: str, name: str) -> None:
    """A working task is subscribed to by the binding's method, with the send's id."""
    request, body = rpc_request(method)
    got = HttpLookup(request, body).subscription(task("TASK_STATE_WORKING"))
    assert got is not None
    assert (got.method, str(got.url)) == ("POST", URL)
    assert rpc_body(got) == {"jsonrpc": "2.0", "id": 7, "method": name, "params": {"id": "task-1"}}
    assert got.headers["authorization"] == SECRET
    assert got.headers["content-type"] == "application/json"


def test_rest_subscription_to_a_working_task() -> None:
    """The REST subscription is POST {prefix}/tasks/{id}:subscribe, with the credentials."""
    request, body = rest_request("/v1/message:stream")
    got = HttpLookup(request, body).subscription(task("TASK_STATE_SUBMITTED"))
    assert got is not None
    assert got.method == "POST"
    assert str(got.url) == "https://agent.test/v1/tasks/task-1:subscribe"
    assert got.headers["authorization"] == SECRET


def test_opened_only_for_a_2xx_event_stream() -> None:
    """A subscription's answer is handed over only when it is a 2xx event stream."""
    sse = {"content-type": "text/event-stream"}
    assert HttpLookup.opened(httpx.Response(200, headers=sse))
    assert not HttpLookup.opened(httpx.Response(404, headers=sse))
    assert not HttpLookup.opened(httpx.Response(200, json={}))


# --- sending without blocking ------------------------------------------------------------------


def test_non_blocking_copy_of_a_10_send_asks_to_return_immediately() -> None:
    """The copy sets configuration.returnImmediately; the caller's request is untouched."""
    request, body = rpc_request()
    before = (request.content, dict(request.headers), json.dumps(body))
    copy = HttpLookup(request, body).non_blocking()
    assert copy is not None
    sent = rpc_body(copy)
    assert sent["params"]["configuration"] == {"returnImmediately": True}
    assert sent["params"]["message"] == MESSAGE
    assert sent["id"] == 7
    assert copy.headers["authorization"] == SECRET
    assert (request.content, dict(request.headers), json.dumps(body)) == before


def test_non_blocking_copy_of_a_03_send_sets_blocking_false() -> None:
    """A 0.3 message/send asks not to block with configuration.blocking = false."""
    request, body = rpc_request("message/send")
    body["params"]["configuration"] = {"acceptedOutputModes": ["text/plain"]}
    copy = HttpLookup(request, body).non_blocking()
    assert copy is not None
    assert rpc_body(copy)["params"]["configuration"] == {
        "acceptedOutputModes": ["text/plain"],
        "blocking": False,
    }
    assert body["params"]["configuration"] == {"acceptedOutputModes": ["text/plain"]}


def test_non_blocking_copy_of_a_rest_send() -> None:
    """An HTTP+JSON send's copy carries returnImmediately in its body, to the same URL."""
    request, body = rest_request()
    copy = HttpLookup(request, body).non_blocking()
    assert copy is not None
    assert copy.url == request.url
    assert json.loads(copy.content)["configuration"] == {"returnImmediately": True}


@pytest.mark.parametrize(
    "configuration",
    [{"returnImmediately": True}, "not an object"],
    ids=["already", "unreadable"],
)
def test_no_non_blocking_copy_when_it_does_not_block_or_cannot_say(configuration: Any) -> None:
    """A send that already returns at once, or whose configuration is not an object: none."""
    request, body = rpc_request()
    body["params"]["configuration"] = configuration
    assert HttpLookup(request, body).non_blocking() is None


def test_no_non_blocking_copy_of_a_stream() -> None:
    """A streaming send answers at once anyway: no copy."""
    request, body = rpc_request("SendStreamingMessage")
    assert HttpLookup(request, body).non_blocking() is None


def test_task_of_a_send_answer() -> None:
    """The task a unary send answered with, in either binding; None for a Message or junk."""
    rpc, rpc_sent = rpc_request()
    rest, rest_sent = rest_request()
    legacy, legacy_sent = rpc_request("message/send")
    assert HttpLookup(rpc, rpc_sent).task_of(answer(200, jsonrpc_result({"task": task()})))
    assert HttpLookup(rest, rest_sent).task_of(answer(200, {"task": task()})) == task()
    assert HttpLookup(legacy, legacy_sent).task_of(answer(200, jsonrpc_result(task()))) == task()
    message = jsonrpc_result({"message": MESSAGE})
    assert HttpLookup(rpc, rpc_sent).task_of(answer(200, message)) is None
    assert HttpLookup(rpc, rpc_sent).task_of(httpx.Response(200, text="junk")) is None
