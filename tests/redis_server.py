"""A real ``redis-server`` on 127.0.0.1 for the tests, that a test may kill and start again.

`RedisServer` runs the binary found on PATH (or ``/usr/bin/redis-server``) on a free loopback
port, without persistence, and knows it is ready when the server says so on its log (read from
a pipe: no polling, no sleep). `kill` ends it at once (SIGKILL: no goodbye to the clients),
`start` brings it back on the same port, empty. `pause` freezes it (SIGSTOP: connections stay
open, commands go unanswered, as on a server stuck in a long command or a swap storm) and
`resume` lets it answer them. Everything is bounded in time.

Where the binary is missing, the fixtures skip, except in CI (``CI=true``), where they fail:
CI installs redis-server (``.ci/run``), so a missing one is a broken setup, not a reason to
test less.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["RedisServer", "redis_binary"]

READY = b"Ready to accept connections"


def redis_binary() -> str:
    """The redis-server binary; skips the test (fails it in CI) when there is none."""
    found = shutil.which("redis-server")
    if found is None and Path("/usr/bin/redis-server").exists():
        found = "/usr/bin/redis-server"
    if found is None:
        message = "redis-server is not installed (apt-get install -y redis-server)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{message}: CI must install it (.ci/run)")
        pytest.skip(message)
    return found


def free_port() -> int:
    """A loopback port nobody listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class RedisServer:
    """One redis-server process on 127.0.0.1 (see the module docstring).

    Args:
        binary: the redis-server executable.
        port: the port (default: a free one, kept across restarts).
        timeout: seconds starting or stopping may take.

    """

    def __init__(self, binary: str, *, port: int | None = None, timeout: float = 10.0) -> None:
        self.binary = binary
        self.port = port or free_port()
        self.timeout = timeout
        self.process: subprocess.Popen[bytes] | None = None
        self._drainer: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:<port>/0``."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        """Start the server and wait (bounded) until it accepts connections."""
        if self.process is not None and self.process.poll() is None:
            return self
        command = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
            "--logfile",
            "",
            "--loglevel",
            "notice",
        ]
        process = subprocess.Popen(  # noqa: S603 (our own fixed command)
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        self.process = process
        ready = threading.Event()
        log: list[bytes] = []
        self._drainer = threading.Thread(target=_drain, args=(process, ready, log), daemon=True)
        self._drainer.start()
        if not ready.wait(self.timeout) or not any(READY in line for line in log):
            self.kill()
            text = b"".join(log).decode(errors="replace")[-2000:]
            msg = f"redis-server did not start on port {self.port} in {self.timeout}s:\n{text}"
            raise RuntimeError(msg)
        return self

    def kill(self) -> None:
        """End the server at once (SIGKILL), as a crash would."""
        process = self.process
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(self.timeout)
        self._forget()

    def _forget(self) -> None:
        """Close the log pipe once the reader has seen its end."""
        process, self.process = self.process, None
        if self._drainer is not None:
            self._drainer.join(self.timeout)
        if process is not None and process.stdout is not None:
            process.stdout.close()

    def pause(self) -> None:
        """Freeze the server (SIGSTOP): it answers nothing until `resume`."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Let a paused server run again (SIGCONT): it answers what it was sent meanwhile."""
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        """End the server (SIGTERM, then SIGKILL past the timeout)."""
        process = self.process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGCONT)  # a paused server cannot act on SIGTERM
            process.terminate()
            try:
                process.wait(self.timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(self.timeout)
        self._forget()

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _drain(process: subprocess.Popen[bytes], ready: threading.Event, log: list[bytes]) -> None:
    """Read the server's log to its end: note when it is ready; keep the pipe from filling."""
    assert process.stdout is not None
    for line in process.stdout:
        if not ready.is_set():
            log.append(line)
            if READY in line:
                ready.set()
    ready.set()  # the log ended: the server is gone (start() tells which)


@pytest.fixture(name="redis_server")
def redis_server_fixture() -> Iterator[RedisServer]:
    """A redis-server of this test's own on a free loopback port, stopped after the test."""
    with RedisServer(redis_binary()) as server:
        yield server


@pytest.fixture(name="shared_redis", scope="session")
def shared_redis_fixture() -> Iterator[RedisServer]:
    """One redis-server for the tests that never stop it (each uses keys of its own)."""
    with RedisServer(redis_binary()) as server:
        yield server
