"""The processes bench_journal.py starts: orchestrators that die, and senders of a crowd.

    python bench/journal_worker.py zygote
    python bench/journal_worker.py crowd SPEC URL INDEX PROCESSES SENDS RUN

``zygote`` imports what a sender needs once, then reads one job a line (JSON) on its stdin and
forks an orchestrator for each: the child opens the journal afresh (`open_store`), sends one
step through ``GuardTransport`` and is SIGKILLed at the job's point (``a``: inside the journal,
before the real ``claim``; ``b``: after ``claim``, in the inner transport, before the request
goes out; ``c``: by bench_journal.py, once the agent runs the message; ``d``: in the inner
transport, once the answer came back, before the journal closes the record). It prints
``{"pid": N}`` once forked and ``{"pid": N, "signal": S, "status": X}`` once the child is gone.

``crowd`` is one of the processes of the crowd: its share of the logical sends, each sent
through ``AsyncGuardTransport`` over one SQLite journal, all at once (``asyncio.gather``); it
prints what it got as JSON.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from typing import Any

import httpx

from a2a_client_errors import AsyncGuardTransport, ExactlyOnce, Guard, GuardTransport
from a2a_client_errors.journal import SqliteJournal, message_id_for

VERSION = {"A2A-Version": "1.0"}
KINDS = ("none", "sqlite", "redis", "postgres")


def open_store(spec: dict[str, Any], shift: float = 0.0) -> Any:
    """The journal store ``spec`` names, its clock ``shift`` seconds ahead (None: no journal).

    Redis and Postgres stores are imported here, when asked for: ImportError when absent.
    """
    kind = spec["kind"]
    clock = (lambda: time.time() + shift) if shift else time.time
    if kind == "none":
        return None
    if kind == "sqlite":
        return SqliteJournal(spec["path"], clock=clock, durable=spec.get("durable", True))
    if kind == "redis":
        from a2a_client_errors.integrations.redis import RedisJournal  # noqa: PLC0415

        return RedisJournal.from_url(spec["url"], clock=clock)
    if kind == "postgres":
        from a2a_client_errors.integrations.postgres import PostgresJournal  # noqa: PLC0415

        return PostgresJournal(spec["dsn"], clock=clock)
    raise ValueError(f"no such journal kind: {kind}")


def send_body(run: str, step: object, text: str) -> dict[str, Any]:
    """The JSON-RPC SendMessage of a step: the same in any process (its messageId derived)."""
    message = {
        "messageId": message_id_for(run, step),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}


def _die() -> None:
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


class DyingJournal:
    """A journal that kills its process before the real ``claim`` (point a)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.lease = inner.lease
        self.retention = inner.retention

    def claim(self, entry: Any, owner: str) -> Any:
        """Die, before the real claim."""
        _die()
        return self.inner.claim(entry, owner)

    def take_over(self, message_id: str, owner: str) -> Any:
        """As the store does."""
        return self.inner.take_over(message_id, owner)

    def renew(self, owner: str) -> int:
        """As the store does."""
        return int(self.inner.renew(owner))

    def settle(self, message_id: str, owner: str, state: Any, **kw: Any) -> bool:
        """As the store does."""
        return bool(self.inner.settle(message_id, owner, state, **kw))

    def release(self, message_id: str, owner: str, note: str = "") -> bool:
        """As the store does."""
        return bool(self.inner.release(message_id, owner, note))

    def get(self, message_id: str) -> Any:
        """As the store does."""
        return self.inner.get(message_id)

    def unsettled(self, *, limit: int = 100) -> Any:
        """As the store does."""
        return self.inner.unsettled(limit=limit)

    def purge(self) -> int:
        """As the store does."""
        return int(self.inner.purge())

    def close(self) -> None:
        """As the store does."""
        self.inner.close()


class DyingTransport(httpx.BaseTransport):
    """The inner transport: kills its process before a send leaves (b) or once answered (d)."""

    def __init__(self, point: str) -> None:
        self.point = point
        self.inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``, dying where the point says."""
        is_send = request.method == "POST" and b'"SendMessage"' in request.read()
        if is_send and self.point == "b":
            _die()
        response = self.inner.handle_request(request)
        if is_send and self.point == "d":
            response.read()
            _die()
        return response


def orchestrate(job: dict[str, Any]) -> None:
    """One orchestrator's step, killed at ``job["point"]`` (c: by the parent)."""
    point = job["point"]
    store = open_store(job["spec"])
    journal = DyingJournal(store) if point == "a" else store
    transport = GuardTransport(Guard(journal=journal), DyingTransport(point), raise_failures=True)
    with httpx.Client(transport=transport, headers=VERSION, timeout=30) as client:
        client.post(job["url"], json=send_body(job["run"], job["step"], job["text"]))
    # Point c is killed by the parent while the agent holds the work: never here.
    print(json.dumps({"error": f"the orchestrator lived past point {point}"}), file=sys.stderr)
    os._exit(3)


def zygote() -> int:
    """Fork an orchestrator per job read on stdin; say its pid, then how it ended."""
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:
            try:
                orchestrate(job)
            except BaseException as exc:
                print(f"orchestrator failed: {exc!r}", file=sys.stderr)
                sys.stderr.flush()
            os._exit(3)
        print(json.dumps({"pid": pid}), flush=True)
        _, status = os.waitpid(pid, 0)
        print(
            json.dumps(
                {
                    "pid": pid,
                    "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0,
                    "status": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
                }
            ),
            flush=True,
        )
    return 0


async def _crowd(
    spec: dict[str, Any], url: str, *, index: int, processes: int, sends: int, run: str
) -> dict[str, Any]:
    store = open_store(spec)
    # Short pauses while another process holds the same send: the wall time is the work's.
    guard = Guard(journal=store, exactly_once=ExactlyOnce(poll_initial=0.02, poll_max=0.2))
    mine = [k for k in range(sends) if index in (k % processes, (k + 1) % processes)]
    got: dict[str, Any] = {"sent": len(mine), "tasks": {}, "failed": {}}
    limit = asyncio.Semaphore(64)
    transport = AsyncGuardTransport(guard, httpx.AsyncHTTPTransport(), raise_failures=True)
    async with httpx.AsyncClient(transport=transport, headers=VERSION, timeout=60) as client:

        async def one(k: int) -> None:
            async with limit:
                body = send_body(run, k, f"crowd {k}")
                try:
                    answer = json.loads((await client.post(url, json=body)).content)
                    got["tasks"][str(k)] = answer["result"]["task"]["id"]
                except Exception as exc:
                    got["failed"][str(k)] = type(exc).__name__

        await asyncio.gather(*(one(k) for k in mine))
    store.close()
    return got


def peer() -> int:
    """Serve an embedded agent until stdin closes; print its JSON-RPC URL first."""
    from a2a_client_errors.testing.peer import EmbeddedPeer  # noqa: PLC0415

    with EmbeddedPeer(streaming=False) as running:
        print(json.dumps({"url": running.jsonrpc_url}), flush=True)
        sys.stdin.read()
    return 0


def main(argv: list[str]) -> int:
    """``zygote``, ``crowd`` or ``peer`` (see the module)."""
    if argv[0] == "zygote":
        return zygote()
    if argv[0] == "peer":
        return peer()
    if argv[0] == "crowd":
        spec, url, index, processes, sends, run = argv[1:7]
        started = time.monotonic()
        got = asyncio.run(
            _crowd(
                json.loads(spec),
                url,
                index=int(index),
                processes=int(processes),
                sends=int(sends),
                run=run,
            )
        )
        got["seconds"] = time.monotonic() - started
        print(json.dumps(got))
        return 0
    raise SystemExit(f"unknown mode: {argv[0]}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
