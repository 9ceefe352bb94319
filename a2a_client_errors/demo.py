"""``a2a-errors demo``: every error a real a2a-sdk agent produces, on 127.0.0.1, classified.

`run_demo` starts the embedded a2a-sdk peer(s) of `a2a_client_errors.testing.peer` on 127.0.0.1,
runs each scenario of `SCENARIOS` on each binding it applies to, feeds every raw capture to
`classify`, and prints the rows grouped by binding (JSON-RPC, HTTP+JSON, gRPC): the request,
what the agent answered, the reason decided and the action; under each retry, what reached
the agent (its `Delivery`, in words), so that a retry is not read as a blind resend. A task
that came back (FAILED included) is shown as the result it is. The output fits in 100 columns
and ends with the count of rows by action and where to read on.

Requests that a2a-sdk accepts although the spec would reject them (a missing required
extension, an unsupported version on gRPC) are shown too, marked ``accepted``.

``--json`` prints one object with a stable schema (`SCHEMA`; fields are added, never renamed,
without a new schema value)::

    {
      "schema": "a2a-errors-demo/1",
      "title": "...",
      "agent": {"sdk": "a2a-sdk", "version": "1.3.0", "host": "127.0.0.1"},
      "summary": {"rows": 49, "by_action": {"ok": 11, "retry": 6, ...}},
      "rows": [{"scenario": "task_not_found", "title": "GetTask: unknown task",
                "binding": "jsonrpc", ...}, ...]
    }

``by_action`` holds every action, zeros included; ``rows`` holds the fields of `DemoRow`.

Importing this module needs the optional dependencies (``pip install
'a2a-client-errors[a2a]'``): it raises ImportError, with that line, without them.
"""

from __future__ import annotations

import contextlib
import json
import sys
import textwrap
from collections import Counter
from dataclasses import asdict, dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Final

import httpx

from a2a_client_errors import Action, Delivery, task_outcome
from a2a_client_errors.testing.peer import (
    BINDINGS,
    GRPC,
    JSONRPC,
    REST,
    SCENARIOS,
    EmbeddedPeer,
    Scenario,
    capture,
    capture_sdk,
    require_dependencies,
)
from a2a_client_errors.types import DEFAULT_POLICY, NO_BODY, delivery_note, escape, normalize_body

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import TextIO

__all__ = [
    "SCHEMA",
    "TITLE",
    "WIDTH",
    "DemoRow",
    "collect_rows",
    "render_json",
    "render_table",
    "render_text",
    "run_demo",
    "summary",
]

# The demo is nothing without the peer: fail at import, with the install line, when the
# optional dependencies are missing (the CLI imports this module lazily for that reason).
require_dependencies("a2a-errors demo")

SCHEMA: Final = "a2a-errors-demo/1"
"""The ``schema`` value of ``a2a-errors demo --json``."""
TITLE: Final = "every error a real a2a-sdk agent produces, on 127.0.0.1, classified"
"""What the demo is, in its heading."""
WIDTH: Final = 100
"""No line of the text output is wider."""

_MESSAGE_WIDTH: Final = 60
_HOST: Final = "127.0.0.1"
# The spec's names of the bindings, as the probe writes them; the peer's internal names differ.
_WIRE_NAMES: Final = {JSONRPC: "jsonrpc", REST: "http+json", GRPC: "grpc"}
_SPEC_NAMES: Final = {"jsonrpc": "JSON-RPC", "http+json": "HTTP+JSON", "grpc": "gRPC"}
_CARRIERS: Final = {
    "jsonrpc": "errors come back in HTTP 200, as a JSON-RPC error code",
    "http+json": "an HTTP status and a google.rpc.Status body",
    "grpc": "a gRPC status and its details trailer",
}
_TITLES: Final = {
    "task_not_found": "GetTask: unknown task",
    "task_not_cancelable": "CancelTask: task finished",
    "push_not_supported": "set push: card says no",
    "unsupported_operation": "stream: card says no",
    "subscribe_terminal": "subscribe: task finished",
    "extended_card_not_configured": "extended card: none set",
    "extension_required": "required extension unsent",
    "version_not_supported": "A2A-Version: 99.0",
    "version_header_missing": "no A2A-Version header",
    "content_type_not_supported": "send an image/png part",
    "internal_error": "the agent's code raises",
    "failed_task": "a task that ends FAILED",
    "stream_error_midway": "stream fails midway",
    "parse_error": "body is not JSON",
    "invalid_request": "malformed request",
    "method_not_found": "unknown JSON-RPC method",
    "invalid_params": "message missing fields",
    "cancel_working": "CancelTask: task working",
}
# Column caps: with two spaces between columns the widest row is 26 + 23 + 34 + 11 + 6 = 100.
_CAPS: Final = (26, 23, 34, 11)
_HEADERS: Final = ("request", "the agent answered", "reason", "action")
_DELIVERY_MARK: Final = "^"  # the line under a retry row: what reached the agent
_NEXT: Final = (
    "next: docs/concepts.md (the three kinds of failure), docs/reasons.md (the decision table),",
    "      docs/guard.md (act on each decision), docs/demo.md (this output; --json for machines)",
)


@dataclass(frozen=True, slots=True)
class DemoRow:
    """One capture and the decision taken on it.

    Attributes:
        scenario: The scenario's stable name (``"task_not_found"``).
        title: The scenario in a few words, for people (``"GetTask: unknown task"``).
        binding: ``jsonrpc``, ``http+json`` or ``grpc`` (the probe's names), or
            ``sdk:<binding>`` for a2a-sdk's own client.
        operation: The A2A operation called.
        expected_reason: The reason the A2A spec assigns to the scenario (None: success).
        observed: What the server sent, in short (``"HTTP 200, JSON-RPC -32001"``, ...).
        http_status: The HTTP status on the wire, if any.
        jsonrpc_code: The JSON-RPC ``error.code`` on the wire, if any.
        grpc_status: The gRPC status name on the wire, if any.
        reason: The reason decided, or None.
        action: The action decided.
        delivery: What reached the agent (a `Delivery` value: ``not_sent``,
            ``not_processed``, ``unknown``), or None for a success.
        source: The signal the reason (or action) came from, or None for a success.
        message: The peer's error message, control characters escaped and shortened.
        task_state: The state of the task that came back in a successful call
            (``"TASK_STATE_FAILED"``), or None.
        accepted: True when the scenario's error is not produced on this binding and the
            server accepted the request instead.
        note: A short remark (``"accepted: not enforced by a2a-sdk"``).

    """

    scenario: str
    title: str
    binding: str
    operation: str
    expected_reason: str | None
    observed: str
    http_status: int | None
    jsonrpc_code: int | None
    grpc_status: str | None
    reason: str | None
    action: str
    delivery: str | None
    source: str | None
    message: str
    task_state: str | None
    accepted: bool
    note: str


def _error_field(body: object, key: str) -> object:
    error = body.get("error") if isinstance(body, dict) else None
    return error.get(key) if isinstance(error, dict) else None


def _observe(
    raw: object, binding: str, body: object = None
) -> tuple[str, int | None, int | None, str | None]:
    """Describe what the server sent: (summary, HTTP status, JSON-RPC code, gRPC status).

    ``body`` is the JSON the answer was read as (the body, or the data of a stream's error
    event), when the caller has it: it is not parsed again.
    """
    if isinstance(raw, httpx.Response):
        status = raw.status_code
        is_sse = "text/event-stream" in raw.headers.get("content-type", "")
        summary = f"HTTP {status}" + (" SSE" if is_sse else "")
        code = _error_field(body, "code")
        if binding == JSONRPC:
            jsonrpc_code = code if isinstance(code, int) and not isinstance(code, bool) else None
            if jsonrpc_code is not None:
                summary += f", JSON-RPC {jsonrpc_code}"
            return summary, status, jsonrpc_code, None
        rpc_status = _error_field(body, "status")
        if is_sse and code is not None:
            summary += f", error event {code}"
        if isinstance(rpc_status, str):
            summary += f" {rpc_status}"
        return summary, status, None, None
    code_method = getattr(raw, "code", None)
    if isinstance(raw, BaseException) and callable(code_method):
        with contextlib.suppress(Exception):
            name = str(code_method().name)
            return f"gRPC {name}", None, None, name
    if isinstance(raw, BaseException):
        return type(raw).__name__, None, None, None
    if binding == GRPC:
        return "gRPC OK", None, None, "OK"
    return "result", None, None, None


def _short(text: str) -> str:
    text = escape(text)
    if len(text) > _MESSAGE_WIDTH:
        return text[: _MESSAGE_WIDTH - 3] + "..."
    return text


def _row(spec: Scenario, binding: str, raw: object, *, accepted: bool) -> DemoRow:
    # One parse: what the server sent, and the task of a successful answer, are read from the
    # body `normalize` read (an a2a-sdk object, which is no body, is read as it is).
    error, body = normalize_body(raw, operation=spec.operation)
    wire_binding = binding.removeprefix("sdk:")
    observed, http_status, jsonrpc_code, grpc_status = _observe(
        raw, wire_binding, None if body is NO_BODY else body
    )
    sdk = binding.startswith("sdk:")
    if sdk and not isinstance(raw, BaseException):
        observed = "result"
    decision = DEFAULT_POLICY.decide(error, operation=spec.operation)
    if error is not None:
        outcome = None
    elif body is not NO_BODY:
        outcome = task_outcome(body)
    else:
        outcome = None if isinstance(raw, bytes | str | httpx.Response) else task_outcome(raw)
    return DemoRow(
        scenario=spec.name,
        title=_TITLES.get(spec.name, spec.name.replace("_", " ")),
        binding=("sdk:" if sdk else "") + _WIRE_NAMES.get(wire_binding, wire_binding),
        operation=spec.operation,
        expected_reason=spec.expected_reason,
        observed=observed,
        http_status=http_status,
        jsonrpc_code=jsonrpc_code,
        grpc_status=grpc_status,
        reason=None if decision.reason is None else str(decision.reason),
        action=str(decision.action.value),
        delivery=None if error is None else str(error.delivery.value),
        source=None if error is None else str(error.source.value),
        message="" if error is None else _short(error.message),
        task_state=None if outcome is None else str(outcome.state),
        accepted=accepted,
        note="accepted: not enforced by a2a-sdk" if accepted else "",
    )


def _targets(spec: Scenario, *, sdk: bool) -> Iterator[tuple[str, bool]]:
    """Yield (binding, accepted) pairs to run ``spec`` on."""
    for binding in BINDINGS:
        if binding in spec.bindings:
            yield binding, False
        elif binding in spec.accepted_on:
            yield binding, True
    if sdk:
        for binding in spec.sdk_bindings:
            if binding in spec.bindings:
                yield f"sdk:{binding}", False
            elif binding in spec.accepted_on:
                yield f"sdk:{binding}", True


def collect_rows(scenarios: Sequence[Scenario] = SCENARIOS, *, sdk: bool = False) -> list[DemoRow]:
    """Start the peers, run the scenarios and classify every capture.

    Args:
        scenarios: The scenarios to run (all by default).
        sdk: Also run each scenario through a2a-sdk's own client.

    Returns:
        One row per (scenario, binding) capture, in scenario order.

    """
    rows: list[DemoRow] = []
    with contextlib.ExitStack() as stack:
        peers: dict[bool, EmbeddedPeer] = {}

        def peer_for(spec: Scenario) -> EmbeddedPeer:
            if spec.streaming_peer not in peers:
                peer = EmbeddedPeer(streaming=spec.streaming_peer)
                peers[spec.streaming_peer] = stack.enter_context(peer)
            return peers[spec.streaming_peer]

        for spec in scenarios:
            peer = peer_for(spec)
            for binding, accepted in _targets(spec, sdk=sdk):
                if binding.startswith("sdk:"):
                    raw = capture_sdk(
                        peer, binding.removeprefix("sdk:"), spec.name, allow_unproduced=accepted
                    )
                else:
                    raw = capture(peer, binding, spec.name, allow_unproduced=accepted)
                rows.append(_row(spec, binding, raw, accepted=accepted))
    return rows


def _cap(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _state(row: DemoRow) -> str:
    return "" if row.task_state is None else row.task_state.removeprefix("TASK_STATE_")


def _answered(row: DemoRow) -> str:
    """What the agent answered, in a table cell: the binding's own terms, short."""
    state = _state(row)
    if row.binding.startswith("sdk:"):
        return f"{row.observed}, task {state}" if state else row.observed
    stream = " SSE" in row.observed
    if row.binding == "jsonrpc" and row.jsonrpc_code is not None:
        return f"{'SSE, ' if stream else ''}JSON-RPC {row.jsonrpc_code}"
    if row.binding == "http+json" and stream and ", error event " in row.observed:
        return "SSE event " + row.observed.split(", error event ", 1)[1]
    if row.binding == "grpc" and row.grpc_status is not None:
        answered = row.grpc_status
    else:
        answered = row.observed.removeprefix("HTTP ")
    return f"{answered}, task {state}" if state else answered


def _reason_cell(row: DemoRow) -> str:
    if row.reason is not None:
        return row.reason
    if row.accepted:
        return "(none: accepted by a2a-sdk *)"
    if row.action == Action.OK.value:
        return f"(a result: task {_state(row)})" if row.task_state else "(a result)"
    return "(no ErrorInfo: by status)" if row.source == "status_fallback" else "-"


def _group_title(binding: str, count: int) -> str:
    wire = binding.removeprefix("sdk:")
    name = _SPEC_NAMES.get(wire, wire)
    if binding.startswith("sdk:"):
        return f"a2a-sdk's client over {name} ({count} requests; what the client raised)"
    return f"{name} ({count} requests; {_CARRIERS.get(wire, wire)})"


def render_table(rows: Sequence[DemoRow]) -> str:
    """Render rows as a plain-text table, control characters in every cell escaped.

    Args:
        rows: The rows to render.

    Returns:
        The table: a header line, a rule, then one line per row, and under each retry a line
        that says what reached the agent (its `Delivery`, in words); no line is wider than
        `WIDTH` columns.

    """
    cells = [list(_HEADERS)]
    cells.extend(
        [
            _cap(escape(cell), cap)
            for cell, cap in zip(
                (row.title, _answered(row), _reason_cell(row), row.action), _CAPS, strict=True
            )
        ]
        for row in rows
    )
    widths = [max(len(line[i]) for line in cells) for i in range(len(_HEADERS))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in cells
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    for index in reversed(range(len(rows))):
        note = _delivery_line(rows[index])
        if note:
            lines.insert(index + 3, note)
    return "\n".join(lines)


def _delivery_line(row: DemoRow) -> str:
    """Under a retry, what reached the agent: a retry is no blind resend (see `delivery_note`)."""
    if row.action != Action.RETRY.value or row.delivery is None:
        return ""
    note = delivery_note(Delivery(row.delivery), Action.RETRY, row.operation)
    return _cap(escape(f"  {_DELIVERY_MARK} delivery: {note}"), WIDTH)


def summary(rows: Sequence[DemoRow]) -> dict[str, int]:
    """Count rows by action, every action included (zeros too), in the order of `Action`.

    Args:
        rows: The rows to count.

    Returns:
        ``{"ok": n, "retry": n, ...}``, summing to ``len(rows)``.

    """
    counts = Counter(row.action for row in rows)
    return {action.value: counts.get(action.value, 0) for action in Action}


def _sdk_version() -> str:
    try:
        return metadata.version("a2a-sdk")
    except metadata.PackageNotFoundError:  # pragma: no cover - the import above needs it
        return "unknown"


def _wrap(text: str, indent: str = "") -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent)


def render_text(rows: Sequence[DemoRow]) -> str:
    """Render the demo for people: heading, one table per binding, notes, summary, next steps.

    Args:
        rows: The rows to render, in the order `collect_rows` gives them.

    Returns:
        The text, no line wider than `WIDTH` columns.

    """
    lines = [f"a2a-errors demo: {TITLE}", ""]
    lines += _wrap(
        f"An a2a-sdk {_sdk_version()} agent runs in this process on {_HOST}, serving JSON-RPC, "
        "HTTP+JSON and gRPC; nothing leaves the machine. Each request below is built to trigger "
        "one A2A error (or a success). classify() reads what came back, reason first (the "
        "ErrorInfo when the agent sends one), and decides the action."
    )
    groups: dict[str, list[DemoRow]] = {}
    for row in rows:
        groups.setdefault(row.binding, []).append(row)
    for binding, group in groups.items():
        lines += ["", _cap(_group_title(binding, len(group)), WIDTH), render_table(group)]
    if any(row.task_state == "TASK_STATE_FAILED" and not row.accepted for row in rows):
        lines.append("")
        lines += _wrap(
            "A task that ends FAILED is a result, not an error: the FAILED task came back in a "
            "successful call, so classify says ok, and resending the message would create a "
            "second task. Read the task instead."
        )
    accepted = sorted({row.title for row in rows if row.accepted})
    if accepted:
        lines.append("")
        lines += _wrap(
            "* a2a-sdk accepted a request the A2A spec says to refuse ("
            + "; ".join(accepted)
            + "): there was no error to classify."
        )
    counts = summary(rows)
    by_action = ", ".join(f"{n} {action}" for action, n in counts.items() if n)
    lines += ["", f"{len(rows)} requests classified: {by_action}", *_NEXT]
    return "\n".join(lines)


def render_json(rows: Sequence[DemoRow]) -> str:
    """Render the demo for machines, in the schema `SCHEMA` (see the module's docstring).

    Args:
        rows: The rows to render.

    Returns:
        The JSON document, indented.

    """
    document = {
        "schema": SCHEMA,
        "title": TITLE,
        "agent": {"sdk": "a2a-sdk", "version": _sdk_version(), "host": _HOST},
        "summary": {"rows": len(rows), "by_action": summary(rows)},
        "rows": [asdict(row) for row in rows],
    }
    return json.dumps(document, indent=2)


def run_demo(*, json_output: bool = False, out: TextIO | None = None, sdk: bool = False) -> int:
    """Run every scenario on every binding of a real a2a-sdk peer and print the decisions.

    Args:
        json_output: Print the JSON document (`render_json`) instead of the text.
        out: Where to print (standard output by default).
        sdk: Also run each scenario through a2a-sdk's own client (rows ``sdk:<binding>``).

    Returns:
        The exit status, 0.

    Raises:
        ImportError: If a2a-sdk, grpcio or uvicorn is not installed.

    """
    stream = out if out is not None else sys.stdout
    rows = collect_rows(sdk=sdk)
    stream.write((render_json(rows) if json_output else render_text(rows)) + "\n")
    return 0
