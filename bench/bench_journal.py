"""The in-flight journal: crashes and restarts, what it adds to a send, a crowd, record sizes.

Every part runs each kind of journal side by side in one run: ``none`` (no journal), ``sqlite``
(`SqliteJournal`, durable: one fsync per write), ``redis`` (``RedisJournal`` on a
``redis-server`` this script starts on 127.0.0.1) and ``postgres`` (``PostgresJournal`` on a
throwaway PostgreSQL cluster it starts: ``initdb`` and ``pg_ctl`` of Debian's PostgreSQL 15,
as the ``postgres`` user when run as root). A kind whose store cannot be imported, or whose
server cannot be started, is shown as not available and the others go on. The agents are real
a2a-sdk 1.x agents on 127.0.0.1 (`EmbeddedPeer`), in this process; their ledgers count the
executor's runs per messageId.

Part 1, crash and restart. An orchestrator (a process forked from a worker that imported
everything once, ``bench/journal_worker.py``) sends one step (``message_id_for(run, step)``)
through ``GuardTransport`` and is SIGKILLed at one of four points, drawn with a seeded
``random.Random``, the same schedule for every kind: (a) before the record (inside the
journal, before the real ``claim``), (b) after the record, before the request leaves (in the
inner transport), (c) while the agent works (this script kills it once the agent runs the
message, then lets the work end), (d) after the answer came back, before the journal closes
the record. Then the restarted orchestrator (a fresh Guard and a fresh store on the same
journal, in this process) sends the same step, same body. Its store's clock is 60 s ahead, so
the dead orchestrator's lease (10 s) is seen lapsed without waiting for it. Its look-ups are
bounded (at most 3 looks, 1 s). A send of point (b) never reached the agent: nothing can
prove the agent never got it, so the restart ends in ``OutcomeUnknown``, the record kept
open, nothing resent; a second restart then declares the agent's listing contract
(``ExactlyOnce(listed_within={peer: 0.0})``), and the send goes out once.

Part 2, what a journal adds to a send: a SendMessage through ``GuardTransport`` to a fast
local agent, with each kind of journal, the kinds taking turns send by send (the first one
rotating), so that the machine's noise hits them alike; p50 and p99, and what each adds over
``none``. Then the store alone: one ``claim`` and one ``settle`` (the pair a send writes), no
HTTP.

Part 3, a crowd: 4 processes (``journal_worker.py crowd``) over one SQLite journal, 1,000
logical sends, each sent at once by two of the processes (same messageId, same body) through
``AsyncGuardTransport`` (``asyncio.gather``, at most 64 in flight per process): the journal
must keep each to one first attempt.

Part 4, record size: per store, the bytes ``--records`` sends recorded through
``GuardTransport`` take (SQLite: ``dbstat`` of its tables and indexes, and the file's growth;
Redis: ``MEMORY USAGE`` of the keys naming the messageId; Postgres: ``pg_column_size`` of a
row and ``pg_total_relation_size`` of the tables), and whether any store kept the request's
text (each body holds a marker searched for in the store).

Targets (a missed one is reported, not failed; the exit status is 1 only when a part crashed):
at most 1.000 executor runs per logical send and never a wrong task, on every kind; added p50
at most 1 ms (SQLite), 0.3 ms (Redis), 1.5 ms (Postgres); in the crowd no lost record and at
most one run per messageId; under 1 KiB per record, no request body kept.

    python bench/bench_journal.py [--crashes 100] [--number 400] [--pairs 500]
        [--crowd-sends 1000] [--records 300] [--kinds none,sqlite,redis,postgres]
        [--seed 7] [--json [PATH]]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import httpx
import pytest
from figures import Target, add_json_option, emit, show, table
from journal_worker import VERSION, open_store, send_body

from a2a_client_errors import ExactlyOnce, Guard, GuardTransport, OutcomeUnknown
from a2a_client_errors.journal import Entry, State, digest_of, message_id_for
from a2a_client_errors.testing.peer import EmbeddedPeer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests' servers
from tests.postgres_server import PostgresServer, postgres_bindir
from tests.redis_server import RedisServer, redis_binary

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

T = TypeVar("T")

HERE = Path(__file__).resolve().parent
WORKER = str(HERE / "journal_worker.py")
STORES = ("sqlite", "redis", "postgres")
POINTS = ("a", "b", "c", "d")
POINT_NAMES = {
    "a": "(a) before the record",
    "b": "(b) after the record, before the request",
    "c": "(c) while the agent works",
    "d": "(d) after the answer, before the close",
}
SHIFT = 60.0  # the restarted store's clock, ahead of the dead orchestrator's 10 s lease
ADDED_P50_MS = {"sqlite": 1.0, "redis": 0.3, "postgres": 1.5}
AGAIN = {
    "listing": "(b) again, listing contract declared (listed_within 0 s)",
    "deduplicating": "(b) again, declared deduplicating (the caller's word)",
}
RECORD_MAX = 1024
WHY: Counter[str] = Counter()  # why the restarts that ended unknown did (one kind at a time)


def _pct(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


# --- the servers ---------------------------------------------------------------------------------


def _found(find: Callable[[], T]) -> T:
    """What a test helper finds (a binary, a directory), or RuntimeError when it finds none.

    The tests' helpers skip (or, in CI, fail) the test that needs what is missing; here the
    kind is shown as not available instead.
    """
    try:
        return find()
    except (pytest.skip.Exception, pytest.fail.Exception) as missing:
        raise RuntimeError(str(missing)) from None


def _imports(kind: str) -> str:
    """Why the store of ``kind`` cannot be imported ("" when it can)."""
    try:
        if kind == "redis":
            from a2a_client_errors.integrations.redis import RedisJournal  # noqa: F401, PLC0415
        elif kind == "postgres":
            from a2a_client_errors.integrations.postgres import (  # noqa: F401, PLC0415
                PostgresJournal,
            )
    except ImportError:
        store = "RedisJournal" if kind == "redis" else "PostgresJournal"
        return f"not available ({store} cannot be imported)"
    return ""


class Stores:
    """The specs of the stores available, the servers behind them, and why others are not."""

    def __init__(self, kinds: list[str], scratch: str) -> None:
        self.scratch = scratch
        self.servers: list[Any] = []
        self.specs: dict[str, dict[str, Any]] = {}
        self.missing: dict[str, str] = {}
        for kind in kinds:
            why = _imports(kind)
            if why:
                self.missing[kind] = why
                continue
            try:
                self.specs[kind] = self._start(kind)
            except Exception as exc:
                self.missing[kind] = f"not available ({exc})"

    def _start(self, kind: str) -> dict[str, Any]:
        if kind == "none":
            return {"kind": "none"}
        if kind == "sqlite":
            return {"kind": "sqlite", "path": os.path.join(self.scratch, "journal.db")}
        if kind == "redis":
            server = RedisServer(_found(redis_binary)).start()
            self.servers.append(server)
            return {"kind": "redis", "url": server.url}
        cluster = PostgresServer(_found(postgres_bindir))
        self.servers.append(cluster)
        cluster.start()
        return {"kind": "postgres", "dsn": cluster.dsn}

    def spec(self, kind: str, name: str) -> dict[str, Any]:
        """``kind``'s spec; a SQLite journal of its own per ``name``."""
        spec = dict(self.specs[kind])
        if kind == "sqlite":
            spec["path"] = os.path.join(self.scratch, f"{name}.db")
        return spec

    def stop(self) -> None:
        """Stop every server."""
        for server in self.servers:
            with contextlib.suppress(Exception):
                getattr(server, "remove", server.stop)()  # a cluster is also deleted


def _peer_key(url: str) -> str:
    parsed = httpx.URL(url)
    return f"{parsed.scheme}://{parsed.host}:{parsed.port}"


@contextlib.contextmanager
def _peer() -> Iterator[EmbeddedPeer]:
    with EmbeddedPeer(streaming=False) as peer:
        yield peer


# --- part 1: crash and restart --------------------------------------------------------------------


class Zygote:
    """``journal_worker.py zygote``: forks an orchestrator per job."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(  # noqa: S603 (our own worker, by this interpreter)
            [sys.executable, WORKER, "zygote"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )

    def start(self, job: dict[str, Any]) -> int:
        """Fork an orchestrator for ``job``; its pid."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(job) + "\n")
        self.process.stdin.flush()
        return int(self._line()["pid"])

    def ended(self) -> dict[str, Any]:
        """How the last orchestrator ended (its signal, its status)."""
        return self._line()

    def _line(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("the orchestrators' worker is gone")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def stop(self) -> None:
        """End the worker (its stdin closed)."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(10)


def _restart(
    spec: dict[str, Any],
    url: str,
    run: str,
    step: int,
    *,
    text: str,
    peer: EmbeddedPeer,
    **eo: Any,
) -> tuple[str, str]:
    """The restarted orchestrator's send: how it ended, and the record's state after."""
    store = open_store(spec, shift=SHIFT)
    ahead = lambda: time.time() + SHIFT  # noqa: E731 (the restarted process's wall clock)
    settings = ExactlyOnce(
        timeout=1.0, max_looks=3, recheck_after=0.05, poll_initial=0.05, wall_clock=ahead, **eo
    )
    guard = Guard(journal=store, exactly_once=settings)
    transport = GuardTransport(guard, httpx.HTTPTransport(), raise_failures=True)
    message_id = message_id_for(run, step)
    try:
        with httpx.Client(transport=transport, headers=VERSION, timeout=10) as client:
            answer = json.loads(client.post(url, json=send_body(run, step, text)).content)
        task = answer.get("result", {}).get("task", {}).get("id")
        if task is None:
            ended = "no task in the answer"
        else:
            ended = "task" if task in peer.ledger.tasks_started_by(message_id) else "wrong task"
    except OutcomeUnknown as unknown:
        ended = "OutcomeUnknown"
        WHY[unknown.why or ""] += 1
    except Exception as exc:
        ended = type(exc).__name__
    record = store.get(message_id)
    state = "no record" if record is None else record.state.value
    store.close()
    return ended, state


def crashes(kind: str, spec: dict[str, Any], count: int, seed: int) -> dict[str, Any]:
    """``count`` orchestrators killed at a drawn point, each restarted; runs counted."""
    schedule = random.Random(seed)
    run = f"crash-{kind}-{uuid.uuid4()}"
    rows: list[dict[str, Any]] = []
    zygote = Zygote()
    started = time.monotonic()
    try:
        with _peer() as peer:
            url, key = peer.jsonrpc_url, _peer_key(peer.jsonrpc_url)
            for step in range(count):
                point = schedule.choice(POINTS)
                text = "hold" if point == "c" else f"step {step}"
                message_id = message_id_for(run, step)
                job = {"spec": spec, "url": url, "run": run, "step": step, "point": point}
                pid = zygote.start({**job, "text": text})
                if point == "c":
                    deadline = time.monotonic() + 20
                    while peer.executions[message_id] < 1:
                        if time.monotonic() > deadline:
                            raise RuntimeError("the agent never ran the held message")
                        time.sleep(0.002)
                    os.kill(pid, signal.SIGKILL)
                end = zygote.ended()
                if end["signal"] != signal.SIGKILL:
                    raise RuntimeError(f"orchestrator at point {point} ended with {end}")
                if point == "c":
                    peer.release(message_id)
                ended, state = _restart(spec, url, run, step, text=text, peer=peer)
                row = {"point": point, "ended": ended, "state": state, "message_id": message_id}
                row["again"] = {}
                if point == "b" and ended != "task":
                    for label, declared in (
                        ("listing", {"listed_within": {key: 0.0}}),
                        ("deduplicating", {"deduplicating": {key}}),
                    ):
                        again = _restart(spec, url, run, step, text=text, peer=peer, **declared)
                        row["again"][label] = again
                        if again[0] == "task":
                            break
                rows.append(row)
            peer.release()
            time.sleep(0.2)  # the held work's last events
            runs = [peer.executions[row["message_id"]] for row in rows]
    finally:
        zygote.stop()
    figures = _crash_figures(rows, runs, time.monotonic() - started)
    figures["unknown_why"] = dict(WHY)
    WHY.clear()
    return figures


def _crash_figures(rows: list[dict[str, Any]], runs: list[int], seconds: float) -> dict[str, Any]:
    points: dict[str, Any] = {}
    for point in POINTS:
        mine = [row for row in rows if row["point"] == point]
        again: dict[str, Any] = {}
        for label in AGAIN:
            tried = [row["again"][label] for row in mine if label in row["again"]]
            if tried:
                again[label] = {
                    "tried": len(tried),
                    "task": sum(ended == "task" for ended, _ in tried),
                    "ended": dict(Counter(f"{e} (record {s})" for e, s in tried)),
                }
        points[point] = {
            "crashes": len(mine),
            "task": sum(row["ended"] == "task" for row in mine),
            "ended": dict(Counter(f"{row['ended']} (record {row['state']})" for row in mine)),
            "again": again,
        }
    wrong = sum(
        row["ended"] == "wrong task"
        or any(ended == "wrong task" for ended, _ in row["again"].values())
        for row in rows
    )
    return {
        "crashes": len(rows),
        "runs_mean": statistics.fmean(runs) if runs else 0.0,
        "runs_max": max(runs, default=0),
        "never_ran": sum(count == 0 for count in runs),
        "wrong_tasks": wrong,
        "points": points,
        "seconds": seconds,
    }


# --- part 2: what a journal adds to a send ------------------------------------------------------


@contextlib.contextmanager
def _peer_process() -> Iterator[str]:
    """An embedded agent in a process of its own (its JSON-RPC URL), stopped after.

    The latency part sends to it: an agent in the sender's own process would share its GIL,
    and every write that releases the GIL would hand the agent's thread a turn to count.
    """
    process = subprocess.Popen(  # noqa: S603 (our own worker, by this interpreter)
        [sys.executable, WORKER, "peer"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        yield str(json.loads(process.stdout.readline())["url"])
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(30)


def latency(stores: Stores, kinds: list[str], number: int, pairs: int) -> dict[str, Any]:
    """p50/p99 of a guarded send per kind, taking turns; then claim+settle alone per store."""
    run = f"latency-{uuid.uuid4()}"
    times: dict[str, list[float]] = {kind: [] for kind in kinds}
    opened: dict[str, Any] = {kind: open_store(stores.spec(kind, "latency")) for kind in kinds}
    with _peer_process() as url, contextlib.ExitStack() as stack:
        clients = {
            kind: stack.enter_context(
                httpx.Client(
                    transport=GuardTransport(Guard(journal=opened[kind]), httpx.HTTPTransport()),
                    headers=VERSION,
                    timeout=10,
                )
            )
            for kind in kinds
        }
        for index in range(-20, number):  # 20 sends each to warm up, not counted
            turn = kinds[index % len(kinds) :] + kinds[: index % len(kinds)]
            for kind in turn:
                body = send_body(run, f"{kind}/{index}", "fast")
                began = time.perf_counter()
                answer = clients[kind].post(url, json=body)
                took = time.perf_counter() - began
                if answer.status_code != 200 or b'"task"' not in answer.content:
                    raise RuntimeError(f"a {kind} send failed: {answer.status_code}")
                if index >= 0:
                    times[kind].append(took * 1000)
    sends = {
        kind: {"p50": _pct(values, 0.5), "p99": _pct(values, 0.99)}
        for kind, values in times.items()
    }
    if "none" in sends:
        for figures in sends.values():
            figures["added_p50"] = figures["p50"] - sends["none"]["p50"]
            figures["added_p99"] = figures["p99"] - sends["none"]["p99"]
    raw: dict[str, Any] = {}
    for kind in kinds:
        if kind == "none":
            continue
        store = opened[kind]
        pair_times = []
        for index in range(pairs):
            message_id = message_id_for(run, f"raw/{kind}/{index}")
            entry = Entry(message_id, digest_of({"messageId": message_id}), "http://agent:80")
            began = time.perf_counter()
            store.claim(entry, "bench-owner")
            store.settle(message_id, "bench-owner", State.TASK, made=f"task-{index}")
            pair_times.append((time.perf_counter() - began) * 1000)
        raw[kind] = {"p50": _pct(pair_times, 0.5), "p99": _pct(pair_times, 0.99)}
    for store in opened.values():
        if store is not None:
            store.close()
    return {"number": number, "pairs": pairs, "sends": sends, "claim_settle": raw}


# --- part 3: the crowd ---------------------------------------------------------------------------


def crowd(stores: Stores, sends: int, processes: int = 4) -> dict[str, Any]:
    """``sends`` logical sends, each by two of ``processes`` processes at once, one SQLite file."""
    spec = stores.spec("sqlite", "crowd")
    run = f"crowd-{uuid.uuid4()}"
    with _peer() as peer:
        began = time.monotonic()
        workers = [
            subprocess.Popen(  # noqa: S603 (our own worker, by this interpreter)
                [
                    *(sys.executable, WORKER, "crowd", json.dumps(spec), peer.jsonrpc_url),
                    *(str(index), str(processes), str(sends), run),
                ],
                stdout=subprocess.PIPE,
                text=True,
            )
            for index in range(processes)
        ]
        outputs = [worker.communicate(timeout=240)[0] for worker in workers]
        wall = time.monotonic() - began
        if any(worker.returncode for worker in workers):
            raise RuntimeError(f"a crowd process failed: {[w.returncode for w in workers]}")
        got = [json.loads(output) for output in outputs]
        ids = [message_id_for(run, k) for k in range(sends)]
        runs = [peer.executions[message_id] for message_id in ids]
    with contextlib.closing(sqlite3.connect(spec["path"])) as conn:
        states = dict(conn.execute("SELECT message_id, state FROM a2a_sends").fetchall())
    tasks_by_send: dict[str, set[str]] = {}
    for one in got:
        for k, task in one["tasks"].items():
            tasks_by_send.setdefault(k, set()).add(task)
    return {
        "sends": sends,
        "processes": processes,
        "requests": sum(one["sent"] for one in got),
        "answered": sum(len(one["tasks"]) for one in got),
        "failed": dict(Counter(name for one in got for name in one["failed"].values())),
        "records": sum(message_id in states for message_id in ids),
        "closed_task": sum(states.get(message_id) == "task" for message_id in ids),
        "lost": sum(message_id not in states for message_id in ids),
        "runs_max": max(runs, default=0),
        "runs_mean": statistics.fmean(runs) if runs else 0.0,
        "two_tasks": sum(len(tasks) > 1 for tasks in tasks_by_send.values()),
        "wall": wall,
        "slowest_process": max(one["seconds"] for one in got),
    }


# --- part 4: record size -------------------------------------------------------------------------


def _record_sends(spec: dict[str, Any], url: str, run: str, count: int, marker: str) -> list[str]:
    store = open_store(spec)
    transport = GuardTransport(Guard(journal=store), httpx.HTTPTransport(), raise_failures=True)
    ids = []
    with httpx.Client(transport=transport, headers=VERSION, timeout=10) as client:
        for index in range(count):
            body = send_body(run, index, f"{marker} {index} " + "payload " * 40)
            client.post(url, json=body).raise_for_status()
            ids.append(body["params"]["message"]["messageId"])
    store.close()
    return ids


def _sqlite_size(path: str) -> tuple[int, bytes]:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        try:
            used = conn.execute(
                "SELECT coalesce(sum(pgsize - unused), 0) FROM dbstat "
                "WHERE name LIKE 'a2a_sends%' OR name LIKE 'sqlite_autoindex_a2a_sends%'"
            ).fetchone()[0]
        except sqlite3.Error:
            used = -1
    text = b"".join(Path(p).read_bytes() for p in (path, path + "-wal") if Path(p).exists())
    return int(used), text


def record_size(stores: Stores, kinds: list[str], count: int) -> dict[str, Any]:
    """Bytes per record in each store, and whether the request's text is kept anywhere."""
    sizes: dict[str, Any] = {}
    with _peer() as peer:
        for kind in kinds:
            if kind == "none":
                continue
            spec = stores.spec(kind, "sizes")
            run, marker = f"size-{kind}-{uuid.uuid4()}", f"marker-{uuid.uuid4().hex}"
            try:
                sizes[kind] = _measure(
                    kind, spec, peer.jsonrpc_url, run, count=count, marker=marker
                )
            except Exception as exc:
                sizes[kind] = {"error": f"{type(exc).__name__}: {exc}"}
    return {"records": count, "sizes": sizes}


def _measure(
    kind: str, spec: dict[str, Any], url: str, run: str, *, count: int, marker: str
) -> dict[str, Any]:
    if kind == "sqlite":
        _record_sends(spec, url, f"{run}-warm", 1, marker)  # the schema and the first pages
        before = Path(spec["path"]).stat().st_size
        used_before, _ = _sqlite_size(spec["path"])
        _record_sends(spec, url, run, count, marker)
        used, text = _sqlite_size(spec["path"])
        growth = Path(spec["path"]).stat().st_size - before
        return {
            "bytes": (used - used_before) / count,
            "how": "dbstat (table and indexes)",
            "file_growth": growth / count,
            "body_kept": marker.encode() in text,
        }
    if kind == "redis":
        import redis  # noqa: PLC0415

        ids = _record_sends(spec, url, run, count, marker)
        client = redis.Redis.from_url(spec["url"])
        keys = list(client.scan_iter(count=1000))
        total, named, kept = 0, 0, False
        for key in keys:
            text = key.decode(errors="replace")
            dump = client.dump(key) or b""
            kept = kept or marker.encode() in dump or marker in text
            if any(message_id in text for message_id in ids):
                total += int(client.memory_usage(key, samples=0) or 0)
                named += 1
        if not named:  # records kept under keys that do not name the messageId
            total = sum(int(client.memory_usage(key, samples=0) or 0) for key in keys)
        client.close()
        return {"bytes": total / count, "how": "MEMORY USAGE", "keys": named, "body_kept": kept}
    import psycopg  # noqa: PLC0415

    with psycopg.connect(spec["dsn"], autocommit=True) as conn:
        _record_sends(spec, url, f"{run}-warm", 1, marker)
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT table_name FROM information_schema.columns "
                "WHERE column_name = 'message_id' AND table_schema = current_schema()"
            ).fetchall()
        ]
        if not tables:
            raise RuntimeError("no table with a message_id column")

        def total() -> int:
            return sum(
                int(conn.execute("SELECT pg_total_relation_size(%s)", (t,)).fetchone()[0])
                for t in tables
            )

        before = total()
        _record_sends(spec, url, run, count, marker)
        conn.execute("CHECKPOINT")
        after = total()
        row_size, kept = 0.0, False
        for name in tables:
            from psycopg import sql  # noqa: PLC0415

            ident = sql.Identifier(name)
            query = sql.SQL("SELECT avg(pg_column_size(t.*)) FROM {} t").format(ident)
            row_size = max(row_size, float(conn.execute(query).fetchone()[0] or 0))
            query = sql.SQL("SELECT count(*) FROM {} t WHERE t::text LIKE %s").format(ident)
            kept = kept or int(conn.execute(query, (f"%{marker}%",)).fetchone()[0]) > 0
    return {
        "bytes": row_size,
        "how": "pg_column_size of a row",
        "relation_growth": (after - before) / count,
        "body_kept": kept,
    }


# --- figures -------------------------------------------------------------------------------------


def markdown(figures: dict[str, Any]) -> list[str]:
    """The tables."""
    kinds, missing = figures["kinds"], figures["missing"]
    lines: list[str] = []
    if missing:
        lines += [", ".join(f"{kind}: {why}" for kind, why in missing.items()), ""]
    crash = figures.get("crashes", {})
    if crash:
        lines += [
            f"Crash and restart: the restarted orchestrator's store has its clock {SHIFT:g} s "
            "ahead, so the dead one's 10 s lease is seen lapsed at once.",
            "",
        ]
        lines += table(
            ["journal", "crashes", "runs per send (mean)", "max", "never ran", "wrong tasks"],
            (
                [
                    kind,
                    c["crashes"],
                    f"{c['runs_mean']:.3f}",
                    c["runs_max"],
                    c["never_ran"],
                    c["wrong_tasks"],
                ]
                for kind, c in crash.items()
                if "error" not in c
            ),
        )
        rows = []
        for kind, c in crash.items():
            if "error" in c:
                rows.append([kind, "crashed", "", c["error"]])
                continue
            for point in POINTS:
                p = c["points"][point]
                share = f"{p['task'] / p['crashes']:.0%}" if p["crashes"] else "-"
                ended = "; ".join(f"{n} {what}" for what, n in sorted(p["ended"].items()))
                rows.append(
                    [kind, POINT_NAMES[point], f"{p['task']}/{p['crashes']} ({share})", ended]
                )
                for label, again in p["again"].items():
                    ended = "; ".join(f"{n} {what}" for what, n in sorted(again["ended"].items()))
                    rows.append([kind, AGAIN[label], f"{again['task']}/{again['tried']}", ended])
        lines += [
            "",
            *table(["journal", "killed", "got their task", "how they ended"], rows, "llrl"),
        ]
        whys = Counter()
        for c in crash.values():
            whys.update(c.get("unknown_why", {}))
        if whys:
            lines += ["", "Why the unknown ones were not resent (the Guard's words):", ""]
            lines += [f"* {n}x: {why}" for why, n in whys.most_common()]
    sends = figures.get("latency", {}).get("sends", {})
    if sends:
        lines += [
            "",
            f"A send on loopback, {figures['latency']['number']} per kind, in turns (ms):",
            "",
        ]
        lines += table(
            [
                "journal",
                "p50",
                "p99",
                "added p50",
                "added p99",
                "target (added p50)",
                "claim+settle p50",
                "p99",
            ],
            (
                [
                    kind,
                    f"{s['p50']:.3f}",
                    f"{s['p99']:.3f}",
                    f"{s.get('added_p50', 0):.3f}" if kind != "none" else "",
                    f"{s.get('added_p99', 0):.3f}" if kind != "none" else "",
                    f"≤ {ADDED_P50_MS[kind]:g}" if kind in ADDED_P50_MS else "",
                    f"{figures['latency']['claim_settle'][kind]['p50']:.3f}"
                    if kind in figures["latency"]["claim_settle"]
                    else "",
                    f"{figures['latency']['claim_settle'][kind]['p99']:.3f}"
                    if kind in figures["latency"]["claim_settle"]
                    else "",
                ]
                for kind, s in sends.items()
            ),
        )
    c = figures.get("crowd")
    if c:
        lines += [
            "",
            f"The crowd: {c['sends']} logical sends, each by 2 of {c['processes']} processes, "
            "one SQLite journal:",
            "",
        ]
        lines += table(
            [
                "requests",
                "answered",
                "records",
                "closed with a task",
                "lost records",
                "runs max",
                "two tasks",
                "wall (s)",
            ],
            [
                [
                    c["requests"],
                    c["answered"],
                    c["records"],
                    c["closed_task"],
                    c["lost"],
                    c["runs_max"],
                    c["two_tasks"],
                    f"{c['wall']:.2f}",
                ]
            ],
        )
        if c["failed"]:
            lines += ["", "failed: " + ", ".join(f"{n} {what}" for what, n in c["failed"].items())]
    sizes = figures.get("sizes", {}).get("sizes", {})
    if sizes:
        lines += ["", f"Bytes per record, over {figures['sizes']['records']} sends:", ""]
        lines += table(
            ["journal", "bytes per record", "how", "also", "request body kept"],
            (
                [kind, "error", s["error"], "", ""]
                if "error" in s
                else [
                    kind,
                    f"{s['bytes']:.0f}",
                    s["how"],
                    f"file growth {s['file_growth']:.0f}"
                    if "file_growth" in s
                    else f"relation growth {s['relation_growth']:.0f}"
                    if "relation_growth" in s
                    else f"{s.get('keys', 0)} keys",
                    "yes" if s["body_kept"] else "no",
                ]
                for kind, s in sizes.items()
            ),
            "lrlll",
        )
    del kinds
    return lines


def targets(figures: dict[str, Any]) -> list[Target]:
    """Runs per send, what a journal adds, the crowd, record sizes."""
    found: list[Target] = []
    for kind, c in figures.get("crashes", {}).items():
        if "error" in c:
            continue
        found.append(
            Target(
                f"{kind}: at most 1.000 runs per logical send after a crash, no wrong task",
                f"{c['runs_max']} max, {c['runs_mean']:.3f} mean, {c['wrong_tasks']} wrong",
                c["runs_max"] <= 1 and c["wrong_tasks"] == 0,
            )
        )
    sends = figures.get("latency", {}).get("sends", {})
    for kind, limit in ADDED_P50_MS.items():
        if kind in sends:
            added = sends[kind].get("added_p50", 0.0)
            found.append(
                Target(
                    f"{kind}: adds at most {limit:g} ms p50 to a send",
                    f"{added:.3f} ms",
                    added <= limit,
                )
            )
    c = figures.get("crowd")
    if c:
        found.append(
            Target(
                "crowd: no lost record, at most one run per messageId",
                f"{c['lost']} lost, {c['runs_max']} max",
                c["lost"] == 0 and c["runs_max"] <= 1,
            )
        )
    for kind, s in figures.get("sizes", {}).get("sizes", {}).items():
        if "error" not in s:
            found.append(
                Target(
                    f"{kind}: under 1 KiB per record, no request body kept",
                    f"{s['bytes']:.0f} bytes, body {'kept' if s['body_kept'] else 'not kept'}",
                    s["bytes"] < RECORD_MAX and not s["body_kept"],
                )
            )
    return found


def _restarts(c: dict[str, Any]) -> str:
    """Restarts that got their task, and those that did once the agent's word was declared."""
    first = sum(p["task"] for p in c["points"].values())
    later = sum(a["task"] for p in c["points"].values() for a in p["again"].values())
    return f"{first}/{c['crashes']}" + (f" (+{later} declared)" if later else "")


def _summary(figures: dict[str, Any]) -> list[str]:
    rows = []
    sends = figures.get("latency", {}).get("sends", {})
    for kind in figures["kinds"]:
        c = figures.get("crashes", {}).get(kind, {})
        s = figures.get("sizes", {}).get("sizes", {}).get(kind, {})
        rows.append(
            [
                kind,
                figures["missing"].get(kind, "yes"),
                f"{c['runs_max']}" if "runs_max" in c else "",
                _restarts(c) if "points" in c else "",
                f"{sends[kind]['p50']:.3f}" if kind in sends else "",
                f"{sends[kind].get('added_p50', 0):.3f}"
                if kind in sends and kind != "none"
                else "",
                f"{s['bytes']:.0f}" if "bytes" in s else "",
            ]
        )
    return table(
        [
            "journal",
            "available",
            "runs max after crash",
            "restarts got task",
            "send p50 ms",
            "added p50 ms",
            "bytes/record",
        ],
        rows,
        "llrrrrr",
    )


def _part(name: str, errors: dict[str, str], work: Callable[[], Any]) -> Any:
    try:
        return work()
    except Exception as exc:
        traceback.print_exc()
        errors[name] = f"{type(exc).__name__}: {exc}"
        return None


def main() -> int:
    """Run the parts, print the tables (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--crashes", type=int, default=100, help="crashes per journal kind")
    parser.add_argument("--number", type=int, default=400, help="timed sends per kind")
    parser.add_argument("--pairs", type=int, default=500, help="claim+settle pairs per store")
    parser.add_argument("--crowd-sends", type=int, default=1000, help="logical sends of the crowd")
    parser.add_argument("--records", type=int, default=300, help="records measured per store")
    parser.add_argument("--kinds", default="none,sqlite,redis,postgres")
    parser.add_argument("--parts", default="1,2,3,4", help="parts to run, comma-separated")
    parser.add_argument("--seed", type=int, default=7)
    add_json_option(parser)
    args = parser.parse_args()
    wanted = [kind for kind in args.kinds.split(",") if kind]
    parts = set(args.parts.split(","))
    load = os.getloadavg()[0]
    errors: dict[str, str] = {}
    figures: dict[str, Any] = {"loadavg": load, "kinds": wanted}
    with tempfile.TemporaryDirectory(prefix="a2a-bench-journal-") as scratch:
        stores = Stores(wanted, scratch)
        figures["missing"] = stores.missing
        kinds = [kind for kind in wanted if kind in stores.specs]
        try:
            if "1" in parts:
                figures["crashes"] = {}
                for kind in kinds:
                    if kind == "none":
                        continue
                    spec = stores.spec(kind, "crashes")
                    done = _part(
                        f"crashes/{kind}",
                        errors,
                        lambda spec=spec, kind=kind: crashes(kind, spec, args.crashes, args.seed),
                    )
                    figures["crashes"][kind] = done or {"error": errors[f"crashes/{kind}"]}
            if "2" in parts and kinds:
                done = _part(
                    "latency", errors, lambda: latency(stores, kinds, args.number, args.pairs)
                )
                if done:
                    figures["latency"] = done
            if "3" in parts and "sqlite" in kinds:
                done = _part("crowd", errors, lambda: crowd(stores, args.crowd_sends))
                if done:
                    figures["crowd"] = done
            if "4" in parts:
                done = _part("sizes", errors, lambda: record_size(stores, kinds, args.records))
                if done:
                    figures["sizes"] = done
        finally:
            stores.stop()
    figures["errors"] = errors
    if not emit(args.json, figures):
        heading = (
            f"Python {sys.version.split()[0]}; journals: "
            + ", ".join(f"{k} ({stores.missing.get(k, 'available')})" for k in wanted)
            + f"; {args.crashes} crashes per kind, {args.number} sends per kind in turns, "
            f"{args.crowd_sends} crowd sends, {args.records} records sized; "
            f"{os.cpu_count()} CPUs, load average {load:.2f} at the start"
        )
        show(
            heading, [*markdown(figures), "", "Summary:", "", *_summary(figures)], targets(figures)
        )
        for name, why in errors.items():
            print(f"CRASHED: {name}: {why}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
