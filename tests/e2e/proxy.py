"""A loopback proxy in front of a peer: forwards with httpx, and can strip or rewrite errors.

It plays the hops between an A2A client and an agent (gateways, meshes, load balancers) that
drop ``error.data``/``error.details`` or replace error bodies with their own page.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import httpx
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

from a2a_client_errors import Reason
from a2a_client_errors.server import A2AError, to_jsonrpc
from tests.asgi import serve

if TYPE_CHECKING:
    import contextlib

    from starlette.requests import Request

MODES = ("forward", "strip", "bare")
_HOP_HEADERS = {"content-length", "transfer-encoding", "connection", "host", "content-encoding"}


def _strip(body: bytes) -> bytes:
    """The body without any typed details (JSON-RPC ``data``, Status ``details``)."""
    try:
        parsed: Any = json.loads(body)
    except ValueError:
        return body
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(error, dict):
        error.pop("data", None)
        error.pop("details", None)
    return json.dumps(parsed).encode()


def _is_error(status: int, body: bytes) -> bool:
    if status >= 400:
        return True
    try:
        parsed: Any = json.loads(body)
    except ValueError:
        return False
    return isinstance(parsed, dict) and isinstance(parsed.get("error"), dict)


class Proxy:
    """Forwards every request to ``upstream``; ``mode`` says what happens to error answers.

    * ``forward``: nothing;
    * ``strip``: error bodies lose their details (the codes and statuses stay);
    * ``bare``: error answers become a gateway's ``502`` HTML page.

    With ``require_extension``, the proxy is a gateway that enforces what the agent's card
    says: a JSON-RPC call that does not declare that extension URI in ``A2A-Extensions`` is
    answered with EXTENSION_SUPPORT_REQUIRED (-32008, ErrorInfo in ``error.data``) and not
    forwarded. ``declared`` keeps the ``A2A-Extensions`` value of every POST it received.
    """

    def __init__(
        self, upstream: str, mode: str = "forward", *, require_extension: str | None = None
    ) -> None:
        if mode not in MODES:
            msg = f"mode must be one of {MODES}"
            raise ValueError(msg)
        self.upstream = upstream.rstrip("/")
        self.mode = mode
        self.require_extension = require_extension
        self.declared: list[str | None] = []
        self.url = ""
        self._serving: contextlib.AbstractContextManager[str] | None = None

    async def _forward(self, request: Request) -> Response:
        if request.method == "POST":
            self.declared.append(request.headers.get("A2A-Extensions"))
            refusal = await self._refusal(request)
            if refusal is not None:
                return refusal
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_HEADERS}
        async with httpx.AsyncClient(timeout=10) as client:
            answer = await client.request(
                request.method,
                self.upstream + request.url.path,
                params=request.query_params,
                headers=headers,
                content=await request.body(),
            )
        body = answer.content
        status = answer.status_code
        media = answer.headers.get("content-type", "")
        if self.mode != "forward" and _is_error(status, body):
            if self.mode == "strip":
                body = _strip(body)
            else:
                status, body, media = 502, b"<html>Bad Gateway</html>", "text/html"
        return Response(body, status_code=status, media_type=media or None)

    async def _refusal(self, request: Request) -> Response | None:
        """EXTENSION_SUPPORT_REQUIRED, for a JSON-RPC call that leaves the extension out."""
        if self.require_extension is None:
            return None
        declared = request.headers.get("A2A-Extensions", "")
        if self.require_extension in {uri.strip() for uri in declared.split(",")}:
            return None
        try:
            call: Any = json.loads(await request.body())
        except ValueError:
            return None
        error = A2AError(
            Reason.EXTENSION_SUPPORT_REQUIRED,
            "This agent requires an extension the request did not declare.",
        )
        body = to_jsonrpc(error, call.get("id") if isinstance(call, dict) else None)
        return Response(json.dumps(body), media_type="application/json")

    def __enter__(self) -> Proxy:
        app = Starlette(
            routes=[Route("/{path:path}", self._forward, methods=["GET", "POST", "DELETE"])]
        )
        self._serving = serve(app)
        self.url = self._serving.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._serving is not None
        self._serving.__exit__(None, None, None)
