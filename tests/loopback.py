"""A small real HTTP server on 127.0.0.1 for tests: it records every request and answers a script.

`Loopback` runs the stdlib ``ThreadingHTTPServer`` in a daemon thread on an ephemeral port.
Every request it receives is recorded (method, path, headers, body bytes, chunked bodies
decoded), and each is answered by the next `Reply` of its script; the last reply repeats once
the script runs out (or a function of the request answers, when one is given instead).

Everything is bounded in time: sockets time out after ``timeout`` seconds, and `Loopback.stop`
gives the server thread as long to end. The `loopback` fixture starts one and stops it.
"""

from __future__ import annotations

import contextlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping
    from types import TracebackType

__all__ = ["Loopback", "Recorded", "Reply", "loopback_fixture"]


@dataclass(frozen=True, slots=True)
class Recorded:
    """One request as the server received it."""

    method: str
    path: str
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (case-insensitive), or None."""
        wanted = name.lower()
        return next((v for k, v in self.headers if k.lower() == wanted), None)

    def json(self) -> Any:
        """The body, parsed as JSON."""
        return json.loads(self.body)


@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted answer: a status, headers and body bytes.

    With ``pace`` the body is written one byte at a time, ``pace`` seconds apart (a peer that
    trickles); the server stops writing as soon as the client has gone.
    """

    status: int
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    pace: float = 0.0

    @classmethod
    def json(cls, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> Reply:
        """A JSON answer."""
        return cls(
            status,
            json.dumps(payload).encode(),
            {"content-type": "application/json", **(headers or {})},
        )

    @classmethod
    def sse(cls, *payloads: Any) -> Reply:
        """A ``text/event-stream`` answer with one ``data:`` event per payload."""
        text = "".join(f"data: {json.dumps(p)}\n\n" for p in payloads)
        return cls(200, text.encode(), {"content-type": "text/event-stream"})


def _read_chunked(stream: Any) -> bytes:
    chunks: list[bytes] = []
    while True:
        size = int(stream.readline().split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            # Trailers (if any) end with an empty line.
            while stream.readline() not in (b"\r\n", b"\n", b""):
                pass
            return b"".join(chunks)
        chunks.append(stream.read(size))
        stream.readline()


def _trickle(out: Any, body: bytes, pace: float) -> None:
    """Write ``body`` a byte at a time, ``pace`` seconds apart, until done or the client left."""
    gone = threading.Event()
    for index in range(len(body)):
        try:
            out.write(body[index : index + 1])
            out.flush()
        except OSError:  # the client closed the connection: nothing more to send
            return
        gone.wait(pace)  # the server thread's pacing, never the test's


class Loopback:
    """A real HTTP/1.1 server on 127.0.0.1 that records requests and answers from a script.

    Args:
        script: the replies, in order (the last repeats), or a function of the request.
        timeout: seconds any socket operation, and stopping, may take.

    """

    def __init__(
        self,
        script: Iterable[Reply] | Callable[[Recorded], Reply] = (),
        *,
        timeout: float = 5.0,
    ) -> None:
        self.timeout = timeout
        self._lock = threading.Lock()
        self._requests: list[Recorded] = []
        self._replies: list[Reply] = []
        self._answer: Callable[[Recorded], Reply] | None = None
        self.script(script)
        self._server = self._make_server()
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def _make_server(self) -> ThreadingHTTPServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = owner.timeout
            # One write per response, sent at once (no Nagle + delayed-ACK stalls of 40 ms).
            wbufsize = 1 << 16
            disable_nagle_algorithm = True

            def handle(self) -> None:
                """Serve the connection, until the client goes (one may walk out on a trickle)."""
                with contextlib.suppress(OSError):
                    super().handle()

            def finish(self) -> None:
                """Flush what is left, unless the client has gone."""
                with contextlib.suppress(OSError):
                    super().finish()

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: tests read `Loopback.requests`, not a log."""

            def _handle(self) -> None:
                if self.headers.get("transfer-encoding", "").lower() == "chunked":
                    body = _read_chunked(self.rfile)
                else:
                    body = self.rfile.read(int(self.headers.get("content-length") or 0))
                recorded = Recorded(self.command, self.path, tuple(self.headers.items()), body)
                reply = owner._record(recorded)
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(reply.body)))
                self.end_headers()
                if reply.pace:
                    self.wfile.flush()
                    _trickle(self.wfile, reply.body, reply.pace)
                    return
                self.wfile.write(reply.body)
                self.wfile.flush()

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle  # noqa: N815

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 1024

        return Server(("127.0.0.1", 0), Handler)

    def script(self, script: Iterable[Reply] | Callable[[Recorded], Reply]) -> None:
        """Answer the next requests with ``script``."""
        with self._lock:
            if callable(script):
                self._answer, self._replies = script, []
            else:
                self._answer, self._replies = None, list(script)

    def _record(self, request: Recorded) -> Reply:
        with self._lock:
            self._requests.append(request)
            if self._answer is not None:
                answer = self._answer
            elif len(self._replies) > 1:
                return self._replies.pop(0)
            elif self._replies:
                return self._replies[0]
            else:
                return Reply(404)
        return answer(request)

    @property
    def requests(self) -> list[Recorded]:
        """Every request received so far, in order."""
        with self._lock:
            return list(self._requests)

    @property
    def url(self) -> str:
        """The server's base URL (``http://127.0.0.1:<port>``)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Loopback:
        """Start serving in a daemon thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket, within ``timeout`` seconds."""
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(self.timeout)
        self._server.server_close()

    def __enter__(self) -> Loopback:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


@pytest.fixture(name="loopback")
def loopback_fixture() -> Iterator[Loopback]:
    """A started `Loopback` (empty script: set one with ``loopback.script(...)``), stopped after."""
    with Loopback() as server:
        yield server
