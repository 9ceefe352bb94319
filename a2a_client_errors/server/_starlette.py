"""Starlette, FastAPI and other ASGI apps answer `A2AError` in their binding's wire shape.

`A2AErrorMiddleware` is the whole adapter: an ASGI middleware that answers every exception
raised before the response starts, completely, and goes on serving. Nothing reaches the ASGI
server, so it neither logs a traceback of its own nor closes the connection: a client's next
request on the same pooled connection is served. The JSON-RPC answer echoes the request's
``id``, read from the body the app read (or, when it raised before reading it, from the
body itself).

`exception_handlers` is the older, lighter way (``exception_handlers=`` of Starlette and
FastAPI). Its `A2AError` handler runs where Starlette answers and goes on (its
``ExceptionMiddleware`` and the wrapper of each route). Its catch-all cannot: Starlette gives
a handler keyed by ``Exception`` to its outermost ``ServerErrorMiddleware``, which answers and
then re-raises, and uvicorn then logs "Exception in ASGI application" and closes the
connection. That answer therefore says ``Connection: close``, so that no client sends its
next request on a connection about to close; its JSON-RPC ``id`` is ``null`` (that middleware
cannot read the body). Add `A2AErrorMiddleware` and no exception gets that far.

Only an exception raised after the response has started (a streaming endpoint that fails
half-way) still reaches the ASGI server: that answer cannot be completed, the connection must
close, and the client sees a cut response rather than a complete wrong one.

`A2AErrorMiddleware` also completes the answer to a send that `deduplicate` refused (its store
cannot take the message now): a2a-sdk's routes cannot send a status or a header of the
handler's choosing, so the handler notes the refusal for the request the middleware serves,
and the middleware answers it in place of what the routes made: HTTP 503 with ``Retry-After``
and the error body of the binding the send came over (``server/_unavailable.py``).
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any, Final, Literal

from a2a_client_errors.server._encoding import (
    A2AError,
    encode_or_internal,
    internal_error,
    to_http,
    to_jsonrpc,
)
from a2a_client_errors.server._unavailable import (
    Unavailable,
    http_answer,
    jsonrpc_answer,
    refusals,
)

if TYPE_CHECKING:
    import logging
    from collections.abc import Awaitable, Callable, MutableMapping

    Message = MutableMapping[str, Any]
    Receive = Callable[[], Awaitable[Message]]
    Send = Callable[[Message], Awaitable[None]]

__all__ = ["BODY_WAIT", "MAX_ID_BODY", "A2AErrorMiddleware", "Binding", "exception_handlers"]

Binding = Literal["jsonrpc", "http+json"]
"""The two HTTP bindings these adapters answer in."""
BODY_WAIT: Final = 1.0
"""Seconds an adapter waits for a request body nobody read yet (for its JSON-RPC id)."""
MAX_ID_BODY: Final = 4 * 1024 * 1024
"""Bytes of a request body `A2AErrorMiddleware` keeps to read the JSON-RPC id from."""


def _checked(binding: str) -> None:
    if binding not in ("jsonrpc", "http+json"):
        msg = f"binding must be 'jsonrpc' or 'http+json', not {binding!r}"
        raise ValueError(msg)


def _answer(
    binding: str, error: A2AError, request_id: str | int | None, logger: logging.Logger | None
) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of the error in the binding (the unencodable ones internal)."""
    if binding == "jsonrpc":

        def encode(answer: A2AError) -> bytes:
            return json.dumps(to_jsonrpc(answer, request_id)).encode()

        content = encode_or_internal(encode, error, logger=logger)
        return 200, {"Content-Type": "application/json"}, content
    return encode_or_internal(to_http, error, logger=logger)


def _id_in(body: bytes) -> str | int | None:
    """The JSON-RPC id a request body carries, or None."""
    try:
        call = json.loads(body)
    except ValueError:  # not JSON (nor UTF-8): the id is unknown (JSON-RPC: null)
        return None
    request_id = call.get("id") if isinstance(call, dict) else None
    if isinstance(request_id, (str, int)) and not isinstance(request_id, bool):
        return request_id
    return None


class A2AErrorMiddleware:
    """An ASGI middleware: an app's exceptions leave as A2A errors, the connection stays up.

    An `A2AError` is encoded as it is; any other exception becomes `internal_error` (logged
    once, with its correlation id, then answered without a trace); an error that cannot be
    encoded takes `encode_or_internal`'s path. The answer is complete (``Content-Length``),
    nothing is re-raised, and the connection serves the client's next request. An exception
    raised after the response started is re-raised: only closing the connection can tell the
    client that answer is cut. Starlette's and FastAPI's own handlers (``HTTPException``,
    validation errors, `exception_handlers`) run inside it and keep their answers, except
    for a send `deduplicate` refused: that one is answered 503 with ``Retry-After`` and the
    error body of its binding (the module docstring tells why). The headers of an event
    stream wait for its first event (a refusal may come before it, on a2a-sdk 0.3)::

        app = Starlette(routes=..., middleware=[Middleware(A2AErrorMiddleware, binding="jsonrpc")])
        app = FastAPI(); app.add_middleware(A2AErrorMiddleware, binding="http+json")

    For JSON-RPC the answer is HTTP 200 with the request's ``id``: the middleware keeps what
    the app reads of the body (up to `MAX_ID_BODY` bytes) and, when the app raised before
    reading it, reads it itself (at most `BODY_WAIT` seconds); ``null`` when neither can.

    Args:
        app: the ASGI app.
        binding: ``"jsonrpc"`` or ``"http+json"``.
        logger: where unexpected exceptions are logged (see `internal_error`).
    """

    def __init__(
        self, app: Any, binding: Binding = "jsonrpc", *, logger: logging.Logger | None = None
    ) -> None:
        _checked(binding)
        self.app = app
        self.binding = binding
        self.logger = logger

    async def __call__(self, scope: Any, receive: Receive, send: Send) -> None:
        """Run the app; answer what it raises before its response starts."""
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        body = _Body(receive, keep=self.binding == "jsonrpc")
        refused: list[Unavailable] = []
        slot = refusals.set(refused)
        started = False  # the client has the start of a response
        held: Message | None = None  # an event stream's start, until its first event
        replaced = False  # a refusal was answered: the app's own answer goes nowhere

        async def refuse() -> None:
            nonlocal started, held, replaced
            started, held, replaced = True, None, True
            await _send(send, *await _refusal(refused[0], body))

        async def watch(message: Message) -> None:
            nonlocal started, held
            if replaced:
                return
            if message.get("type") == "http.response.start":
                if refused:
                    await refuse()
                elif _is_event_stream(message):
                    held = message
                else:
                    started = True
                    await send(message)
                return
            if held is not None:
                if refused:
                    await refuse()
                    return
                started, opening, held = True, held, None
                await send(opening)
            await send(message)

        try:
            await self.app(scope, body.receive, watch)
        except Exception as exc:
            if started:
                raise  # the answer cannot be completed: only closing the connection says so
            if refused:
                await refuse()
                return
            error = exc if isinstance(exc, A2AError) else internal_error(exc, logger=self.logger)
            request_id = await body.request_id() if self.binding == "jsonrpc" else None
            await _send(send, *_answer(self.binding, error, request_id, self.logger))
        finally:
            refusals.reset(slot)
        if held is not None:  # a start with no body after it
            await send(held)


def _is_event_stream(start: Message) -> bool:
    """Whether a response's start opens an event stream (``text/event-stream``)."""
    for name, value in start.get("headers") or ():
        if bytes(name).lower() == b"content-type":
            return bytes(value).lower().startswith(b"text/event-stream")
    return False


async def _refusal(refused: Unavailable, body: _Body) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) answering a send `deduplicate` refused, in its binding."""
    if refused.binding == "jsonrpc":
        request_id = refused.request_id
        if request_id is None:
            request_id = await body.request_id()
        return jsonrpc_answer(refused, request_id)
    return http_answer(refused)


async def _send(send: Send, status: int, headers: dict[str, str], content: bytes) -> None:
    """Send a whole response: its start (with its length) and its body."""
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
    raw.append((b"content-length", str(len(content)).encode("latin-1")))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": content})


class _Body:
    """The request body as the app reads it, kept (capped) for the JSON-RPC id."""

    __slots__ = ("_chunks", "_complete", "_keep", "_receive", "_size")

    def __init__(self, receive: Receive, *, keep: bool) -> None:
        self._receive = receive
        self._keep = keep
        self._chunks: list[bytes] = []
        self._size = 0
        self._complete = False

    async def receive(self) -> Message:
        message = await self._receive()
        if message.get("type") == "http.request" and not self._complete:
            chunk = message.get("body", b"")
            if self._keep and self._size <= MAX_ID_BODY:
                self._chunks.append(chunk)
                self._size += len(chunk)
            self._complete = not message.get("more_body", False)
        elif message.get("type") == "http.disconnect":
            self._complete = True
        return message

    async def request_id(self) -> str | int | None:
        """The id the body carries; the rest of the body is read first, bounded in time."""
        try:
            await asyncio.wait_for(self._drain(), BODY_WAIT)
        except Exception:  # cut short, gone, too slow: the id is unknown
            return None
        if self._size > MAX_ID_BODY:
            return None
        return _id_in(b"".join(self._chunks))

    async def _drain(self) -> None:
        while not self._complete:
            await self.receive()


def exception_handlers(
    binding: Binding, *, logger: logging.Logger | None = None
) -> dict[Any, Callable[[Any, Exception], Awaitable[Any]]]:
    """Starlette / FastAPI exception handlers that answer in one binding's wire shape.

    `A2AError` is encoded as it is; any other exception becomes `internal_error` (logged, then
    answered without a trace); an error that cannot be encoded takes `encode_or_internal`'s
    path. Starlette's own ``HTTPException`` (a 404 route, say) keeps its handler. Pass the
    dict as it is::

        app = Starlette(routes=..., exception_handlers=exception_handlers("http+json"))
        app = FastAPI(exception_handlers=exception_handlers("jsonrpc"))

    The JSON-RPC handler answers with HTTP 200 and the request's ``id``, read from the body
    (``null`` when it cannot be read), as the official SDKs do.

    Starlette runs the catch-all (keyed by ``Exception``) from its outermost middleware, which
    re-raises after answering: the ASGI server then logs the exception and closes the
    connection, so that answer says ``Connection: close`` and its id is ``null``. Add
    `A2AErrorMiddleware` (the module docstring tells why) to answer those too and keep the
    connection.

    Args:
        binding: ``"jsonrpc"`` or ``"http+json"``.
        logger: where unexpected exceptions are logged (see `internal_error`).
    """
    _checked(binding)
    from starlette.responses import Response  # noqa: PLC0415 (only servers need Starlette)

    async def answer(request: Any, exc: Exception, *, closing: bool) -> Any:
        error = exc if isinstance(exc, A2AError) else internal_error(exc, logger=logger)
        request_id = await _request_id(request) if binding == "jsonrpc" else None
        status, headers, content = _answer(binding, error, request_id, logger)
        if closing:
            headers = {**headers, "Connection": "close"}
        return Response(content, status_code=status, headers=headers)

    async def respond(request: Any, exc: Exception) -> Any:
        return await answer(request, exc, closing=False)

    async def respond_and_close(request: Any, exc: Exception) -> Any:
        return await answer(request, exc, closing=True)

    return {A2AError: respond, Exception: respond_and_close}


async def _request_id(request: Any) -> str | int | None:
    """The JSON-RPC id of the request, when its body can be read and carries one."""
    body: Any = getattr(request, "_body", None)  # what the endpoint read (Starlette keeps it)
    if not isinstance(body, bytes):
        try:  # the endpoint raised before reading it: read it, bounded in time
            body = await asyncio.wait_for(request.body(), BODY_WAIT)
        except Exception:  # consumed, cut short, not readable here: the id is unknown
            return None
    return _id_in(body)
