"""The server-side adapters on real servers on 127.0.0.1: Starlette, FastAPI and grpc.aio.

Each server's handlers raise `A2AError` (or fail unexpectedly); what a client receives is read
back with this package's own `normalize`, as any A2A client would.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

import grpc
import grpc.aio
import httpx
import pytest
from a2a.types import a2a_pb2, a2a_pb2_grpc
from fastapi import FastAPI, Request
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.routing import Route

from a2a_client_errors import A2AError, Reason, normalize
from a2a_client_errors._wire import BadRequest, FieldViolation
from a2a_client_errors.server import (
    CONTENT_TYPE,
    A2AErrorInterceptor,
    exception_handlers,
    internal_error,
)
from a2a_client_errors.types import ErrorKind, Source
from tests.asgi import serve

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from starlette.responses import JSONResponse

# The server side over a2a-sdk 1.x handlers and types.
pytestmark = pytest.mark.a2a_sdk("1")

SECRET = "password=hunter2"  # what an unexpected exception says; no caller may see it


def _not_found(task_id: str) -> A2AError:
    return A2AError(Reason.TASK_NOT_FOUND, f"task {task_id} not found", {"taskId": task_id})


def _unsupported_part() -> A2AError:
    return A2AError(
        Reason.CONTENT_TYPE_NOT_SUPPORTED,
        "image/png is not accepted",
        extra_details=[BadRequest(field_violations=(FieldViolation(field="message.parts[1]"),))],
    )


# --- internal_error ------------------------------------------------------------------------


def test_internal_error_is_generic_and_logs_the_original(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The message and metadata carry only a correlation id; the log carries the exception."""
    with caplog.at_level(logging.ERROR, logger="a2a_client_errors.server"):
        try:
            raise RuntimeError(SECRET)
        except RuntimeError as exc:
            error = internal_error(exc, correlation_id="c-42")
    assert error.codes == (-32603, "INTERNAL", 500)
    assert error.metadata == {"correlationId": "c-42"}
    assert error.message == "Internal error (reference c-42)."
    assert SECRET not in str(error)
    (record,) = caplog.records
    assert record.correlation_id == "c-42"  # type: ignore[attr-defined]
    assert record.exc_info is not None
    assert SECRET in caplog.text  # the operator finds it, by the id
    assert "c-42" in record.getMessage()


def test_internal_error_ids_are_fresh_and_the_logger_is_yours(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Without an id, each error gets its own; a logger given receives the record."""
    mine = logging.getLogger("tests.mine")
    with caplog.at_level(logging.ERROR, logger="tests.mine"):
        first = internal_error(ValueError("x"), logger=mine)
        second = internal_error(ValueError("x"), logger=mine)
    assert first.metadata["correlationId"] != second.metadata["correlationId"]
    assert [record.name for record in caplog.records] == ["tests.mine", "tests.mine"]


def test_exception_handlers_refuse_an_unknown_binding() -> None:
    """Only the two HTTP bindings have exception handlers (gRPC has its interceptor)."""
    with pytest.raises(ValueError, match="binding"):
        exception_handlers("grpc")  # type: ignore[arg-type]


# --- Starlette and FastAPI ---------------------------------------------------------------------


async def _jsonrpc(request: Any) -> JSONResponse:
    call = await request.json()
    method, params = call["method"], call.get("params", {})
    if method == "GetTask":
        raise _not_found(params["id"])
    if method == "SendMessage":
        raise _unsupported_part()
    if method == "Teapot":
        raise HTTPException(418)
    raise RuntimeError(SECRET)


async def _rest_task(request: Any) -> JSONResponse:
    task_id = request.path_params["task_id"]
    if task_id == "boom":
        raise RuntimeError(SECRET)
    raise _not_found(task_id)


def _starlette(binding: str) -> Starlette:
    return Starlette(
        routes=[
            Route("/jsonrpc", _jsonrpc, methods=["POST"]),
            Route("/tasks/{task_id}", _rest_task, methods=["GET"]),
        ],
        exception_handlers=exception_handlers(binding),  # type: ignore[arg-type]
    )


@pytest.fixture(scope="module")
def starlette_jsonrpc() -> Iterator[str]:
    """A Starlette JSON-RPC server whose handlers raise."""
    with serve(_starlette("jsonrpc")) as url:
        yield url


@pytest.fixture(scope="module")
def starlette_rest() -> Iterator[str]:
    """A Starlette HTTP+JSON server whose handlers raise."""
    with serve(_starlette("http+json")) as url:
        yield url


def _call(url: str, method: str, params: dict[str, Any], request_id: Any = 7) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return httpx.post(f"{url}/jsonrpc", json=body, timeout=10)


def test_starlette_jsonrpc_encodes_an_a2a_error(starlette_jsonrpc: str) -> None:
    """A2AError -> HTTP 200, the request's id, -32001, ErrorInfo with its metadata."""
    answer = _call(starlette_jsonrpc, "GetTask", {"id": "t-9"})
    assert answer.status_code == 200
    assert answer.json()["id"] == 7
    error = normalize(answer, operation="GetTask")
    assert error is not None
    assert (error.reason, error.jsonrpc_code, error.source) == (
        Reason.TASK_NOT_FOUND,
        -32001,
        Source.ERROR_INFO,
    )
    assert error.metadata == {"taskId": "t-9"}


def test_starlette_jsonrpc_keeps_extra_details(starlette_jsonrpc: str) -> None:
    """The BadRequest after the ErrorInfo names the part, for machines."""
    answer = _call(starlette_jsonrpc, "SendMessage", {}, request_id="abc")
    assert answer.json()["id"] == "abc"
    error = normalize(answer)
    assert error is not None
    assert error.reason is Reason.CONTENT_TYPE_NOT_SUPPORTED
    (bad,) = [detail for detail in error.details if isinstance(detail, BadRequest)]
    assert [violation.field for violation in bad.field_violations] == ["message.parts[1]"]


def test_starlette_jsonrpc_hides_an_unexpected_exception(
    starlette_jsonrpc: str, caplog: pytest.LogCaptureFixture
) -> None:
    """RuntimeError -> -32603 with a correlation id, the secret only in the server's log."""
    with caplog.at_level(logging.ERROR, logger="a2a_client_errors.server"):
        answer = _call(starlette_jsonrpc, "Anything", {})
    assert SECRET not in answer.text
    assert "Traceback" not in answer.text
    error = normalize(answer)
    assert error is not None
    assert (error.reason, error.jsonrpc_code) == (Reason.INTERNAL_ERROR, -32603)
    correlation = error.metadata["correlationId"]
    assert correlation in error.message
    logged = [r for r in caplog.records if getattr(r, "correlation_id", None) == correlation]
    assert len(logged) == 1
    assert SECRET in caplog.text


def test_starlette_http_exceptions_keep_their_handler(starlette_jsonrpc: str) -> None:
    """A framework HTTPException is not an A2A error: Starlette answers it as usual."""
    answer = _call(starlette_jsonrpc, "Teapot", {})
    assert answer.status_code == 418


def test_starlette_rest_encodes_an_a2a_error(starlette_rest: str) -> None:
    """A2AError -> HTTP 404, application/a2a+json, google.rpc.Status with the ErrorInfo."""
    answer = httpx.get(f"{starlette_rest}/tasks/t-9", timeout=10)
    assert answer.status_code == 404
    assert answer.headers["content-type"] == CONTENT_TYPE
    assert answer.json()["error"]["status"] == "NOT_FOUND"
    error = normalize(answer, operation="GetTask")
    assert error is not None
    assert (error.reason, error.source, error.metadata) == (
        Reason.TASK_NOT_FOUND,
        Source.ERROR_INFO,
        {"taskId": "t-9"},
    )


def test_starlette_rest_hides_an_unexpected_exception(
    starlette_rest: str, caplog: pytest.LogCaptureFixture
) -> None:
    """RuntimeError -> 500 INTERNAL with a correlation id; nothing of the exception is sent."""
    with caplog.at_level(logging.ERROR, logger="a2a_client_errors.server"):
        answer = httpx.get(f"{starlette_rest}/tasks/boom", timeout=10)
    assert answer.status_code == 500
    assert SECRET not in answer.text
    error = normalize(answer)
    assert error is not None
    assert error.reason is Reason.INTERNAL_ERROR
    assert error.metadata["correlationId"] in caplog.text


def test_a_jsonrpc_id_that_cannot_be_read_is_null() -> None:
    """A body that is not a JSON-RPC call: the error goes back with ``"id": null``."""
    app = Starlette(
        routes=[Route("/jsonrpc", _jsonrpc, methods=["POST"])],
        exception_handlers=exception_handlers("jsonrpc"),
    )
    with serve(app) as url:
        answer = httpx.post(f"{url}/jsonrpc", content=b"[1, 2]", timeout=10)
        odd_id = _call(url, "GetTask", {"id": "t"}, request_id=True)
    assert answer.status_code == 200
    assert answer.json()["id"] is None
    assert answer.json()["error"]["code"] == -32603  # the handler itself failed on the body
    assert odd_id.json()["id"] is None  # a boolean is no JSON-RPC id


def test_fastapi_takes_the_same_handlers() -> None:
    """FastAPI(exception_handlers=...) answers A2AError and the unexpected alike."""
    app = FastAPI(exception_handlers=exception_handlers("http+json"))

    @app.get("/tasks/{task_id}")
    async def get_task(task_id: str) -> dict[str, str]:
        raise _not_found(task_id)

    @app.post("/message:send")
    async def send(request: Request) -> dict[str, str]:
        json.loads(await request.body())
        raise RuntimeError(SECRET)

    with serve(app) as url:
        missing = httpx.get(f"{url}/tasks/t-1", timeout=10)
        broken = httpx.post(f"{url}/message:send", json={"message": {}}, timeout=10)
    error = normalize(missing)
    assert error is not None
    assert (missing.status_code, error.reason, error.metadata) == (
        404,
        Reason.TASK_NOT_FOUND,
        {"taskId": "t-1"},
    )
    internal = normalize(broken)
    assert internal is not None
    assert (broken.status_code, internal.reason) == (500, Reason.INTERNAL_ERROR)
    assert SECRET not in broken.text


# --- grpc.aio ------------------------------------------------------------------------------------


class Servicer(a2a_pb2_grpc.A2AServiceServicer):  # type: ignore[misc]
    """Methods that raise A2AError, fail unexpectedly, or abort by themselves."""

    async def GetTask(self, request: a2a_pb2.GetTaskRequest, context: Any) -> a2a_pb2.Task:  # noqa: N802
        """Unknown task (A2AError), or an unexpected failure, or the servicer's own abort."""
        if request.id == "boom":
            raise RuntimeError(SECRET)
        if request.id == "abort":
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "slow down")
        raise _not_found(request.id)

    def CancelTask(self, request: a2a_pb2.CancelTaskRequest, context: Any) -> a2a_pb2.Task:  # noqa: N802
        """A synchronous method: the task cannot be canceled."""
        raise A2AError(Reason.TASK_NOT_CANCELABLE, "already completed", {"taskId": request.id})

    async def SendStreamingMessage(  # noqa: N802
        self, request: a2a_pb2.SendMessageRequest, context: Any
    ) -> AsyncIterator[a2a_pb2.StreamResponse]:
        """One event, then UNSUPPORTED_OPERATION mid-stream."""
        yield a2a_pb2.StreamResponse(task=a2a_pb2.Task(id="t-1"))
        raise A2AError(Reason.UNSUPPORTED_OPERATION, "streaming stops here")

    async def SubscribeToTask(  # noqa: N802
        self, request: a2a_pb2.SubscribeToTaskRequest, context: Any
    ) -> None:
        """A streaming method that writes with context.write, then fails unexpectedly."""
        await context.write(a2a_pb2.StreamResponse(task=a2a_pb2.Task(id=request.id)))
        raise RuntimeError(SECRET)

    def ListTasks(self, request: Any, context: Any) -> Any:  # noqa: N802
        """A synchronous method that succeeds."""
        return a2a_pb2.ListTasksResponse(tasks=[a2a_pb2.Task(id="t-1")])


@pytest.fixture
async def stub() -> AsyncIterator[Any]:
    """A grpc.aio server on 127.0.0.1 with the interceptor, and a stub to call it."""
    server = grpc.aio.server(interceptors=[A2AErrorInterceptor()])
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(Servicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield a2a_pb2_grpc.A2AServiceStub(channel)
    finally:
        await channel.close()
        await server.stop(grace=None)


async def _failed(call: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as failed:
        await call
    return failed.value


async def _drain(call: Any, received: list[str]) -> grpc.aio.AioRpcError:
    """Read a server stream to its error; keep the task id of every event before it."""
    try:
        async for event in call:
            received.append(event.task.id)  # noqa: PERF401 (kept as they arrive, before the error)
    except grpc.aio.AioRpcError as failed:
        return failed
    pytest.fail("the stream ended without an error")


async def test_grpc_a2a_error_becomes_its_status_with_details(stub: Any) -> None:
    """NOT_FOUND, and the ErrorInfo in the trailer: the reason and metadata come back."""
    rpc = await _failed(stub.GetTask(a2a_pb2.GetTaskRequest(id="t-9"), timeout=10))
    assert rpc.code() is grpc.StatusCode.NOT_FOUND
    error = normalize(rpc)
    assert error is not None
    assert (error.reason, error.source, error.metadata) == (
        Reason.TASK_NOT_FOUND,
        Source.ERROR_INFO,
        {"taskId": "t-9"},
    )


async def test_grpc_sync_methods_are_encoded_too(stub: Any) -> None:
    """A synchronous servicer method's A2AError: FAILED_PRECONDITION, TASK_NOT_CANCELABLE."""
    rpc = await _failed(stub.CancelTask(a2a_pb2.CancelTaskRequest(id="t-2"), timeout=10))
    assert rpc.code() is grpc.StatusCode.FAILED_PRECONDITION
    error = normalize(rpc)
    assert error is not None
    assert error.reason is Reason.TASK_NOT_CANCELABLE
    listed = await stub.ListTasks(a2a_pb2.ListTasksRequest(), timeout=10)
    assert [task.id for task in listed.tasks] == ["t-1"]  # successes pass through


async def test_grpc_unexpected_exception_is_internal_with_a_correlation_id(
    stub: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """RuntimeError: INTERNAL, a generic message, the id in ErrorInfo; the secret only logged."""
    with caplog.at_level(logging.ERROR, logger="a2a_client_errors.server"):
        rpc = await _failed(stub.GetTask(a2a_pb2.GetTaskRequest(id="boom"), timeout=10))
    assert rpc.code() is grpc.StatusCode.INTERNAL
    assert SECRET not in (rpc.details() or "")
    error = normalize(rpc)
    assert error is not None
    assert error.reason is Reason.INTERNAL_ERROR
    assert error.metadata["correlationId"] in caplog.text
    assert SECRET in caplog.text


async def test_grpc_the_servicers_own_abort_passes_through(stub: Any) -> None:
    """context.abort in the servicer is its answer: not rewritten as an internal error."""
    rpc = await _failed(stub.GetTask(a2a_pb2.GetTaskRequest(id="abort"), timeout=10))
    assert rpc.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert rpc.details() == "slow down"


async def test_grpc_a_stream_delivers_its_events_then_the_error(stub: Any) -> None:
    """After the first event, the A2AError still ends the stream with its status and details."""
    call = stub.SendStreamingMessage(a2a_pb2.SendMessageRequest(), timeout=10)
    received: list[str] = []
    failed = await _drain(call, received)
    assert received == ["t-1"]
    assert failed.code() is grpc.StatusCode.FAILED_PRECONDITION
    error = normalize(failed)
    assert error is not None
    assert (error.reason, error.kind) == (Reason.UNSUPPORTED_OPERATION, ErrorKind.PROTOCOL)


async def test_grpc_a_writing_stream_fails_as_internal(stub: Any) -> None:
    """A method that writes with context.write and then raises: the write arrives, INTERNAL."""
    call = stub.SubscribeToTask(a2a_pb2.SubscribeToTaskRequest(id="t-3"), timeout=10)
    received: list[str] = []
    failed = await _drain(call, received)
    assert received == ["t-3"]
    assert failed.code() is grpc.StatusCode.INTERNAL
    assert SECRET not in (failed.details() or "")
