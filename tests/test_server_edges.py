"""The server side's promises at its edges: no dropped connection, no leak, bounded relays.

Real servers on 127.0.0.1 (uvicorn through tests/asgi.py, grpc.aio), each stopped by its
test; HTTP clients hold one pooled connection, so that a connection the server drops shows
as a failed follow-up, as it does for real clients.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Any

import grpc
import grpc.aio
import httpx
import pytest
from a2a.types import a2a_pb2, a2a_pb2_grpc
from fastapi import FastAPI
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from a2a_client_errors import A2AError, Reason, normalize
from a2a_client_errors._errors import CallError
from a2a_client_errors.server import (
    GRPC_TRAILER_BUDGET,
    RELAY_LIMITS,
    A2AErrorInterceptor,
    A2AErrorMiddleware,
    RelayLimits,
    encode_or_internal,
    exception_handlers,
    from_failure,
    grpc_status,
    to_http,
    to_jsonrpc,
)
from a2a_client_errors.server._unavailable import STORE_UNAVAILABLE, Unavailable, note
from a2a_client_errors.types import ErrorKind, Source, WireShape
from tests.asgi import serve

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

# The server side over a2a-sdk 1.x handlers and types.
pytestmark = pytest.mark.a2a_sdk("1")

SECRET = "api_key=sk-live-42"
ROUNDS = 20

# What no binding can carry, or what one binding refuses: each must leave as INTERNAL_ERROR.
UNENCODABLE: dict[str, Callable[[], A2AError]] = {
    "a message that is not text": lambda: A2AError(Reason.TASK_NOT_FOUND, 404),  # type: ignore[arg-type]
    "a lone surrogate in the message": lambda: A2AError(Reason.TASK_NOT_FOUND, f"\ud800 {SECRET}"),
    "a lone surrogate in the metadata": lambda: A2AError(
        Reason.TASK_NOT_FOUND, "x", {"k": "\udc00"}
    ),
    "a detail protobuf cannot parse": lambda: A2AError(
        Reason.TASK_NOT_FOUND,
        "x",
        extra_details=[
            {"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": SECRET}
        ],
    ),
    "a detail JSON cannot hold": lambda: A2AError(
        Reason.TASK_NOT_FOUND, "x", extra_details=[{"@type": "x", "value": {SECRET}}]
    ),
}
HUGE = {f"k{i}": "v" * 300_000 for i in range(64)}


# --- the Starlette adapters on a real uvicorn, one pooled connection ---------------------------


async def _rpc(request: Any) -> JSONResponse:
    """A JSON-RPC endpoint that fails as the method (or ``?early=1``) asks.

    ``Bug`` fails unexpectedly (``?early=1``: before reading the body), ``NotFound`` raises an
    A2AError, ``Bad:<case>`` an unencodable one; anything else succeeds.
    """
    if request.query_params.get("early"):
        raise RuntimeError(SECRET)
    call = await request.json()
    method = call["method"]
    if method == "Bug":
        raise RuntimeError(SECRET)
    if method == "NotFound":
        raise A2AError(Reason.TASK_NOT_FOUND, "no such task", {"taskId": "t-1"})
    if method.startswith("Bad:"):
        raise UNENCODABLE[method[4:]]()
    return JSONResponse({"jsonrpc": "2.0", "id": call["id"], "result": {}})


async def _half_stream(_: Any) -> StreamingResponse:
    async def chunks() -> AsyncIterator[bytes]:
        yield b"data: one\n\n"
        raise RuntimeError(SECRET)

    return StreamingResponse(chunks(), media_type="text/event-stream")


def _app(*, middleware: bool, handlers: bool, fastapi: bool = False) -> Any:
    routes = [Route("/", _rpc, methods=["POST"]), Route("/half", _half_stream)]
    stack = [Middleware(A2AErrorMiddleware, binding="jsonrpc")] if middleware else []
    kwargs: dict[str, Any] = {"middleware": stack}
    if handlers:
        kwargs["exception_handlers"] = exception_handlers("jsonrpc")
    if fastapi:
        app = FastAPI(**kwargs)
        app.router.routes.extend(routes)
        return app
    return Starlette(routes=routes, **kwargs)


class Peers:
    """An ASGI wrapper that records the client address of every request."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[tuple[str, int]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Record, then serve."""
        if scope["type"] == "http":
            self.seen.append(tuple(scope["client"]))  # type: ignore[arg-type]
        await self.app(scope, receive, send)


def _call(method: str, request_id: object) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method}


def _pooled() -> httpx.AsyncClient:
    return httpx.AsyncClient(limits=httpx.Limits(max_connections=1), timeout=5.0)


async def _rounds(
    client: httpx.AsyncClient, url: str, method: str, rounds: int = ROUNDS
) -> tuple[int, list[Any]]:
    """``rounds`` times: the failing call, then a follow-up; the follow-ups that failed, the ids."""
    failed, ids = 0, []
    for index in range(rounds):
        answer = await client.post(url + "/", json=_call(method, f"r-{index}"))
        assert answer.headers["content-type"].startswith("application/json")
        ids.append(answer.json()["id"])
        try:
            await client.post(url + "/", json=_call("Ok", index))
        except httpx.HTTPError:
            failed += 1
    return failed, ids


@pytest.mark.parametrize("fastapi", [False, True], ids=["starlette", "fastapi"])
@pytest.mark.parametrize("handlers", [False, True], ids=["alone", "with-handlers"])
async def test_the_middleware_never_drops_the_connection_and_echoes_the_id(
    fastapi: bool, handlers: bool
) -> None:
    """Twenty unexpected failures, twenty follow-ups, one TCP connection, every id echoed."""
    app = Peers(_app(middleware=True, handlers=handlers, fastapi=fastapi))
    with serve(app) as url:
        async with _pooled() as client:
            failed, ids = await _rounds(client, url, "Bug")
            failed_a2a, ids_a2a = await _rounds(client, url, "NotFound")
    assert (failed, failed_a2a) == (0, 0)
    assert ids == ids_a2a == [f"r-{index}" for index in range(ROUNDS)]
    assert len(set(app.seen)) == 1  # one connection served all 80 requests


async def test_exception_handlers_alone_announce_the_close_they_cannot_avoid() -> None:
    """After the catch-all Starlette re-raises: Connection: close said; no follow-up fails."""
    app = Peers(_app(middleware=False, handlers=True))
    with serve(app) as url:
        async with _pooled() as client:
            answer = await client.post(url + "/", json=_call("Bug", 1))
            assert answer.headers["connection"] == "close"
            assert answer.json()["error"]["code"] == -32603
            assert SECRET not in answer.text
            refused = await client.post(url + "/", json=_call("NotFound", 2))
            assert "connection" not in refused.headers  # an A2AError never closes
            assert refused.json()["id"] == 2
            failed, _ = await _rounds(client, url, "Bug")
    assert failed == 0


async def test_the_middleware_reads_the_id_the_app_never_read() -> None:
    """The endpoint raised before reading the body: the id is read from it all the same."""
    with serve(_app(middleware=True, handlers=False)) as url:
        async with httpx.AsyncClient(timeout=5.0) as client:
            answer = await client.post(url + "/?early=1", json=_call("Ok", "early-7"))
    assert answer.json()["id"] == "early-7"
    assert answer.json()["error"]["code"] == -32603


async def test_a_jsonrpc_body_without_a_readable_id_answers_null() -> None:
    """A body that is not JSON, or an id of the wrong type: ``null``, as JSON-RPC says."""
    with serve(_app(middleware=True, handlers=False)) as url:
        async with httpx.AsyncClient(timeout=5.0) as client:
            garbage = await client.post(url + "/?early=1", content=b"\xff not json")
            wrong = await client.post(url + "/?early=1", json=_call("Ok", True))
    assert garbage.json()["id"] is None
    assert wrong.json()["id"] is None


async def test_a_stream_that_fails_after_it_started_is_cut_not_completed() -> None:
    """After the response started only closing can say it is cut: the middleware re-raises."""
    app = Starlette(
        routes=[Route("/half", _half_stream)],
        middleware=[Middleware(A2AErrorMiddleware, binding="jsonrpc")],
    )
    with serve(app) as url:
        async with httpx.AsyncClient(timeout=5.0) as client:
            with pytest.raises(httpx.RemoteProtocolError):
                await client.get(url + "/half")
            after = await client.post(url + "/", json=_call("Ok", 1))  # the server goes on
    assert after.status_code == 404  # this app has no JSON-RPC route: Starlette's own 404


async def test_the_middleware_leaves_other_scopes_alone() -> None:
    """Lifespan (and websocket) scopes pass through untouched."""
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["type"])

    await A2AErrorMiddleware(app)({"type": "lifespan"}, None, None)  # type: ignore[arg-type]
    assert seen == ["lifespan"]


def test_the_middleware_refuses_an_unknown_binding() -> None:
    """Only jsonrpc and http+json."""
    with pytest.raises(ValueError, match="binding"):
        A2AErrorMiddleware(None, "grpc")  # type: ignore[arg-type]


@pytest.mark.parametrize("case", list(UNENCODABLE))
async def test_starlette_answers_an_unencodable_error_as_internal(
    case: str, caplog: pytest.LogCaptureFixture
) -> None:
    """-32603 with a correlation id; the failure logged once with that id; nothing of it sent."""
    with (
        caplog.at_level(logging.ERROR, logger="a2a_client_errors.server"),
        serve(_app(middleware=True, handlers=True)) as url,
    ):
        async with httpx.AsyncClient(timeout=5.0) as client:
            answer = await client.post(url + "/", json=_call(f"Bad:{case}", 3))
    body = answer.json()
    assert (body["id"], body["error"]["code"]) == (3, -32603)
    correlation = body["error"]["data"][0]["metadata"]["correlationId"]
    assert SECRET not in answer.text
    ours = [record for record in caplog.records if record.name == "a2a_client_errors.server"]
    assert [record.correlation_id for record in ours] == [correlation]  # type: ignore[attr-defined]


# --- grpc.aio: the same path -------------------------------------------------------------------


class Servicer(a2a_pb2_grpc.A2AServiceServicer):  # type: ignore[misc]
    """GetTask raises the unencodable error its id names (``huge``: a huge metadata map)."""

    async def GetTask(self, request: a2a_pb2.GetTaskRequest, context: Any) -> a2a_pb2.Task:  # noqa: N802
        """Raise it."""
        if request.id == "huge":
            raise A2AError(Reason.TASK_NOT_FOUND, "gone", HUGE)
        raise UNENCODABLE[request.id]()


@pytest.fixture
async def stub() -> AsyncIterator[Any]:
    """A grpc.aio server with the interceptor, on 127.0.0.1, and a stub; both closed after."""
    server = grpc.aio.server(interceptors=[A2AErrorInterceptor()])
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(Servicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield a2a_pb2_grpc.A2AServiceStub(channel)
    finally:
        await channel.close()
        await asyncio.wait_for(server.stop(grace=None), 5)


@pytest.mark.parametrize("case", [*UNENCODABLE, "huge"])
async def test_grpc_answers_an_unencodable_error_as_internal_never_unknown(
    stub: Any, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    """INTERNAL with a correlation id, never UNKNOWN with the exception's text; logged once."""
    with caplog.at_level(logging.ERROR, logger="a2a_client_errors.server"):
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await stub.GetTask(a2a_pb2.GetTaskRequest(id=case), timeout=10)
        again = await _code_of(stub.GetTask(a2a_pb2.GetTaskRequest(id=case), timeout=10))
    rpc = failed.value
    assert rpc.code() is grpc.StatusCode.INTERNAL
    assert again is grpc.StatusCode.INTERNAL  # the channel serves the next call
    error = normalize(rpc)
    assert error is not None
    assert error.reason is Reason.INTERNAL_ERROR
    correlation = error.metadata["correlationId"]
    assert SECRET not in (rpc.details() or "")
    ours = [record for record in caplog.records if record.name == "a2a_client_errors.server"]
    assert ours[0].correlation_id == correlation  # type: ignore[attr-defined]
    assert len(ours) == 2  # once per call


async def _code_of(call: Any) -> grpc.StatusCode:
    try:
        await call
    except grpc.aio.AioRpcError as rpc:
        return rpc.code()
    return grpc.StatusCode.OK


def test_the_grpc_encoder_refuses_trailers_past_the_budget() -> None:
    """What fits is sent as it is; what does not fit the budget is refused, not truncated."""
    fits = A2AError(Reason.TASK_NOT_FOUND, "m", {"k": "v" * (GRPC_TRAILER_BUDGET // 2)})
    assert grpc_status(fits).code is grpc.StatusCode.NOT_FOUND
    with pytest.raises(ValueError, match="trailers"):
        grpc_status(A2AError(Reason.TASK_NOT_FOUND, "m", {"k": "v" * GRPC_TRAILER_BUDGET}))


# --- never raises, never leaks ------------------------------------------------------------------

texts = st.one_of(
    st.text(), st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF))
)
values = st.one_of(texts, st.integers(), st.none(), st.booleans())


@settings(max_examples=150, deadline=None)
@given(
    message=st.one_of(texts, st.integers(), st.binary()),
    metadata=st.dictionaries(texts, values, max_size=4),
    reason=st.one_of(st.sampled_from(list(Reason)), texts),
)
def test_encode_or_internal_never_raises_on_any_binding(
    message: Any, metadata: dict[str, Any], reason: Any
) -> None:
    """Whatever the error holds, every binding gets an answer; a refused one is INTERNAL."""
    logging.getLogger("a2a_client_errors.server").disabled = True
    try:
        error = A2AError(reason, message, metadata)
        status, _, body = encode_or_internal(to_http, error)
        json.loads(body)
        answer = encode_or_internal(lambda e: json.dumps(to_jsonrpc(e, 1)).encode(), error)
        json.loads(answer)
        proto = encode_or_internal(grpc_status, error)
        assert proto.code in set(grpc.StatusCode)
        if not isinstance(message, str):
            assert status == 500
            assert b"Internal error (reference" in body
    finally:
        logging.getLogger("a2a_client_errors.server").disabled = False


# --- from_failure: what a gateway relays is bounded -----------------------------------------------


def _peer_error(
    metadata: dict[str, str], message: str = "gone", reason: Reason | str = Reason.TASK_NOT_FOUND
) -> CallError:
    return CallError(
        ErrorKind.PROTOCOL,
        reason,
        Source.ERROR_INFO,
        WireShape.JSONRPC,
        message=message,
        metadata=metadata,
    )


def test_a_relay_of_a_huge_peer_map_stays_small_on_every_binding() -> None:
    """64 x 300 KB of peer metadata: a body of a few KB, the count of what was dropped."""
    relayed = from_failure(_peer_error(HUGE))
    assert relayed.metadata == {"droppedMetadata": "64"}
    _, _, body = to_http(relayed)
    assert len(body) < 2048
    assert grpc_status(relayed).code is grpc.StatusCode.NOT_FOUND  # fits the trailer budget


def test_a_relay_keeps_what_fits_and_counts_the_rest() -> None:
    """Entries within the caps pass; too long a key or value, past the count or total, dropped."""
    limits = RelayLimits(max_entries=3, max_key=8, max_value=8, max_total=40)
    metadata = {"taskId": "t-1", "long-key-here": "v", "k": "x" * 9, "a": "1", "b": "2", "c": "3"}
    relayed = from_failure(_peer_error(metadata), limits=limits)
    assert relayed.metadata == {"taskId": "t-1", "a": "1", "b": "2", "droppedMetadata": "3"}


def test_a_relay_caps_the_peers_message_and_escapes_it() -> None:
    """A long message ends in '...'; control characters arrive escaped."""
    relayed = from_failure(_peer_error({}, message="line\x1b[2J" + "x" * 2000))
    assert relayed.message.startswith("line\\x1b[2J")
    assert len(relayed.message) == RELAY_LIMITS.max_message
    assert relayed.message.endswith("...")


def test_a_relay_keeps_an_unknown_peer_reason_first() -> None:
    """The peer's unknown reason survives the caps, ahead of its metadata."""
    relayed = from_failure(_peer_error(HUGE, reason="PEER_SPECIFIC"))
    assert relayed.reason == "INVALID_AGENT_RESPONSE"
    assert relayed.metadata == {"peerReason": "PEER_SPECIFIC", "droppedMetadata": "64"}


# --- the middleware completes a refusal deduplicate noted ----------------------------------


async def _asgi(app: Any) -> list[dict[str, Any]]:
    """Run ``app`` under the middleware for one POST; every message it sent the client."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b'{"id": 9}', "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/", "headers": []}
    await A2AErrorMiddleware(app, binding="jsonrpc")(scope, receive, send)
    return sent


SSE_START = {
    "type": "http.response.start",
    "status": 200,
    "headers": [(b"content-type", b"text/event-stream; charset=utf-8")],
}


async def test_an_event_stream_goes_out_whole_with_its_first_event() -> None:
    """No refusal: the stream's start waits for its first event, then all goes out in order."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send(SSE_START)
        await send({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    sent = await _asgi(app)
    assert [message["type"] for message in sent] == [
        "http.response.start",
        "http.response.body",
        "http.response.body",
    ]
    assert sent[0] is SSE_START


@pytest.mark.parametrize("how", ["answers", "streams", "raises"])
async def test_a_noted_refusal_is_answered_503_in_place_of_the_apps_answer(how: str) -> None:
    """Noted before the app answers, before a stream's first event, or before it raised: 503."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if how == "streams":
            await send(SSE_START)
        note(Unavailable(STORE_UNAVAILABLE, "not now", 2.5, "jsonrpc"))
        if how == "raises":
            raise RuntimeError("what the route made of it")
        if how == "answers":
            await send({"type": "http.response.start", "status": 500, "headers": []})
        await send({"type": "http.response.body", "body": b"the app's own", "more_body": False})

    sent = await _asgi(app)
    assert len(sent) == 2
    start, body = sent
    assert start["status"] == 503
    assert (b"retry-after", b"3") in start["headers"]
    answer = json.loads(body["body"])
    assert answer["id"] == 9  # read from the body, as the handler did not know it
    assert answer["error"]["code"] == -32000
    assert note(Unavailable(STORE_UNAVAILABLE, "x", 1)) is False  # outside a request: no slot
