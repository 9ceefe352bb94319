"""A TCP relay on 127.0.0.1 that can reset its connections: the hop that breaks, for gRPC tests.

`Relay` runs on the test's own event loop. It forwards the bytes of each connection to a
target and back. `cut` resets every connection open now (an RST, as a crashed host or a
proxy's reset gives), so that a call whose request already went out loses its answer.
With ``refusing`` set, every new connection is reset as soon as it is accepted: the port
stays held (nothing else can take it), and no client gets a connection to send on.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["Relay", "refused_port", "silent_port"]

_LINGER_RESET = struct.pack("ii", 1, 0)
"""SO_LINGER on, zero seconds: closing the socket sends an RST, not a FIN."""


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close a connection with an RST."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
    writer.transport.abort()


class Relay:
    """A TCP relay to ``target`` (``host:port``); use it as an async context manager."""

    def __init__(self, target: str) -> None:
        host, _, port = target.rpartition(":")
        self._host, self._port = host, int(port)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._pumps: set[asyncio.Task[None]] = set()
        self.refusing = False
        self.target = ""

    async def __aenter__(self) -> Relay:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.target = f"127.0.0.1:{port}"
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.close()
        self.cut()
        for pump in list(self._pumps):
            pump.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)
        await asyncio.wait_for(self._server.wait_closed(), 5.0)

    def cut(self) -> None:
        """Reset every connection open now, both sides."""
        for writer in list(self._writers):
            _reset(writer)
        self._writers.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.refusing:
            _reset(writer)
            return
        try:
            upstream_reader, upstream_writer = await asyncio.wait_for(
                asyncio.open_connection(self._host, self._port), 5.0
            )
        except OSError:
            _reset(writer)
            return
        self._writers.update((writer, upstream_writer))
        for source, sink in ((reader, upstream_writer), (upstream_reader, writer)):
            pump = asyncio.ensure_future(self._pump(source, sink))
            self._pumps.add(pump)
            pump.add_done_callback(self._pumps.discard)

    async def _pump(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        """Copy bytes one way until either side closes."""
        try:
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self._writers.discard(sink)
            sink.transport.abort()


def refused_port() -> tuple[socket.socket, str]:
    """A socket bound to a port of 127.0.0.1 that does not listen, and its ``host:port``.

    A connection to it is refused; the port stays taken while the socket is open (close it).
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock, f"127.0.0.1:{sock.getsockname()[1]}"


def silent_port() -> tuple[socket.socket, str]:
    """A listening socket of 127.0.0.1 that never answers, and its ``host:port``.

    The kernel completes a client's TCP handshake, and no byte ever comes back: a gRPC channel
    to it stays CONNECTING (gRPC waits 20 s for the server's HTTP/2 settings). Close it.
    """
    sock, target = refused_port()
    sock.listen(8)
    return sock, target
