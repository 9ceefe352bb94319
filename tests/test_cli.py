"""The ``a2a-errors`` command line: classify captures, print the table."""

from __future__ import annotations

import io
import json
import re
import runpy
import subprocess
import sys
from typing import TYPE_CHECKING

import httpx
import pytest

from a2a_client_errors import Action, Delivery
from a2a_client_errors._policy import delivery_note
from a2a_client_errors._reasons import ROWS
from a2a_client_errors.cli import main, parse_capture

if TYPE_CHECKING:
    from pathlib import Path

RAW_404 = (
    b"HTTP/1.1 404 Not Found\r\n"
    b"Content-Type: application/a2a+json\r\n"
    b"Content-Length: 999\r\n"
    b"\r\n"
    b'{"error": {"code": 404, "status": "NOT_FOUND", "message": "gone",'
    b' "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",'
    b' "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org",'
    b' "metadata": {"taskId": "task-123"}}]}}'
)


def _run(argv: list[str], stdin: bytes = b"") -> tuple[int, str]:
    out = io.StringIO()
    fake_stdin = io.TextIOWrapper(io.BytesIO(stdin))
    code = main(argv, out=out, stdin=fake_stdin)
    return code, out.getvalue()


def test_parse_capture_reads_status_headers_and_body() -> None:
    """A raw HTTP capture becomes a response with its status, headers and body."""
    response = parse_capture(RAW_404)
    assert isinstance(response, httpx.Response)
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/a2a+json"
    assert response.json()["error"]["status"] == "NOT_FOUND"


def test_parse_capture_keeps_a_bare_body_as_bytes() -> None:
    """A capture without a status line is the body itself."""
    assert parse_capture(b'  {"a": 1}') == b'{"a": 1}'


def test_parse_capture_with_a_broken_status_line_is_a_body() -> None:
    """A status line without a number is not taken for one."""
    assert parse_capture(b"HTTP/1.1 abc\r\n\r\n{}") == b"HTTP/1.1 abc\r\n\r\n{}"
    assert parse_capture(b"HTTP/1.1 999 Nope\r\n\r\n") == b"HTTP/1.1 999 Nope\r\n\r\n"


def test_parse_capture_without_a_blank_line_has_an_empty_body() -> None:
    """A capture of only a status line and headers has no body."""
    response = parse_capture(b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5")
    assert isinstance(response, httpx.Response)
    assert response.status_code == 503
    assert response.content == b""


def test_classify_prints_the_decision_from_a_file(tmp_path: Path) -> None:
    """`classify FILE` prints the action, the reason and where it came from."""
    capture = tmp_path / "capture.http"
    capture.write_bytes(RAW_404)
    code, out = _run(["classify", str(capture)])
    assert code == 0
    assert "reconcile" in out
    assert "TASK_NOT_FOUND" in out
    assert "error_info" in out
    assert "metadata.taskId  task-123" in out


def test_classify_json_from_stdin() -> None:
    """`classify - --json` reads stdin and prints the decision as JSON."""
    body = b'{"jsonrpc": "2.0", "id": 1, "error": {"code": -32009, "message": "no"}}'
    code, out = _run(["classify", "-", "--json", "--operation", "SendMessage"], body)
    assert code == 0
    decision = json.loads(out)
    assert decision["action"] == "fix_request"
    assert decision["reason"] == "VERSION_NOT_SUPPORTED"
    assert decision["operation"] == "SendMessage"
    assert decision["error"]["jsonrpc_code"] == -32009
    assert decision["error"]["source"] == "jsonrpc_code"


def test_classify_escapes_control_characters() -> None:
    """Peer text with terminal escapes is printed escaped."""
    body = b'{"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "a\\u001b[31mb"}}'
    code, out = _run(["classify"], body)
    assert code == 0
    assert "\x1b" not in out
    assert "a\\x1b[31mb" in out


def test_classify_shows_hints_and_versions() -> None:
    """Retry hints and supported versions appear in the table output."""
    raw = (
        b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/problem+json\r\n"
        b"Retry-After: 3\r\n\r\n"
        b'{"type": "https://a2a-protocol.org/errors/version-not-supported",'
        b' "title": "Protocol Version Not Supported", "status": 400,'
        b' "supportedVersions": ["0.3", "1.0"]}'
    )
    code, out = _run(["classify"], raw)
    assert code == 0
    assert "VERSION_NOT_SUPPORTED" in out
    assert "problem_type" in out
    assert "0.3, 1.0" in out
    assert "retry after         3.0" in out


def test_classify_names_where_a_redirect_points() -> None:
    """A captured 307 prints fix_request and its location, without user info or query."""
    raw = b"HTTP/1.1 307 Temporary Redirect\r\nLocation: https://u:pw@b.example/a2a?token=t\r\n\r\n"
    code, out = _run(["classify"], raw)
    assert code == 0
    assert "fix_request" in out
    assert re.search(r"^location +https://b\.example/a2a$", out, flags=re.MULTILINE)
    assert "pw" not in out
    assert "token" not in out


def test_classify_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An unreadable file is an error of the command, exit status 2."""
    code, _ = _run(["classify", str(tmp_path / "nope")])
    assert code == 2
    assert "cannot read" in capsys.readouterr().err


def test_table_lists_every_reason_with_legacy_columns() -> None:
    """`table` prints every row with both the 1.0.1 and the 1.0.0 columns."""
    code, out = _run(["table"])
    assert code == 0
    lines = out.splitlines()
    assert "http 1.0.0" in lines[0]
    for row in ROWS:
        line = next(line for line in lines if line.startswith(row.reason.value + " "))
        assert row.action.value in line
        if row.spec:
            assert str(row.jsonrpc) in line
    not_found = next(line for line in lines if line.startswith("TASK_NOT_CANCELABLE "))
    assert "409" in not_found


def test_table_json_round_trips_the_rows() -> None:
    """`table --json` carries every column of every row."""
    code, out = _run(["table", "--json"])
    assert code == 0
    rows = json.loads(out)
    assert [r["reason"] for r in rows] == [row.reason.value for row in ROWS]
    version = next(r for r in rows if r["reason"] == "VERSION_NOT_SUPPORTED")
    assert version["grpc"] == "FAILED_PRECONDITION"
    assert version["grpc_1_0_0"] == "UNIMPLEMENTED"
    assert version["problem_type"] == "https://a2a-protocol.org/errors/version-not-supported"


def test_module_entry_point_runs() -> None:
    """`python -m a2a_client_errors table` works as the console script does."""
    done = subprocess.run(
        [sys.executable, "-m", "a2a_client_errors", "table", "--json"],
        capture_output=True,
        check=True,
        timeout=60,
    )
    assert json.loads(done.stdout)[0]["reason"] == "TASK_NOT_FOUND"


def test_module_entry_point_exits_with_the_status(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`python -m a2a_client_errors` exits with main()'s status."""
    monkeypatch.setattr(sys, "argv", ["a2a-errors", "table"])
    with pytest.raises(SystemExit) as exited:
        runpy.run_module("a2a_client_errors", run_name="__main__")
    assert exited.value.code == 0
    assert "TASK_NOT_FOUND" in capsys.readouterr().out


def test_the_table_shows_the_draft_row_and_the_operation_aware_rows() -> None:
    """The draft 1.1 reason is marked; the statuses read against the operation are listed."""
    code, text = _run(["table"])
    assert code == 0
    assert "TASK_GENERATION_MISMATCH †" in text
    assert "from the draft of A2A 1.1" in text
    assert "-> wrong endpoint" in text
    assert "-> TASK_NOT_CANCELABLE: the 1.0.0 column" in text
    status_rows = text.split("is read against the operation", 1)[1].splitlines()
    assert all(len(line) <= 100 for line in status_rows)
    code, raw = _run(["table", "--json"])
    rows = {row["reason"]: row for row in json.loads(raw)}
    assert rows["TASK_GENERATION_MISMATCH"]["draft"] is True
    assert rows["TASK_NOT_FOUND"]["draft"] is False


FAILED_TASK_BODY = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"id": "t-1", "status": {"state": "TASK_STATE_FAILED"}},
    }
).encode()
NOT_FOUND_BODY = json.dumps(
    {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "gone"}}
).encode()


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (FAILED_TASK_BODY, 0),
        (NOT_FOUND_BODY, 4),
        (b"HTTP/1.1 503 Service Unavailable\r\n\r\n", 3),
        (b"HTTP/1.1 401 Unauthorized\r\n\r\n", 8),
        (json.dumps({"jsonrpc": "2.0", "id": 1, "error": {"code": -32006}}).encode(), 7),
    ],
)
def test_exit_status_names_the_action(body: bytes, status: int) -> None:
    """With --exit-status a script branches on the action; without it, 0 as before."""
    assert _run(["classify", "--exit-status", "-"], body)[0] == status
    assert _run(["classify", "-"], body)[0] == 0


def test_every_action_has_its_own_exit_status() -> None:
    """The table is a bijection onto statuses other than 1 and 2 (errors), 0 for ok."""
    from a2a_client_errors.cli import EXIT_STATUSES

    assert set(EXIT_STATUSES) == set(Action)
    assert len(set(EXIT_STATUSES.values())) == len(Action)
    assert EXIT_STATUSES[Action.OK] == 0
    assert not {1, 2} & set(EXIT_STATUSES.values())


def test_an_unknown_operation_is_a_usage_error_that_lists_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A typo in --operation is refused, with the operations it could have been."""
    with pytest.raises(SystemExit) as raised:
        _run(["classify", "--operation", "SendMesage", "-"], NOT_FOUND_BODY)
    assert raised.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice" in err
    assert "SendMessage" in err
    assert "GetTask" in err


def test_a_body_that_holds_a_task_prints_its_outcome() -> None:
    """ok, and beside it the task's state, what it means and the next step."""
    code, text = _run(["classify", "-"], FAILED_TASK_BODY)
    assert code == 0
    assert "action   ok" in text
    assert "TASK_STATE_FAILED" in text
    assert "a result, not a call error" in text
    assert "a retry needs a new task" in text
    code, raw = _run(["classify", "--json", "-"], FAILED_TASK_BODY)
    document = json.loads(raw)
    assert document["action"] == "ok"
    assert document["task"]["state"] == "TASK_STATE_FAILED"
    assert document["task"]["failed"] is True


HINTED_503 = b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 7\r\n\r\n"
BARE_503 = b"HTTP/1.1 503 Service Unavailable\r\n\r\n"


def _action_line(text: str) -> str:
    (line,) = [line for line in text.splitlines() if line.startswith("action ")]
    return line.split(None, 1)[1]


@pytest.mark.parametrize(
    ("capture", "argv", "shown", "delivery"),
    [
        (HINTED_503, [], "retry  (delivery: not processed - safe to resend)", "not_processed"),
        (
            BARE_503,
            ["--operation", "SendMessage"],
            "retry  (delivery: unknown - it may have been processed: a send is looked up"
            " before it is resent)",
            "unknown",
        ),
        (
            BARE_503,
            [],
            "retry  (delivery: unknown - it may have been processed: a send is looked up"
            " before it is resent)",
            "unknown",
        ),
        (
            BARE_503,
            ["--operation", "GetTask"],
            "retry  (delivery: unknown - it may have been processed; GetTask makes no task,"
            " so it is sent again)",
            "unknown",
        ),
        (
            NOT_FOUND_BODY,
            [],
            "reconcile  (delivery: not processed - refused: nothing was done)",
            "not_processed",
        ),
        (
            RAW_404,
            ["--operation", "GetTask"],
            "reconcile  (delivery: not processed - refused: nothing was done)",
            "not_processed",
        ),
    ],
)
def test_the_delivery_verdict_stands_beside_the_action(
    capture: bytes, argv: list[str], shown: str, delivery: str
) -> None:
    """A retry is not read as a blind resend: what reached the agent is said in words."""
    code, text = _run(["classify", *argv, "-"], capture)
    assert code == 0
    assert _action_line(text) == shown
    code, raw = _run(["classify", "--json", *argv, "-"], capture)
    assert json.loads(raw)["delivery"] == delivery


def test_a_result_has_no_delivery_verdict() -> None:
    """A result stands alone: nothing failed, so nothing is said of what reached the agent."""
    _, text = _run(["classify", "-"], FAILED_TASK_BODY)
    assert _action_line(text) == "ok"
    _, raw = _run(["classify", "--json", "-"], FAILED_TASK_BODY)
    assert json.loads(raw)["delivery"] is None


@pytest.mark.parametrize("delivery", list(Delivery))
@pytest.mark.parametrize("action", list(Action))
def test_delivery_notes_say_what_a_resend_does(delivery: Delivery, action: Action) -> None:
    """Only a retry speaks of resending; only an unknown delivery of a send is looked up."""
    for operation in (None, "SendMessage", "SendStreamingMessage", "CancelTask"):
        note = delivery_note(delivery, action, operation)
        verdict = delivery.value.replace("_", " ")
        assert note.startswith(f"{verdict} - ")
        safe = delivery is not Delivery.UNKNOWN
        assert ("safe to resend" in note) == (action is Action.RETRY and safe)
        looked_up = action is Action.RETRY and not safe and operation != "CancelTask"
        assert ("a send is looked up before it is resent" in note) == looked_up
        assert ("may have been processed" in note) == (not safe)
