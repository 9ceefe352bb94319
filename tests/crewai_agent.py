"""Test agents of ours that answer with JSON-RPC codes beyond A2A 1.0's: crewai's, draft 1.1's.

* `CrewaiAgent` answers as crewai 1.15.30's A2A error table does (``crewai/a2a/errors.py`` in
  the crewai 1.15.30 wheel, the same file as ``lib/crewai/src/crewai/a2a/errors.py`` of
  crewAIInc/crewAI at f4731f5025f861c78e3af0487cc80bf5e7c64782): ``A2AError.to_response``
  writes ``{"jsonrpc": "2.0", "error": {"code", "message"[, "data"]}, "id"}``;
  ``UnsupportedExtensionError`` is -32010 with the required URIs in its message only (no
  ``data``), ``RateLimitExceededError(retry_after=N)`` is -32013 with ``data`` ``{"retry_after":
  N}`` (none when N is 0 or unset). Each request takes the next answer of its script.
* `DraftAgent` is a draft A2A 1.1 agent (the ``dev-1.1`` branch, A2A PR #1810): one task with a
  ``generation``; a SendMessage whose ``configuration.ifGenerationMatch`` differs from it is
  refused with -32010 (TaskGenerationMismatchError), with or without an ErrorInfo.

Both are Starlette apps served on 127.0.0.1 by `tests.asgi.serve`, JSON-RPC on HTTP 200
(``application/json``), and record every request they read. Nothing here is shipped.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

if TYPE_CHECKING:
    from starlette.requests import Request

PATH = "/a2a"
UNSUPPORTED_EXTENSION = -32010
GENERATION_MISMATCH = -32010
RATE_LIMIT_EXCEEDED = -32013
TASK_ID = "task-7"


def task(state: str = "TASK_STATE_COMPLETED", generation: int | None = None) -> dict[str, Any]:
    """A task as a 1.0 (or draft 1.1, with its generation) agent answers it."""
    found: dict[str, Any] = {"id": TASK_ID, "contextId": "ctx-7", "status": {"state": state}}
    if generation is not None:
        found["generation"] = generation
    return found


def unsupported_extension(*uris: str) -> dict[str, Any]:
    """The error object of crewai's ``UnsupportedExtensionError(required_extensions=...)``."""
    message = "Client does not support required extensions"
    if uris:
        message = f"{message}: {', '.join(uris)}"
    return {"code": UNSUPPORTED_EXTENSION, "message": message}


def rate_limit_exceeded(retry_after: Any = None) -> dict[str, Any]:
    """The error object of crewai's ``RateLimitExceededError(retry_after=...)`` (any value).

    crewai types it ``int``; the tests also put there what a careless server might.
    """
    if not retry_after:
        return {"code": RATE_LIMIT_EXCEEDED, "message": "Rate limit exceeded"}
    return {
        "code": RATE_LIMIT_EXCEEDED,
        "message": f"Rate limit exceeded. Retry after {retry_after} seconds",
        "data": {"retry_after": retry_after},
    }


def task03() -> dict[str, Any]:
    """The same task as an A2A 0.3 agent (crewai's a2a-sdk 0.3 server) answers it."""
    return {"kind": "task", "id": TASK_ID, "contextId": "ctx-7", "status": {"state": "completed"}}


def _result(method: str) -> dict[str, Any]:
    """The operation's result: 1.0 shapes for 1.0 methods, 0.3 shapes for 0.3 methods."""
    if "/" in method:
        return task03()
    return {"task": task()} if method == "SendMessage" else task()


@dataclass
class CrewaiAgent:
    """Answers each request with the next entry of ``script``; the last entry repeats.

    An entry is an error object, or None for the operation's result. ``requests`` keeps each
    JSON-RPC body read.
    """

    script: list[dict[str, Any] | None] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    async def _answer(self, request: Request) -> JSONResponse:
        body = await request.json()
        with self._lock:
            self.requests.append(body)
            index = min(len(self.requests), len(self.script)) - 1
            error = self.script[index] if index >= 0 else None
        if error is None:
            result = _result(body["method"])
            return JSONResponse({"jsonrpc": "2.0", "id": body.get("id"), "result": result})
        # ``A2AError.to_response``: the error first, the id last.
        return JSONResponse({"jsonrpc": "2.0", "error": error, "id": body.get("id")})

    def app(self) -> Starlette:
        """The agent's Starlette app (JSON-RPC at `PATH`)."""
        return Starlette(routes=[Route(PATH, self._answer, methods=["POST"])])


@dataclass
class DraftAgent:
    """A draft 1.1 agent with one task at ``generation``; each SendMessage moves it on.

    A SendMessage whose ``configuration.ifGenerationMatch`` is not the current generation is
    refused with -32010: with the ErrorInfo a2a-sdk puts in ``data`` when ``error_info``, bare
    when not (the shape a minimal server writes).
    """

    generation: int = 3
    error_info: bool = False
    requests: list[dict[str, Any]] = field(default_factory=list)

    async def _answer(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append(body)
        method, params = body["method"], body.get("params") or {}
        if method == "GetTask":
            return self._reply(body, task(generation=self.generation))
        wanted = (params.get("configuration") or {}).get("ifGenerationMatch")
        if wanted is not None and int(wanted) != self.generation:
            error: dict[str, Any] = {
                "code": GENERATION_MISMATCH,
                "message": f"Task generation mismatch: expected {wanted} but current "
                f"generation is {self.generation}",
            }
            if self.error_info:
                error["data"] = [
                    {
                        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                        "reason": "TASK_GENERATION_MISMATCH",
                        "domain": "a2a-protocol.org",
                        "metadata": {
                            "taskId": TASK_ID,
                            "expectedGeneration": str(wanted),
                            "currentGeneration": str(self.generation),
                        },
                    }
                ]
            return JSONResponse({"jsonrpc": "2.0", "id": body.get("id"), "error": error})
        self.generation += 1
        return self._reply(body, {"task": task(generation=self.generation)})

    @staticmethod
    def _reply(body: dict[str, Any], result: dict[str, Any]) -> JSONResponse:
        return JSONResponse({"jsonrpc": "2.0", "id": body.get("id"), "result": result})

    def app(self) -> Starlette:
        """The agent's Starlette app (JSON-RPC at `PATH`)."""
        return Starlette(routes=[Route(PATH, self._answer, methods=["POST"])])
