"""The ``a2a-errors`` command: classify, the table, the demo, probe agents, the journal.

Usage::

    a2a-errors classify [FILE|-] [--json] [--operation NAME] [--exit-status]
    a2a-errors table [--json]
    a2a-errors demo [--json]
    a2a-errors probe URL [-H NAME:VALUE]... [--check NAME]... [--binding NAME]...
                         [--timeout S] [--strict-table 1.0.1|1.0.0] [--follow-card-hosts]
                         [--message TEXT] [--json]
    a2a-errors journal list|resolve [--sqlite PATH|--redis URL|--postgres DSN] ...
"""

from __future__ import annotations

import argparse
import json
import sys
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, TextIO

import httpx

from a2a_client_errors._errors import escape
from a2a_client_errors._journal_cli import add_parser as add_journal_parser
from a2a_client_errors._journal_cli import run as run_journal
from a2a_client_errors._normalize import INVALID, normalize_body
from a2a_client_errors._outcomes import TaskOutcome, task_outcome
from a2a_client_errors._policy import DEFAULT_POLICY, delivery_note
from a2a_client_errors._reasons import (
    A2A_OPERATIONS,
    NO_TASK_OPERATIONS,
    ROWS,
    STATUS_ROWS,
    Action,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from a2a_client_errors._policy import Decision

__all__ = ["main", "parse_capture"]

_MAX_INPUT = 64 * 1024 * 1024


def parse_capture(raw: bytes) -> object:
    """A captured HTTP response (status line, headers, blank line, body) or a bare body.

    Returns an ``httpx.Response`` for a capture that starts with ``HTTP/``, else the raw bytes
    (a JSON body or an SSE stream), which `classify` reads as they are.
    """
    text = raw.lstrip()
    if not text.startswith(b"HTTP/"):
        return text
    head, sep, body = text.replace(b"\r\n", b"\n").partition(b"\n\n")
    if not sep:
        head, body = text.replace(b"\r\n", b"\n"), b""
    status_line, *header_lines = head.decode("latin-1").split("\n")
    parts = status_line.split(None, 2)
    try:
        status = int(parts[1])
    except (IndexError, ValueError):
        return text
    if not 100 <= status <= 599:
        return text
    headers = []
    for line in header_lines:
        name, colon, value = line.partition(":")
        if colon and name.strip():
            headers.append((name.strip(), value.strip()))
    # The body as it came on the wire: drop framing headers that no longer describe it.
    headers = [
        (k, v)
        for k, v in headers
        if k.lower() not in ("content-length", "transfer-encoding", "content-encoding")
    ]
    return httpx.Response(status, headers=headers, content=body)


def _read(path: str, stdin: TextIO) -> bytes:
    if path == "-":
        return stdin.buffer.read(_MAX_INPUT) if hasattr(stdin, "buffer") else stdin.read().encode()
    with open(path, "rb") as handle:
        return handle.read(_MAX_INPUT)


def _decision_lines(decision: Decision) -> list[tuple[str, str]]:
    error = decision.error
    action = decision.action.value
    if error is not None:
        # Beside the action: a retry is no blind resend (see `delivery_note`).
        note = delivery_note(error.delivery, decision.action, decision.operation)
        action += f"  (delivery: {note})"
    rows = [("action", action), ("reason", str(decision.reason or "-"))]
    if error is not None:
        rows += [
            ("kind", error.kind.value),
            ("source", error.source.value),
            ("wire", error.wire.value),
        ]
        for label, value in (
            ("jsonrpc code", error.jsonrpc_code),
            ("http status", error.http_status),
            ("grpc status", error.grpc_status),
            ("retry after", error.retry_after),
            ("transport", error.transport and error.transport.value),
            ("location", error.location),
        ):
            if value is not None:
                rows.append((label, str(value)))
        if error.supported_versions:
            rows.append(("supported versions", ", ".join(error.supported_versions)))
        for key, value in error.metadata.items():
            rows.append((f"metadata.{key}", value))
        if error.message:
            rows.append(("message", error.message))
    return [(escape(label), escape(value)) for label, value in rows]


def _cmd_classify(args: argparse.Namespace, out: TextIO, stdin: TextIO) -> int:
    try:
        raw = _read(args.file, stdin)
    except OSError as exc:
        print(f"a2a-errors: cannot read {escape(args.file)}: {exc.strerror}", file=sys.stderr)
        return 2
    capture = parse_capture(raw)
    # One parse: the task of a successful answer is read from the body `normalize` read.
    error, body = normalize_body(capture, operation=args.operation)
    decision = DEFAULT_POLICY.decide(error, operation=args.operation)
    outcome = task_outcome(body) if decision.ok and body is not INVALID else None
    if args.json:
        document = decision.to_dict()
        if outcome is not None:
            document["task"] = {
                "state": outcome.state,
                "id": outcome.task_id,
                "final": outcome.is_final,
                "failed": outcome.failed,
                "next_step": outcome.next_step,
            }
        json.dump(document, out, indent=2, ensure_ascii=True)
        out.write("\n")
    else:
        lines = _decision_lines(decision)
        if outcome is not None:
            lines += _outcome_lines(outcome)
        width = max(len(label) for label, _ in lines)
        for label, value in lines:
            out.write(f"{label:<{width}}  {value}\n")
    return EXIT_STATUSES[decision.action] if args.exit_status else 0


def _outcome_lines(outcome: TaskOutcome) -> list[tuple[str, str]]:
    """What a task that came back means: a result, never a call error."""
    meaning = (
        "a result, not a call error: resending would start a second task"
        if outcome.is_terminal
        else "the task waits for the client"
        if outcome.is_interrupted
        else "the task is still running"
    )
    rows = [("task", outcome.state), ("means", meaning), ("next", outcome.next_step)]
    if outcome.task_id:
        rows.insert(1, ("task id", outcome.task_id))
    return [(label, escape(value)) for label, value in rows]


def _table_rows() -> list[dict[str, object]]:
    return [
        {
            "reason": row.reason.value,
            "spec": row.spec,
            "jsonrpc": row.jsonrpc,
            "grpc": row.grpc,
            "http": row.http,
            "grpc_1_0_0": row.grpc_legacy,
            "http_1_0_0": row.http_legacy,
            "action": row.action.value,
            "aliases": list(row.aliases),
            "problem_type": row.problem_type,
            "draft": row.draft,
        }
        for row in ROWS
    ]


def _cmd_table(args: argparse.Namespace, out: TextIO) -> int:
    rows = _table_rows()
    if args.json:
        json.dump(rows, out, indent=2)
        out.write("\n")
        return 0
    headers = ("reason", "jsonrpc", "grpc", "http", "grpc 1.0.0", "http 1.0.0", "action")
    keys = ("reason", "jsonrpc", "grpc", "http", "grpc_1_0_0", "http_1_0_0", "action")
    cells = [[("-" if row[k] is None else str(row[k])) for k in keys] for row in rows]
    for cell, row in zip(cells, rows, strict=True):
        if row["draft"]:
            cell[0] += " †"
        elif not row["spec"]:
            cell[0] += " *"
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    out.write("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip() + "\n")
    out.write("  ".join("-" * w for w in widths) + "\n")
    for cell in cells:
        out.write("  ".join(c.ljust(w) for c, w in zip(cell, widths, strict=True)).rstrip() + "\n")
    out.write("\n* not an A2A error: a reason real SDKs send with the A2A domain.\n")
    out.write("† from the draft of A2A 1.1 (the dev-1.1 branch), not 1.0.\n")
    out.write("1.0.0 columns: the table of A2A 1.0.0, which the official TCK still follows.\n")
    out.write(
        "\nA status with no A2A body (no ErrorInfo, code or type) is read against the operation"
        "\nit answers, when that is known; unknown, the status alone decides as above.\n\n"
    )
    for status_row in STATUS_ROWS:
        what = status_row.reason.value if status_row.reason is not None else "wrong endpoint"
        operations = ", ".join(sorted(status_row.operations))
        if len(status_row.operations) > len(NO_TASK_OPERATIONS):
            others = sorted(A2A_OPERATIONS - status_row.operations)
            operations = "any operation" + (f" but {', '.join(others)}" if others else "")
        out.write(f"  {status_row.status}  {operations}\n       -> {what}: {status_row.note}\n")
    return 0


def _cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    from a2a_client_errors._sdk_line import UnsupportedSdkError  # noqa: PLC0415

    try:
        from a2a_client_errors.demo import run_demo  # noqa: PLC0415 (needs the a2a extra)
    except (ImportError, UnsupportedSdkError) as exc:
        print(f"a2a-errors demo: {exc}", file=sys.stderr)
        return 2
    return run_demo(json_output=args.json, out=out)


def _header(text: str) -> tuple[str, str]:
    """``NAME:VALUE`` for ``-H``; the value never appears in an error message."""
    name, colon, value = text.partition(":")
    if not colon or not name.strip() or any(c in name for c in " \t\r\n"):
        raise argparse.ArgumentTypeError("a header is NAME:VALUE (the value is not shown here)")
    return name.strip(), value.strip()


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {escape(text)}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError("must be a positive number of seconds")
    return value


def _cmd_probe(args: argparse.Namespace, out: TextIO) -> int:
    from a2a_client_errors.probe import probe  # noqa: PLC0415 (only this command needs it)

    try:
        report = probe(
            args.url,
            headers=args.header,
            timeout=args.timeout,
            checks=args.check,
            bindings=args.binding,
            strict_table=args.strict_table,
            follow_card_hosts=args.follow_card_hosts,
            message=args.message,
        )
    except ValueError as exc:
        print(f"a2a-errors probe: {escape(str(exc))}", file=sys.stderr)
        return 2
    out.write(report.to_json() + "\n" if args.json else report.to_text())
    if report.error is not None:
        print(f"a2a-errors probe: {escape(report.error)}", file=sys.stderr)
    return report.exit_status


EXIT_STATUSES: Final[Mapping[Action, int]] = MappingProxyType(
    {
        Action.OK: 0,
        Action.RETRY: 3,
        Action.RECONCILE: 4,
        Action.DEGRADE: 5,
        Action.FIX_REQUEST: 6,
        Action.REPORT: 7,
        Action.AUTH: 8,
    }
)
"""``a2a-errors classify --exit-status``: the exit status names the action (2 stays a usage
error or an unreadable file, as for every command)."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="a2a-errors",
        description="Reason-first error handling for A2A clients.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    cmd = commands.add_parser(
        "classify",
        help="classify a captured response (HTTP status line, headers, body) or a JSON body",
    )
    cmd.add_argument("file", nargs="?", default="-", help="the capture; '-' reads stdin")
    cmd.add_argument(
        "--operation",
        choices=sorted(A2A_OPERATIONS),
        metavar="OPERATION",
        help="the A2A operation the capture answers: " + ", ".join(sorted(A2A_OPERATIONS)),
    )
    cmd.add_argument("--json", action="store_true", help="print JSON")
    cmd.add_argument(
        "--exit-status",
        action="store_true",
        help="exit with the action's status: "
        + ", ".join(f"{code} {action.value}" for action, code in EXIT_STATUSES.items())
        + " (2: usage error)",
    )
    cmd = commands.add_parser("table", help="print the reason table with its 1.0.0 columns")
    cmd.add_argument("--json", action="store_true", help="print JSON")
    cmd = commands.add_parser(
        "demo",
        help="every error a real a2a-sdk agent produces, on 127.0.0.1, classified (needs [a2a])",
    )
    cmd.add_argument(
        "--json", action="store_true", help="print JSON (schema a2a-errors-demo/1, docs/demo.md)"
    )
    _probe_parser(commands)
    add_journal_parser(commands, _header)
    return parser


def _probe_parser(commands: Any) -> None:
    from a2a_client_errors.probe import BINDINGS, CHECKS, DEFAULT_MESSAGE, TABLES  # noqa: PLC0415

    cmd = commands.add_parser(
        "probe",
        help="trigger each A2A error on every interface of an agent and check what comes back",
        description="Read the agent card at URL, trigger every error that can be triggered "
        "deterministically on each interface it lists, and compare codes, statuses, reasons "
        "and ErrorInfo with the spec. Exit status: 0 every check that ran passed, 1 a check "
        "failed (an advisory check's failure is reported but does not count), 2 the probe "
        "could not run (or a usage error), 3 inconclusive: no check failed, but only a hop "
        "answered some (429, 502, 503, 504 with no A2A body, a refused connection), after "
        "trying them again.",
        epilog="checks: " + "; ".join(f"{c.name}: {c.summary}" for c in CHECKS),
    )
    cmd.add_argument("url", help="the agent's base URL, or its card's URL")
    cmd.add_argument(
        "-H",
        "--header",
        action="append",
        type=_header,
        default=[],
        metavar="NAME:VALUE",
        help="a header for every request (credentials); repeatable; values are never printed",
    )
    cmd.add_argument(
        "--timeout",
        type=_positive,
        default=10.0,
        help="seconds the whole probe may take (default 10)",
    )
    cmd.add_argument(
        "--check",
        action="append",
        choices=[c.name for c in CHECKS],
        metavar="NAME",
        help="run only this check; repeatable (default: all; names below)",
    )
    cmd.add_argument(
        "--binding",
        action="append",
        choices=list(BINDINGS),
        help="probe only this binding; repeatable (default: all)",
    )
    cmd.add_argument(
        "--strict-table",
        choices=list(TABLES),
        help="accept only this spec table's statuses (default: either)",
    )
    cmd.add_argument(
        "--follow-card-hosts",
        action="store_true",
        help="also probe interfaces the card lists on other hosts (they get the headers too)",
    )
    cmd.add_argument(
        "--message", default=DEFAULT_MESSAGE, help="the text of the messages the probe sends"
    )
    cmd.add_argument("--json", action="store_true", help="print the JSON report")


def main(
    argv: Sequence[str] | None = None, *, out: TextIO | None = None, stdin: TextIO | None = None
) -> int:
    """Run the command line; returns the exit status."""
    args = _parser().parse_args(argv)
    output = out if out is not None else sys.stdout
    if args.command == "classify":
        return _cmd_classify(args, output, stdin if stdin is not None else sys.stdin)
    if args.command == "table":
        return _cmd_table(args, output)
    if args.command == "probe":
        return _cmd_probe(args, output)
    if args.command == "journal":
        return run_journal(args, output, sys.stderr)
    return _cmd_demo(args, output)
