"""``a2a-errors demo`` speaks to a newcomer: heading, groups by binding, results, summary, JSON."""

from __future__ import annotations

import io
import json
import re
from typing import TYPE_CHECKING

import pytest

from a2a_client_errors import Action, Delivery
from a2a_client_errors.cli import main

if TYPE_CHECKING:
    from a2a_client_errors.demo import DemoRow

# The demo runs the embedded peer (a2a-sdk 1.x).
pytestmark = [pytest.mark.e2e, pytest.mark.a2a_sdk("1")]
demo = pytest.importorskip("a2a_client_errors.demo", reason="needs the a2a extra")

GROUPS = ("JSON-RPC", "HTTP+JSON", "gRPC")


@pytest.fixture(scope="module")
def rows() -> list[DemoRow]:
    """One run of every scenario against the embedded peer, shared by the tests below."""
    return demo.collect_rows()


@pytest.fixture(scope="module")
def text(rows: list[DemoRow]) -> str:
    """The demo as people read it."""
    return demo.render_text(rows)


@pytest.fixture(scope="module")
def document(rows: list[DemoRow]) -> dict[str, object]:
    """The demo as machines read it."""
    loaded = json.loads(demo.render_json(rows))
    assert isinstance(loaded, dict)
    return loaded


def test_every_line_fits_in_100_columns(text: str) -> None:
    """No line is wider than 100 columns."""
    assert max(len(line) for line in text.splitlines()) <= demo.WIDTH == 100


def test_the_sdk_rows_fit_too() -> None:
    """With a2a-sdk's client rows, the lines still fit."""
    rows = demo.collect_rows(sdk=True)
    lines = demo.render_text(rows).splitlines()
    assert max(len(line) for line in lines) <= 100
    assert "a2a-sdk's client over HTTP+JSON" in "\n".join(lines)


def test_the_heading_says_what_it_is(text: str) -> None:
    """The first line says what the demo is."""
    first = text.splitlines()[0]
    assert first == f"a2a-errors demo: {demo.TITLE}"
    assert "every error a real a2a-sdk agent produces, on 127.0.0.1, classified" in first


def test_rows_are_grouped_by_binding_with_the_spec_names(text: str, rows: list[DemoRow]) -> None:
    """One group per binding, named as the spec names it; "rest" never printed."""
    lines = text.splitlines()
    headings = [line for line in lines if line.split(" (")[0] in GROUPS]
    assert [heading.split(" (")[0] for heading in headings] == list(GROUPS)
    for heading, binding in zip(headings, ("jsonrpc", "http+json", "grpc"), strict=True):
        count = sum(row.binding == binding for row in rows)
        assert f"({count} requests;" in heading
    assert not re.search(r"\brest\b", text, flags=re.IGNORECASE)
    assert {row.binding for row in rows} == {"jsonrpc", "http+json", "grpc"}


def test_scenarios_read_as_words(text: str, rows: list[DemoRow]) -> None:
    """Scenarios are titled in words, not identifiers."""
    assert all("_" not in row.title for row in rows)
    assert "GetTask: unknown task" in text
    assert "task_not_found" not in text


def test_a_failed_task_is_shown_as_a_result(text: str, rows: list[DemoRow]) -> None:
    """A FAILED task is a result, and the output says why."""
    failed = [row for row in rows if row.scenario == "failed_task"]
    assert {row.binding for row in failed} == {"jsonrpc", "http+json", "grpc"}
    assert all(row.action == "ok" and row.task_state == "TASK_STATE_FAILED" for row in failed)
    assert all(row.reason is None and row.source is None for row in failed)
    assert text.count("(a result: task FAILED)") == len(failed)
    flat = " ".join(text.split())
    assert "the FAILED task came back in a successful call" in flat
    assert "resending the message would create a second task" in flat


def test_the_summary_counts_the_rows_by_action(text: str, rows: list[DemoRow]) -> None:
    """The summary line counts every row once, by action."""
    lines = text.splitlines()
    (line,) = [line for line in lines if " requests classified: " in line]
    total, _, counts = line.partition(" requests classified: ")
    assert int(total) == len(rows)
    printed = {action: int(n) for n, action in (item.split() for item in counts.split(", "))}
    assert sum(printed.values()) == len(rows)
    for action in Action:
        assert printed.get(action.value, 0) == sum(row.action == action.value for row in rows)


def test_it_ends_with_where_to_go_next(text: str) -> None:
    """The last lines point to the docs pages."""
    tail = "\n".join(text.splitlines()[-2:])
    assert tail.startswith("next: ")
    for page in ("docs/concepts.md", "docs/reasons.md", "docs/guard.md", "docs/demo.md"):
        assert page in tail


def test_json_has_the_documented_schema(document: dict[str, object], rows: list[DemoRow]) -> None:
    """The JSON document has the schema the docs describe."""
    assert document["schema"] == demo.SCHEMA == "a2a-errors-demo/1"
    assert document["title"] == demo.TITLE
    agent = document["agent"]
    assert isinstance(agent, dict)
    assert (agent["sdk"], agent["host"]) == ("a2a-sdk", "127.0.0.1")
    summary = document["summary"]
    assert isinstance(summary, dict)
    assert summary["rows"] == len(rows)
    assert summary["by_action"] == demo.summary(rows)
    assert list(summary["by_action"]) == [action.value for action in Action]
    assert sum(summary["by_action"].values()) == len(rows)


def test_json_has_the_same_rows_as_the_text(document: dict[str, object], text: str) -> None:
    """The JSON rows are the rows of the tables, group by group."""
    listed = document["rows"]
    assert isinstance(listed, list)
    fields = {
        "scenario",
        "title",
        "binding",
        "operation",
        "expected_reason",
        "observed",
        "http_status",
        "jsonrpc_code",
        "grpc_status",
        "reason",
        "action",
        "delivery",
        "source",
        "message",
        "task_state",
        "accepted",
        "note",
    }
    assert all(set(row) == fields for row in listed)
    table_rows = [
        line
        for line in text.splitlines()
        if line.rstrip().split("  ")[-1].strip() in {a.value for a in Action}
    ]
    order = ["jsonrpc", "http+json", "grpc"]
    grouped = sorted(listed, key=lambda row: order.index(row["binding"]))  # stable: per group
    assert len(table_rows) == len(grouped)
    for line, row in zip(table_rows, grouped, strict=True):
        assert line.startswith(row["title"])
        assert line.rstrip().endswith(row["action"])


def test_every_retry_says_what_reached_the_agent(text: str, rows: list[DemoRow]) -> None:
    """Under each retry, and only there, its delivery in words: a retry is no blind resend."""
    lines = text.splitlines()
    notes = [i for i, line in enumerate(lines) if line.startswith("  ^ delivery: ")]
    retries = [i for i, line in enumerate(lines) if line.rstrip().endswith("  retry")]
    assert retries
    assert notes == [i + 1 for i in retries]
    retried = [row for row in rows if row.action == "retry"]
    assert len(retried) == len(retries)
    # The agent's code raised, before or after it began the work: what it did is unknown,
    # and every one of these calls is a send.
    assert {
        (row.delivery, row.operation in {"SendMessage", "SendStreamingMessage"}) for row in retried
    } == {("unknown", True)}
    for i in notes:
        assert lines[i] == (
            "  ^ delivery: unknown - it may have been processed: a send is looked up before it"
            " is resent"
        )


def test_json_rows_carry_the_delivery(rows: list[DemoRow], document: dict[str, object]) -> None:
    """A failure's row names its delivery verdict; a success's row has none."""
    listed = document["rows"]
    assert isinstance(listed, list)
    assert [row["delivery"] for row in listed] == [row.delivery for row in rows]
    for row in rows:
        if row.action == "ok":
            assert row.delivery is None
        else:
            assert Delivery(row.delivery) in Delivery
    refused = [row for row in rows if row.reason == "TASK_NOT_FOUND"]
    assert refused
    assert {row.delivery for row in refused} == {"not_processed"}


def test_the_command_prints_text_and_json() -> None:
    """``a2a-errors demo`` and ``a2a-errors demo --json`` agree."""
    out = io.StringIO()
    assert main(["demo"], out=out) == 0
    printed = out.getvalue()
    assert printed.startswith("a2a-errors demo: ")
    out = io.StringIO()
    assert main(["demo", "--json"], out=out) == 0
    loaded = json.loads(out.getvalue())
    assert loaded["schema"] == "a2a-errors-demo/1"
    assert loaded["summary"]["rows"] == len(loaded["rows"])
    assert f"{len(loaded['rows'])} requests classified: " in printed
