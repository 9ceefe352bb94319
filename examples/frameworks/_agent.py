"""A local A2A agent for the framework examples: a2a-sdk's server, on 127.0.0.1, in a thread.

The agent echoes what it is sent, and counts its executions. In front of it, the first
``refuse`` POSTs are answered ``503`` with a ``google.rpc.Status`` body and ``Retry-After: 0``,
as an overloaded agent refuses work: nothing was processed, so the same request may go again.
With ``lose``, the next POSTs after those are run by the agent, and their answer is lost: the
connection closes after its first bytes, before a whole event or JSON body (httpx raises
``RemoteProtocolError``), as when a proxy or the network drops an answer; the message was
processed, and the client cannot know.
The server is the installed a2a-sdk line's own (0.3 or 1.x; 1.x also serves 0.3 clients).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import logging
import socket
import threading
import time
from typing import TYPE_CHECKING, Any

import uvicorn

if TYPE_CHECKING:
    from types import TracebackType

logging.getLogger("a2a").setLevel(logging.CRITICAL)  # the server's own tracebacks: noise here
LINE = "v03" if importlib.metadata.version("a2a-sdk").startswith("0.") else "v1"
UNAVAILABLE = {"error": {"code": 503, "status": "UNAVAILABLE", "message": "overloaded"}}


class LocalAgent:
    """The echo agent; the first ``refuse`` POSTs it gets are answered 503, the next ``lose`` lost.

    Attributes:
        url: the agent's origin (its card at ``/.well-known/agent-card.json``, JSON-RPC at ``/``).
        executions: the messageId of each message the agent ran.
        refused: how many POSTs were answered 503.
        lost: how many answers were lost.
        posts: how many POSTs reached the agent itself.
    """

    def __init__(self, refuse: int = 1, lose: int = 0) -> None:
        self.refuse = refuse
        self.refused = 0
        self.lose = lose
        self.lost = 0
        self.posts = 0
        self.executions: list[str] = []
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        builder = importlib.import_module(f"_agent_{LINE}")
        self._app = builder.build_app(self.url, self.executions)
        config = uvicorn.Config(self, log_level="warning", lifespan="off")
        if lose:  # uvicorn's traceback of each lost answer: noise here (set after its config)
            logging.getLogger("uvicorn.error").setLevel(logging.CRITICAL)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """The ASGI app: refuse the first POSTs, pass the rest to the agent."""
        if scope["type"] == "http" and scope["method"] == "POST":
            if self.refused < self.refuse:
                self.refused += 1
                headers = [(b"content-type", b"application/json"), (b"retry-after", b"0")]
                await send({"type": "http.response.start", "status": 503, "headers": headers})
                await send({"type": "http.response.body", "body": json.dumps(UNAVAILABLE).encode()})
                return
            self.posts += 1
            if self.lost < self.lose:
                self.lost += 1
                await self._lost(scope, receive, send)
                return
        await self._app(scope, receive, send)

    async def _lost(self, scope: Any, receive: Any, send: Any) -> None:
        """Run the agent on the request, then close the connection in the middle of its answer."""
        kept: list[Any] = []

        async def keep(message: Any) -> None:
            kept.append(message)

        await self._app(scope, receive, keep)
        start = next(m for m in kept if m["type"] == "http.response.start")
        body = b"".join(m.get("body", b"") for m in kept if m["type"] == "http.response.body")
        headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": start["status"], "headers": headers})
        await send({"type": "http.response.body", "body": body[:10], "more_body": True})
        raise ConnectionAbortedError("the answer is lost on its way")

    def __enter__(self) -> LocalAgent:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the local agent did not start")
            time.sleep(0.01)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()


def check(ok: bool, summary: str) -> None:
    """Print the summary; exit 1 when the expected behaviour did not happen."""
    print(("ok: " if ok else "FAILED: ") + summary)
    if not ok:
        raise SystemExit(1)
