"""``a2a-errors demo``: every scenario on every binding of a real a2a-sdk peer, classified.

`run_demo` starts the embedded a2a-sdk peer(s) of `a2a_client_errors.testing.peer` on
127.0.0.1, runs each scenario of `SCENARIOS` on each binding it applies to, feeds every raw
capture to `classify`, and prints one row per capture: what the server sent (HTTP status,
JSON-RPC code, gRPC code), the reason decided, the action and the signal the reason came from.

Requests that a2a-sdk accepts although the spec would reject them (a missing required
extension, an unsupported version on gRPC) are shown too, marked ``accepted``.

Importing this module needs the optional dependencies (``pip install
'a2a-client-errors[a2a]'``): it raises ImportError, with that line, without them.
"""

from __future__ import annotations

import contextlib
import json
import sys
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Final

import httpx

from a2a_client_errors import classify, escape
from a2a_client_errors.testing.peer import (
    BINDINGS,
    GRPC,
    JSONRPC,
    SCENARIOS,
    EmbeddedPeer,
    Scenario,
    capture,
    capture_sdk,
    require_dependencies,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import TextIO

__all__ = ["DemoRow", "collect_rows", "render_table", "run_demo"]

# The demo is nothing without the peer: fail at import, with the install line, when the
# optional dependencies are missing (the CLI imports this module lazily for that reason).
require_dependencies("a2a-errors demo")

_MESSAGE_WIDTH: Final = 60
_COLUMNS: Final[tuple[tuple[str, str], ...]] = (
    ("scenario", "SCENARIO"),
    ("binding", "BINDING"),
    ("observed", "OBSERVED"),
    ("reason", "REASON"),
    ("action", "ACTION"),
    ("source", "SOURCE"),
    ("note", "NOTE"),
)


@dataclass(frozen=True, slots=True)
class DemoRow:
    """One capture and the decision taken on it.

    Attributes:
        scenario: The scenario name.
        binding: ``jsonrpc``, ``rest`` or ``grpc``, or ``sdk:<binding>`` for a2a-sdk's client.
        operation: The A2A operation called.
        expected_reason: The reason the A2A spec assigns to the scenario (None: success).
        observed: What the server sent, in short (``"HTTP 200, JSON-RPC -32001"``, ...).
        http_status: The HTTP status on the wire, if any.
        jsonrpc_code: The JSON-RPC ``error.code`` on the wire, if any.
        grpc_status: The gRPC status name on the wire, if any.
        reason: The reason decided, or None.
        action: The action decided.
        source: The signal the reason (or action) came from, or None for a success.
        message: The peer's error message, control characters escaped and shortened.
        accepted: True when the scenario's error is not produced on this binding and the
            server accepted the request instead.
        note: A short remark (``"accepted: not enforced by a2a-sdk"``).

    """

    scenario: str
    binding: str
    operation: str
    expected_reason: str | None
    observed: str
    http_status: int | None
    jsonrpc_code: int | None
    grpc_status: str | None
    reason: str | None
    action: str
    source: str | None
    message: str
    accepted: bool
    note: str


def _sse_error_body(text: str) -> object:
    """Return the parsed data of the first ``error`` event of an SSE body (None if none)."""
    event = "message"
    for line in text.splitlines():
        if not line:
            event = "message"
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            event = value
        elif name == "data" and event == "error":
            return _json(value)
    return None


def _json(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _error_field(body: object, key: str) -> object:
    error = body.get("error") if isinstance(body, dict) else None
    return error.get(key) if isinstance(error, dict) else None


def _observe(raw: object, binding: str) -> tuple[str, int | None, int | None, str | None]:
    """Describe what the server sent: (summary, HTTP status, JSON-RPC code, gRPC status)."""
    if isinstance(raw, httpx.Response):
        status = raw.status_code
        is_sse = "text/event-stream" in raw.headers.get("content-type", "")
        summary = f"HTTP {status}" + (" SSE" if is_sse else "")
        body = _sse_error_body(raw.text) if is_sse else _json(raw.text)
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
    wire_binding = binding.removeprefix("sdk:")
    observed, http_status, jsonrpc_code, grpc_status = _observe(raw, wire_binding)
    if binding.startswith("sdk:") and not isinstance(raw, BaseException):
        observed = "result"
    decision = classify(raw, operation=spec.operation)
    error = decision.error
    return DemoRow(
        scenario=spec.name,
        binding=binding,
        operation=spec.operation,
        expected_reason=spec.expected_reason,
        observed=observed,
        http_status=http_status,
        jsonrpc_code=jsonrpc_code,
        grpc_status=grpc_status,
        reason=None if decision.reason is None else str(decision.reason),
        action=str(decision.action.value),
        source=None if error is None else str(error.source.value),
        message="" if error is None else _short(error.message),
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


def render_table(rows: Sequence[DemoRow]) -> str:
    """Render rows as a plain-text table, control characters in every cell escaped.

    Args:
        rows: The rows to render.

    Returns:
        The table: a header line, a rule, then one line per row.

    """
    cells = [[title for _, title in _COLUMNS]]
    for row in rows:
        values = asdict(row)
        cells.append(
            [escape(str(values[key] if values[key] is not None else "-")) for key, _ in _COLUMNS]
        )
    widths = [max(len(line[i]) for line in cells) for i in range(len(_COLUMNS))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in cells
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def run_demo(*, json_output: bool = False, out: TextIO | None = None, sdk: bool = False) -> int:
    """Run every scenario on every binding of a real a2a-sdk peer and print the decisions.

    Args:
        json_output: Print a JSON list of rows instead of a table.
        out: Where to print (standard output by default).
        sdk: Also run each scenario through a2a-sdk's own client (rows ``sdk:<binding>``).

    Returns:
        The exit status, 0.

    Raises:
        ImportError: If a2a-sdk, grpcio or uvicorn is not installed.

    """
    stream = out if out is not None else sys.stdout
    rows = collect_rows(sdk=sdk)
    if json_output:
        stream.write(json.dumps([asdict(row) for row in rows], indent=2) + "\n")
    else:
        stream.write(render_table(rows) + "\n")
    return 0
