"""``a2a-errors journal``: the open records of a journal, shown and resolved from the shell.

Usage::

    a2a-errors journal list [--sqlite PATH | --redis URL | --postgres DSN] [--limit N] [--json]
    a2a-errors journal resolve [STORE] [-H NAME:VALUE]... [--timeout S] [--limit N] [--json]
    a2a-errors journal resolve [STORE] MESSAGE_ID (--task TASK_ID | --refused)

``resolve`` without a messageId looks every open record nobody holds up (`Guard.recover`,
through `GuardTransport`: the headers are the agent's credentials, never printed nor kept);
with one, it closes that record on the operator's word: the task it made, or ``--refused``
(nothing was processed: the messageId may be sent again).
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, TextIO

from a2a_client_errors._errors import escape
from a2a_client_errors._journal import JournalError, LeaseKeeper, State

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from a2a_client_errors._journal import Journal, JournalRecord, Recovery

__all__ = ["add_parser", "run"]


def add_parser(commands: Any, header: Callable[[str], tuple[str, str]]) -> None:
    """Add ``journal`` and its subcommands to the CLI's ``commands``."""
    cmd = commands.add_parser("journal", help="show and resolve the open sends of a journal")
    subs = cmd.add_subparsers(dest="journal_command", required=True)
    listing = subs.add_parser("list", help="the open records, oldest first")
    resolve = subs.add_parser(
        "resolve",
        help="look the open records up (recover), or close one on your word",
        description="Without MESSAGE_ID: look up every open record nobody holds, through "
        "the agent each was sent to, and close those found. With MESSAGE_ID: close that "
        "record as --task TASK_ID or --refused. Exit status: 0 all resolved, 1 some are "
        "still unknown, 2 the journal could not be read (or a usage error).",
    )
    for sub in (listing, resolve):
        store = sub.add_mutually_exclusive_group()
        store.add_argument("--sqlite", metavar="PATH", help="a SqliteJournal file (default)")
        store.add_argument("--redis", metavar="URL", help="a RedisJournal's server")
        store.add_argument("--postgres", metavar="DSN", help="a PostgresJournal's database")
        sub.add_argument("--limit", type=int, default=100, help="records at most (100)")
        sub.add_argument("--json", action="store_true", help="print JSON")
    resolve.add_argument("message_id", nargs="?", help="the record to close on your word")
    resolve.add_argument("--task", metavar="TASK_ID", help="the task it made")
    resolve.add_argument("--refused", action="store_true", help="nothing was processed")
    resolve.add_argument(
        "-H",
        "--header",
        action="append",
        type=header,
        default=[],
        metavar="NAME:VALUE",
        help="a header for the look-ups (credentials, A2A-Version); never printed",
    )
    resolve.add_argument("--timeout", type=float, default=30.0, help="seconds per look-up (30)")


def open_store(args: argparse.Namespace) -> Journal:
    """The journal the arguments name (SQLite ``a2a-journal.db`` by default)."""
    if args.redis:
        from a2a_client_errors.integrations.redis import RedisJournal  # noqa: PLC0415

        return RedisJournal.from_url(args.redis)
    if args.postgres:
        from a2a_client_errors.integrations.postgres import PostgresJournal  # noqa: PLC0415

        return PostgresJournal(args.postgres)
    from a2a_client_errors.journal import SqliteJournal  # noqa: PLC0415

    return SqliteJournal(args.sqlite or "a2a-journal.db")


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run ``journal list`` or ``journal resolve``; returns the exit status."""
    try:
        journal = open_store(args)
    except (ImportError, ValueError) as exc:
        err.write(f"a2a-errors journal: {escape(str(exc))}\n")
        return 2
    try:
        if args.journal_command == "list":
            return _list(journal, args, out)
        if args.message_id:
            return _close(journal, args, out, err)
        return _recover(journal, args, out)
    except JournalError as exc:
        err.write(f"a2a-errors journal: {escape(str(exc))}\n")
        return 2
    finally:
        journal.close()


def _row(record: JournalRecord, now: float) -> str:
    holder = "nobody (to look up)" if record.lapsed else "a live sender"
    age = max(0.0, now - record.started)
    note = f"  {escape(record.note)}" if record.note else ""
    return (
        f"{escape(record.message_id)}  {escape(record.peer)}  held by {holder}  "
        f"{age:.0f}s old  {record.attempts} sender(s){note}\n"
    )


def _list(journal: Journal, args: argparse.Namespace, out: TextIO) -> int:
    records = journal.unsettled(limit=args.limit)
    if args.json:
        out.write(json.dumps([record.to_dict() for record in records], indent=2) + "\n")
        return 0
    if not records:
        out.write("no open records\n")
        return 0
    now = time.time()
    for record in records:
        out.write(_row(record, now))
    return 0


def _close(journal: Journal, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if bool(args.task) == bool(args.refused):
        err.write("a2a-errors journal resolve: give one of --task TASK_ID or --refused\n")
        return 2
    owner = LeaseKeeper(journal).owner
    taken = journal.take_over(args.message_id, owner)
    if taken is None:
        record = journal.get(args.message_id)
        why = "no such record" if record is None else f"it is {record.state}"
        if record is not None and record.state is State.OPEN:
            why = "a live sender holds it"
        err.write(f"a2a-errors journal resolve: not closed: {escape(why)}\n")
        return 2
    state, made = (State.TASK, args.task) if args.task else (State.REFUSED, None)
    journal.settle(args.message_id, owner, state, made=made, note="closed from the shell")
    out.write(f"{escape(args.message_id)}: {state}" + (f" {escape(made)}\n" if made else "\n"))
    return 0


def _recover(journal: Journal, args: argparse.Namespace, out: TextIO) -> int:
    import httpx  # noqa: PLC0415 (only this command sends)

    from a2a_client_errors._guard import Guard  # noqa: PLC0415
    from a2a_client_errors._lookup import ExactlyOnce  # noqa: PLC0415
    from a2a_client_errors._transport import GuardTransport  # noqa: PLC0415

    headers = dict(args.header)
    guard = Guard(journal=journal, exactly_once=ExactlyOnce(timeout=args.timeout))
    with GuardTransport(guard, httpx.HTTPTransport(), raise_failures=True) as transport:
        found = guard.recover(
            lambda record: transport.lookup_for(record, headers=headers), limit=args.limit
        )
    return _report(found, args, out)


def _report(found: list[Recovery], args: argparse.Namespace, out: TextIO) -> int:
    if args.json:
        rows = [{"outcome": r.outcome, "why": r.why, "record": r.record.to_dict()} for r in found]
        out.write(json.dumps(rows, indent=2) + "\n")
    elif not found:
        out.write("no open records\n")
    for recovery in [] if args.json else found:
        record = recovery.record
        what = f"task {escape(record.made or '')}" if recovery.outcome == "found" else ""
        why = f" ({escape(recovery.why)})" if recovery.why else ""
        out.write(f"{escape(record.message_id)}: {recovery.outcome} {what}{why}\n")
    return 1 if any(r.outcome in {"unknown", "skipped"} for r in found) else 0
