"""Hostile peers and careless callers: what the library renders never holds a secret of theirs.

Each test keeps one promise of the README against a crafted input: a header value httpx
refuses (a token read from a file with its newline), an exception whose text holds a URL with
credentials, a gRPC trailer whose ``Any`` names a module attribute, an exception whose
``__str__`` raises.
"""

from __future__ import annotations

import io
import json
import logging
from typing import Any

import grpc
import httpx
import pytest
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from hypothesis import given, settings
from hypothesis import strategies as st

from a2a_client_errors import (
    CallFailed,
    Guard,
    GuardTransport,
    Reason,
    classify,
    normalize,
    task_outcome,
)
from a2a_client_errors._wire import MAX_ITEMS, MAX_TEXT
from a2a_client_errors.cli import main
from a2a_client_errors.instrumentation import LoggingHook
from a2a_client_errors.testing import RecordingHook
from a2a_client_errors.types import escape
from tests.loopback import Loopback, Reply, loopback_fixture  # noqa: F401 (the fixture)

GET_TASK = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t-1"}}


def _rendered(failure: CallFailed, recorder: RecordingHook, caplog: Any) -> str:
    """Everything the library rendered about a failure: str, repr, dicts, hooks, log lines."""
    parts = [str(failure), repr(failure), json.dumps(failure.decision.to_dict())]
    parts += [str(event) for _, event in recorder.events]
    ours = [record for record in caplog.records if record.name.startswith("a2a_client_errors")]
    parts += [record.getMessage() + json.dumps(vars(record), default=repr) for record in ours]
    return "\n".join(parts)


def test_a_header_value_httpx_refuses_never_becomes_peer_text(
    loopback: Loopback, caplog: pytest.LogCaptureFixture
) -> None:
    """A token with its trailing newline: the failure names its type, never the value."""
    loopback.script([Reply.json(200, {"jsonrpc": "2.0", "id": 1, "result": {}})])
    secret = "tok-SECRET-4b1d"
    recorder = RecordingHook()
    guard = Guard(hooks=[recorder, LoggingHook()], sleep=lambda _: None)
    transport = GuardTransport(guard, raise_failures=True)
    with (
        caplog.at_level(logging.DEBUG),
        httpx.Client(transport=transport) as client,
        pytest.raises(CallFailed) as raised,
    ):
        client.post(loopback.url, json=GET_TASK, headers={"Authorization": f"Bearer {secret}\n"})
    assert secret not in _rendered(raised.value, recorder, caplog)
    assert any(r.name.startswith("a2a_client_errors") for r in caplog.records)  # it was logged
    error = raised.value.error
    assert error is not None
    assert error.message == "the request could not be sent as built (httpx.LocalProtocolError)"
    assert loopback.requests == []  # nothing left this machine


@settings(max_examples=200, deadline=None)
@given(
    secret=st.from_regex(r"[A-Za-z0-9_\-]{6,24}", fullmatch=True).map("S3CR3T-{}".format),
    kind=st.sampled_from(
        [
            httpx.LocalProtocolError,
            httpx.ConnectError,
            httpx.ReadError,
            httpx.ReadTimeout,
            httpx.RemoteProtocolError,
            httpx.InvalidURL,
            httpx.UnsupportedProtocol,
            ConnectionResetError,
            OSError,
            TimeoutError,
        ]
    ),
)
def test_no_exception_text_ever_appears_in_what_is_rendered(secret: str, kind: type) -> None:
    """Whatever an exception's text holds (a URL, a header, a body), no rendering repeats it."""
    exc = kind(f"https://user:{secret}@agent.example/?key={secret} header {secret!r}")
    decision = classify(exc, operation="SendMessage")
    error = decision.error
    assert error is not None
    for text in (str(decision), repr(decision), json.dumps(decision.to_dict()), str(error)):
        assert secret not in text


def test_an_exception_whose_str_raises_propagates_as_it_is() -> None:
    """The caller's own bug, however broken its text, is not a call error: it propagates."""

    class Broken(Exception):  # noqa: N818 (the caller's class, named as they like)
        def __str__(self) -> str:
            raise RuntimeError("no text")

    def fn() -> None:
        raise Broken

    with pytest.raises(Broken):
        Guard().call(fn, operation="GetTask")


class _Trailer(grpc.RpcError):
    """A gRPC error whose trailer holds ``status``."""

    def __init__(self, status: status_pb2.Status) -> None:
        self.status = status

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.FAILED_PRECONDITION

    def details(self) -> str:
        return "refused"

    def trailing_metadata(self) -> tuple[tuple[str, bytes], ...]:
        return (("grpc-status-details-bin", self.status.SerializeToString()),)


@pytest.mark.parametrize(
    "type_url",
    [
        "type.googleapis.com/google.rpc.DESCRIPTOR",
        "type.googleapis.com/google.rpc._sym_db",
        "type.googleapis.com/google.rpc.__builtins__",
        "type.googleapis.com/google.rpc.ErrorInfo.DESCRIPTOR",
        "type.googleapis.com/",
        "",
    ],
)
def test_one_odd_any_never_wipes_out_the_decision(type_url: str) -> None:
    """An ``Any`` naming a module attribute, beside a valid ErrorInfo: the reason stands."""
    status = status_pb2.Status(code=9, message="refused")
    status.details.append(any_pb2.Any(type_url=type_url, value=b"\x00\x01"))
    status.details.add().Pack(
        error_details_pb2.ErrorInfo(reason="TASK_NOT_CANCELABLE", domain="a2a-protocol.org")
    )
    error = normalize(_Trailer(status))
    assert error is not None
    assert error.reason is Reason.TASK_NOT_CANCELABLE
    assert error.raw_details[0]["@type"] == type_url


_HUGE_BODY = {
    "jsonrpc": "2.0",
    "id": 1,
    "error": {
        "code": -32099,
        "message": "refused",
        "data": [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "R" * 5_000_000,
                "domain": "a2a-protocol.org",
                "metadata": {f"key-{i}-" + "k" * 1000: "v" * 100_000 for i in range(200)},
            }
        ],
    },
}


_LONG = {
    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
    "reason": "x." * 500_000 + "TaskNotFoundError",
    "domain": "a2a-protocol.org",
}


def test_peer_text_is_capped_where_the_error_is_built() -> None:
    """A 5 M-character reason and 200 huge metadata entries: kept short, so rendered short."""
    error = normalize(_HUGE_BODY)
    assert error is not None
    assert isinstance(error.reason, str)
    assert len(error.reason) == MAX_TEXT
    assert error.reason.endswith("…")
    assert len(error.metadata) == MAX_ITEMS
    assert all(len(k) <= MAX_TEXT and len(v) <= MAX_TEXT for k, v in error.metadata.items())
    assert len(str(error)) < 2 * MAX_TEXT
    assert len(json.dumps(error.to_dict())) < 4 * MAX_ITEMS * 2 * MAX_TEXT  # was 11 MB


@pytest.mark.parametrize(
    "body",
    [
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "m", "data": [_LONG]}},
        {"error": {"code": 404, "status": "NOT_FOUND", "message": "m", "details": [_LONG]}},
    ],
)
def test_a_reason_longer_than_a_record_keeps_is_cut_and_never_read_as_a_known_one(
    body: dict[str, Any],
) -> None:
    """A 1 M-character reason that ends like a known one: kept cut, unknown, never hashed whole."""
    for status in (200, 404):
        error = normalize(httpx.Response(status, content=json.dumps(body).encode()))
        assert error is not None
        assert error.reason == ("x." * 500_000)[: MAX_TEXT - 1] + "…"
        assert not isinstance(error.reason, Reason)


def test_a_status_name_longer_than_any_grpc_code_is_none() -> None:
    """A million-character ``status`` names no gRPC code (and is never hashed to find out)."""
    body = {"error": {"code": 400, "status": "NOT_FOUND" * 100_000, "message": "m"}}
    error = normalize(httpx.Response(400, content=json.dumps(body).encode()))
    assert error is not None
    assert error.grpc_status is None


def test_supported_versions_are_read_up_to_the_cap() -> None:
    """A problem body listing a million versions: the first ones that are strings, no more."""
    versions: list[Any] = [1, None, *(f"0.{i}" for i in range(1_000_000))]
    body = {"type": "https://a2a-protocol.org/errors/version-not-supported", "status": 400}
    body["supportedVersions"] = versions
    error = normalize(httpx.Response(400, content=json.dumps(body).encode()))
    assert error is not None
    assert error.reason is Reason.VERSION_NOT_SUPPORTED
    assert error.supported_versions == tuple(f"0.{i}" for i in range(MAX_ITEMS))


def test_a_task_state_is_capped_too() -> None:
    """An unknown state of a million characters comes back as a short one."""
    outcome = task_outcome({"id": "t" * 10_000, "status": {"state": "S" * 1_000_000}})
    assert outcome is not None
    assert len(outcome.state) == MAX_TEXT
    assert outcome.task_id is not None
    assert len(outcome.task_id) == MAX_TEXT


@pytest.mark.parametrize(
    "char", ["\u200f", "\u200e", "\u061c", "\ufeff", "\u200b", "\u2066", "\u202e", "\ud800"]
)
def test_invisible_and_unencodable_characters_are_escaped(char: str) -> None:
    """Marks that reorder text, the BOM, zero-width joiners, lone surrogates: all visible."""
    rendered = escape(f"a{char}b")
    assert char not in rendered
    assert rendered == f"a\\u{ord(char):04x}b"
    rendered.encode("ascii")  # printable anywhere


def test_a_lone_surrogate_never_drops_the_log_line(caplog: pytest.LogCaptureFixture) -> None:
    """A peer cannot suppress its own ERROR line with text no encoder writes."""
    body = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32006, "message": "bad \ud800 answer"}}
    guard = Guard(hooks=[LoggingHook()], sleep=lambda _: None)
    with caplog.at_level(logging.ERROR, logger="a2a_client_errors"), pytest.raises(CallFailed):
        guard.call(lambda: body, operation="GetTask")
    (record,) = caplog.records
    record.getMessage().encode("utf-8")  # would raise with the surrogate left in
    assert "\\ud800" in record.getMessage()


def test_the_cli_escapes_metadata_keys_and_survives_a_lone_surrogate() -> None:
    """A key cannot forge an output line or move the cursor; a surrogate cannot crash it."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {
            "code": -32001,
            "message": "gone \ud800",
            "data": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "TASK_NOT_FOUND",
                    "domain": "a2a-protocol.org",
                    "metadata": {"x\nreason: FORGED\x1b[2J": "v"},
                }
            ],
        },
    }
    out = io.StringIO()
    raw = json.dumps(body).encode()
    code = main(["classify", "-"], out=out, stdin=io.TextIOWrapper(io.BytesIO(raw)))
    text = out.getvalue()
    assert code == 0
    assert "\x1b" not in text
    assert "\nreason: FORGED" not in text
    assert "x\\nreason: FORGED\\x1b[2J" in text
    assert "\\ud800" in text
