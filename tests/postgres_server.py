"""A throwaway PostgreSQL cluster on 127.0.0.1 for the tests, that a test may stop and start again.

`PostgresServer` runs Debian's binaries (``/usr/lib/postgresql/<version>/bin``, the newest
found, or ``initdb`` and ``pg_ctl`` on PATH): ``initdb`` makes a cluster in a temporary
directory (trust authentication, UTF-8), ``pg_ctl start -w`` starts it on a free loopback
port with its Unix socket in that directory and ``fsync=on``, and waits itself until it
accepts connections (no polling here, no sleep). `stop` ends it at once (``pg_ctl stop -m
immediate``: as a crash would, the next start recovers), `start` brings it back on the same
port with its data. Every command is bounded in time. ``initdb`` refuses to run as root: as
root, the cluster belongs to the ``postgres`` user, and the commands run as that user
(``runuser``).

Where PostgreSQL is missing, the fixtures skip, except in CI (``CI=true``), where they fail:
CI installs it (``.ci/run``), so a missing one is a broken setup, not a reason to test less.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.redis_server import free_port

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["PostgresServer", "postgres_bindir"]

USER = "postgres"


def _version(path: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", path.parent.name)) or (0,)


def postgres_bindir() -> Path:
    """The directory of ``initdb`` and ``pg_ctl``; skips the test (fails it in CI) without one."""
    found = [
        path
        for path in sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version, reverse=True)
        if (path / "initdb").exists() and (path / "pg_ctl").exists()
    ]
    on_path = shutil.which("initdb")
    if not found and on_path is not None and shutil.which("pg_ctl") is not None:
        found = [Path(on_path).parent]
    problem = None
    if not found:
        problem = "PostgreSQL is not installed (apt-get install -y postgresql)"
    elif os.geteuid() == 0 and shutil.which("runuser") is None:
        problem = "running as root, PostgreSQL needs runuser to start as another user"
    elif os.geteuid() == 0:
        try:
            import pwd

            pwd.getpwnam(USER)
        except KeyError:
            problem = f"running as root, PostgreSQL needs the {USER!r} user (its package makes it)"
    if problem is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{problem}: CI must install it (.ci/run)")
        pytest.skip(problem)
    return found[0]


class PostgresServer:
    """One PostgreSQL cluster on 127.0.0.1 (see the module docstring).

    Args:
        bindir: the directory of ``initdb``, ``pg_ctl`` and ``postgres``.
        port: the port (default: a free one, kept across restarts).
        timeout: seconds each command (making the cluster, starting, stopping) may take.

    """

    def __init__(self, bindir: Path, *, port: int | None = None, timeout: float = 60.0) -> None:
        self.bindir = bindir
        self.port = port or free_port()
        self.timeout = timeout
        self.root: Path | None = None
        self.running = False

    @property
    def data(self) -> Path:
        """The cluster's data directory."""
        assert self.root is not None
        return self.root / "data"

    @property
    def dsn(self) -> str:
        """A libpq connection string to the ``postgres`` database, as the superuser."""
        return f"host=127.0.0.1 port={self.port} user={USER} dbname=postgres"

    def _run(self, *command: str) -> None:
        argv = [str(self.bindir / command[0]), *command[1:]]
        if os.geteuid() == 0:
            argv = ["runuser", "-u", USER, "--", *argv]
        done = subprocess.run(  # noqa: S603 (our own fixed commands)
            argv,
            capture_output=True,
            timeout=self.timeout,
            check=False,
            stdin=subprocess.DEVNULL,
            cwd="/",
        )
        if done.returncode != 0:
            log = self.root / "server.log" if self.root is not None else None
            tail = log.read_text(errors="replace")[-2000:] if log and log.exists() else ""
            output = (done.stdout + done.stderr).decode(errors="replace")[-2000:]
            msg = f"{' '.join(command[:2])} failed ({done.returncode}):\n{output}\n{tail}"
            raise RuntimeError(msg)

    def _make(self) -> None:
        root = Path(tempfile.mkdtemp(prefix="a2a-pg-"))
        self.root = root
        if os.geteuid() == 0:
            shutil.chown(root, USER, USER)
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            USER,
            "--auth=trust",
            "--encoding=UTF8",
            "--no-locale",
            "--no-sync",  # the cluster is thrown away; the server itself runs with fsync=on
        )

    def start(self) -> PostgresServer:
        """Start the server (making the cluster first) and wait, bounded, until it is ready."""
        if self.running:
            return self
        if self.root is None:
            self._make()
        assert self.root is not None
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} "
            f"-c unix_socket_directories={self.root} -c fsync=on"
        )
        self._run(
            "pg_ctl",
            "start",
            "-D",
            str(self.data),
            "-w",
            "-t",
            str(int(self.timeout)),
            "-l",
            str(self.root / "server.log"),
            "-o",
            options,
        )
        self.running = True
        return self

    def stop(self) -> None:
        """End the server at once (``-m immediate``: no checkpoint; the next start recovers)."""
        if not self.running:
            return
        self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "immediate", "-w")
        self.running = False

    def remove(self) -> None:
        """Stop the server and delete the cluster."""
        try:
            self.stop()
        finally:
            if self.root is not None:
                shutil.rmtree(self.root, ignore_errors=True)
                self.root = None

    def __enter__(self) -> PostgresServer:
        try:
            return self.start()
        except BaseException:
            self.remove()
            raise

    def __exit__(self, *exc_info: object) -> None:
        self.remove()


@pytest.fixture(name="postgres_server")
def postgres_server_fixture() -> Iterator[PostgresServer]:
    """A cluster of this test's own on a free loopback port, removed after the test."""
    with PostgresServer(postgres_bindir()) as server:
        yield server


@pytest.fixture(name="shared_postgres", scope="session")
def shared_postgres_fixture() -> Iterator[PostgresServer]:
    """One cluster for the tests that never stop it (each uses tables of its own)."""
    with PostgresServer(postgres_bindir()) as server:
        yield server
