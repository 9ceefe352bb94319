"""A loopback TCP proxy that loses answers: the hop between a client and an agent that fails.

For each HTTP request it decides, by a plan the test sets:

* ``forward``: the request goes to the agent and the answer comes back;
* ``lose``: the request goes to the agent, the agent answers in full (a stream: starts
  answering), and the answer is thrown away: the client's connection is closed without a byte
  (the agent did the work; the client cannot know);
* ``drop``: the request is never forwarded; the client's connection is closed;
* ``cut``: the request goes to the agent, and the client's connection is closed at once,
  before the agent answers, while the connection to the agent stays open until the agent has
  answered in full (a stream: until it ends): a proxy's idle timeout during a long blocking
  send. The agent sees no disconnect and finishes the work; the client cannot know. What the
  agent answered is kept in `LossyProxy.cut_answers` (`wait_cut_answers` waits for it).

`down` makes it refuse connections (a dead endpoint: nothing is sent), `up` brings it back on
the same port.

A connection lives at most ``timeout`` seconds (30 by default), ``cut`` ones included: an
agent that has not answered by then sees its connection closed.

It speaks just enough HTTP/1.1 for this (a head, then a ``Content-Length`` or chunked body)
and asks the agent to close after each answer, so that one answer is one connection's worth
of bytes. It runs its own event loop on a thread, on 127.0.0.1, and stops in bounded time.

It is what the exactly-once tests and the benchmark put between a client and a real agent:
the answers it loses are answers the agent gave, so the tasks it made can be counted::

    with EmbeddedPeer() as peer, LossyProxy(peer.http_target, lose_sends(1)) as proxy:
        ...  # point the client at proxy.url
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from a2a_client_errors._operations import OPERATION_OF_METHOD, WORK_OPERATIONS, rest_operation

__all__ = [
    "LosingTransport",
    "LossyProxy",
    "Plan",
    "Seen",
    "forward_all",
    "lose_sends",
    "lose_share",
]

_HEAD_LIMIT = 64 * 1024


@dataclass(frozen=True)
class Seen:
    """One request the proxy saw."""

    method: str
    path: str
    body: bytes

    @property
    def rpc_method(self) -> str | None:
        """The JSON-RPC method of the body, if it is a JSON-RPC request."""
        try:
            parsed: Any = json.loads(self.body)
        except ValueError:
            return None
        return parsed.get("method") if isinstance(parsed, dict) else None

    @property
    def is_send(self) -> bool:
        """Whether it sends a message (SendMessage or SendStreamingMessage, any binding)."""
        sent = OPERATION_OF_METHOD.get(self.rpc_method or "") in WORK_OPERATIONS
        return sent or rest_operation(self.method, self.path.partition("?")[0]) in WORK_OPERATIONS


Plan = Callable[[Seen], str]


def forward_all(seen: Seen) -> str:
    """The plan that loses nothing."""
    return "forward"


def lose_sends(count: int, *, mode: str = "lose") -> Plan:
    """A plan that applies ``mode`` (``lose``, ``drop`` or ``cut``) to the first ``count`` sends."""
    left = [count]

    def plan(seen: Seen) -> str:
        if seen.is_send and left[0] > 0:
            left[0] -= 1
            return mode
        return "forward"

    return plan


def lose_share(share: float, *, seed: int = 0, mode: str = "lose") -> Plan:
    """A plan that applies ``mode`` (``lose``, ``drop`` or ``cut``) to a ``share`` of the sends.

    The sends are drawn by a seeded random source: the same seed, the same schedule.
    """
    draw = random.Random(seed)  # noqa: S311 (a test schedule, not a secret)

    def plan(seen: Seen) -> str:
        return mode if seen.is_send and draw.random() < share else "forward"

    return plan


class LossyProxy:
    """Forwards to ``upstream`` (``host:port``) by a plan; counts what it did.

    Attributes:
        seen: Every request, in order.
        counts: How many requests each action (``forward``, ``lose``, ``drop``, ``cut``) took.
        cut_answers: For each ``cut`` request whose agent answered to the end, the first 64
            KiB of that answer (head and body), in the order they ended.
    """

    def __init__(self, upstream: str, plan: Plan = forward_all, *, timeout: float = 30.0) -> None:
        host, _, port = upstream.rpartition(":")
        self.upstream = (host.strip("[]"), int(port))
        self.plan = plan
        self.timeout = timeout
        self.seen: list[Seen] = []
        self.counts: Counter[str] = Counter()
        self.cut_answers: list[bytes] = []
        self._answered = threading.Condition()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[Any]] = set()
        self.port = 0

    @property
    def url(self) -> str:
        """The proxy's origin."""
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LossyProxy:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        future.result(timeout=10)
        return self

    def __exit__(self, *exc: object) -> None:
        future = asyncio.run_coroutine_threadsafe(self._stop(), self._loop)
        with contextlib.suppress(Exception):
            future.result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def wait_cut_answers(self, count: int = 1, timeout: float = 10.0) -> list[bytes]:
        """Wait until the agent has answered ``count`` ``cut`` requests to the end.

        Args:
            count: How many answers to wait for.
            timeout: Seconds to wait at most (a guard, not a measure).

        Returns:
            `cut_answers` (a copy).

        Raises:
            TimeoutError: If fewer answers ended within ``timeout``.
        """
        with self._answered:
            if not self._answered.wait_for(lambda: len(self.cut_answers) >= count, timeout):
                raise TimeoutError(f"fewer than {count} cut requests were answered in time")
            return list(self.cut_answers)

    def down(self) -> None:
        """Stop listening: a client's connection is refused (nothing reaches the agent).

        The endpoint is dead as a stopped process is, until `up`; connections in flight are
        cut. The port stays the proxy's.
        """
        future = asyncio.run_coroutine_threadsafe(self._stop(), self._loop)
        future.result(timeout=10)
        self._server = None

    def up(self) -> None:
        """Listen again, on the same port, after `down`."""
        if self._server is not None:
            return
        future = asyncio.run_coroutine_threadsafe(self._start(self.port), self._loop)
        future.result(timeout=10)

    async def _start(self, port: int = 0) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _stop(self) -> None:
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.wait(self._connections, timeout=5)
        if self._server is not None:
            self._server.close()
            await asyncio.wait_for(self._server.wait_closed(), 5)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
            task.add_done_callback(self._connections.discard)
        try:
            await asyncio.wait_for(self._one(reader, writer), self.timeout)
        except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError, ValueError):
            pass
        except asyncio.CancelledError:
            pass  # the proxy is stopping: the connection goes with it
        finally:
            writer.close()
            # A stop cancels this task, maybe again while it waits here: it ends either way,
            # and must end as done, not cancelled (asyncio reads a cancelled connection task's
            # exception, and logs a traceback).
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await writer.wait_closed()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        if len(head) > _HEAD_LIMIT:
            return
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = [line for line in lines[1:] if line]
        names = {line.split(":", 1)[0].strip().lower(): line for line in headers}
        body = b""
        if "content-length" in names:
            body = await reader.readexactly(int(names["content-length"].split(":", 1)[1]))
        elif "chunked" in names.get("transfer-encoding", "").lower():
            body = await _read_chunked(reader)
            headers = [h for h in headers if not h.lower().startswith("transfer-encoding")]
            headers.append(f"Content-Length: {len(body)}")
        seen = Seen(method, path, body)
        self.seen.append(seen)
        action = self.plan(seen)
        self.counts[action] += 1
        if action == "drop":
            return
        headers = [h for h in headers if not h.lower().startswith("connection:")]
        request = "\r\n".join([lines[0], *headers, "Connection: close", "", ""]).encode("latin-1")
        up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        try:
            up_writer.write(request + body)
            await up_writer.drain()
            if action == "cut":
                await self._cut(writer, up_reader)
                return
            head = b""
            while chunk := await up_reader.read(65536):
                if action == "forward":
                    writer.write(chunk)
                    await writer.drain()
                elif len(head) < _HEAD_LIMIT:
                    head += chunk
                    if b"\r\n\r\n" in head and b"text/event-stream" in head.lower():
                        break  # a stream the agent has started: lost from here, not at its end
        finally:
            up_writer.close()
            with contextlib.suppress(Exception):
                await up_writer.wait_closed()

    async def _cut(self, writer: asyncio.StreamWriter, up_reader: asyncio.StreamReader) -> None:
        """Close the client's connection now; read the agent's answer to its end."""
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
        answer = bytearray()
        while chunk := await up_reader.read(65536):
            answer += chunk[: max(0, _HEAD_LIMIT - len(answer))]
        with self._answered:
            self.cut_answers.append(bytes(answer))
            self._answered.notify_all()


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while True:
        size = int((await reader.readuntil(b"\r\n")).strip().split(b";")[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            return bytes(body)
        body += await reader.readexactly(size)
        await reader.readexactly(2)


class LosingTransport(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """An httpx transport that loses answers by a plan, as `LossyProxy` does, with no proxy.

    Put it under a client (or under a `GuardTransport`) in front of a real agent: for each
    request the plan says ``forward``; ``lose``: the request goes to the agent, its answer is
    read in full and thrown away, and the client sees `httpx.ReadError` (the agent did the
    work); ``drop``: nothing is sent, and the client sees `httpx.RemoteProtocolError` (a
    connection closed without an answer: as unknown to the client as a lost answer). Its
    requests keep their own URL, so an agent's card read through it is believed.

    Args:
        plan: what to do with each request (`Seen`).
        inner: the sync transport that sends (default: httpx's own).
        ainner: the async transport that sends (default: httpx's own).

    Attributes:
        seen: every request the plan was asked about.
        counts: how many times each action was taken.
    """

    def __init__(
        self,
        plan: Plan = forward_all,
        *,
        inner: httpx.BaseTransport | None = None,
        ainner: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.plan = plan
        self.inner = inner or httpx.HTTPTransport()
        self.ainner = ainner or httpx.AsyncHTTPTransport()
        self.seen: list[Seen] = []
        self.counts: Counter[str] = Counter()

    def _action(self, request: httpx.Request) -> str:
        # read(), not content: a request httpx rebuilt to follow a redirect holds its bytes
        # in a stream not read yet.
        body = request.read() if isinstance(request.stream, httpx.ByteStream) else b""
        seen = Seen(request.method, request.url.path, body)
        self.seen.append(seen)
        action = self.plan(seen)
        self.counts[action] += 1
        if action == "drop":
            msg = "dropped before it reached the agent"
            raise httpx.RemoteProtocolError(msg, request=request)
        return action

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` (sync), or lose or drop it by the plan."""
        action = self._action(request)
        response = self.inner.handle_request(request)
        if action == "lose":
            response.read()
            response.close()
            raise httpx.ReadError("the answer was lost after the agent did the work")
        return response

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` (async), or lose or drop it by the plan."""
        action = self._action(request)
        response = await self.ainner.handle_async_request(request)
        if action == "lose":
            await response.aread()
            await response.aclose()
            raise httpx.ReadError("the answer was lost after the agent did the work")
        return response

    def close(self) -> None:
        """Close the sync transport."""
        self.inner.close()

    async def aclose(self) -> None:
        """Close both transports."""
        self.inner.close()
        await self.ainner.aclose()
