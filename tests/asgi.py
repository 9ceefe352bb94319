"""Serve an ASGI app with uvicorn on 127.0.0.1, in a thread, for as long as a test needs it."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from typing import TYPE_CHECKING, Any

import uvicorn

if TYPE_CHECKING:
    from collections.abc import Iterator


@contextlib.contextmanager
def serve(app: Any, *, stop_timeout: float = 10.0) -> Iterator[str]:
    """Run ``app`` on an ephemeral loopback port; yield its base URL; stop it, bounded in time.

    The socket is bound and listening before the server runs: the first requests wait in the
    backlog, so nobody has to poll for the server to be up.
    """
    # IPPROTO_TCP given, not left 0: asyncio sets TCP_NODELAY only on sockets whose proto says
    # TCP, and accepted sockets inherit it; without it every kept-alive request waits for a
    # delayed ACK (about 40 ms on Linux).
    listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listening.bind(("127.0.0.1", 0))
    listening.listen(64)
    server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="off"))
    thread = threading.Thread(
        target=lambda: asyncio.run(server.serve(sockets=[listening])), daemon=True
    )
    thread.start()
    try:
        yield f"http://127.0.0.1:{listening.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=stop_timeout)
        listening.close()
        assert not thread.is_alive(), "the server did not stop in time"
