"""A 2xx body's envelope stands for it: `classify` of a success builds none of its values.

`from_response` reads a large 2xx body's envelope (`_parsing.envelope`: ``error``, ``jsonrpc``,
``id``, ``message``, ``result``) in place of the body, when nothing else of it is kept (no
operation, no parsed body asked back). These tests hold it to the whole parse: the same
record, or None, for every body, whatever it holds; the whole parse is what the same call
makes when the caller asks for the parsed body back (``keep``).
"""

from __future__ import annotations

import importlib
import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from a2a_client_errors import Action, classify
from a2a_client_errors._normalize import DEFAULT_LIMITS, from_response
from a2a_client_errors._parsing import ENVELOPE_MEMBERS, envelope, parse_json
from tests.test_properties import envelopes, json_values

normalize_module = importlib.import_module("a2a_client_errors._normalize")

PADDING = "x" * 600  # past the size from which an envelope is read


def _response(status: int, content: bytes) -> httpx.Response:
    return httpx.Response(status, content=content, headers={"content-type": "application/json"})


def _both(status: int, content: bytes) -> tuple[object, object]:
    """What `from_response` makes of the body through its envelope, and parsed whole."""
    by_envelope = from_response(_response(status, content), DEFAULT_LIMITS)
    whole = from_response(_response(status, content), DEFAULT_LIMITS, keep=[])
    return by_envelope, whole


def _same(status: int, content: bytes) -> None:
    by_envelope, whole = _both(status, content)
    assert repr(by_envelope) == repr(whole)
    if by_envelope is not None:
        assert by_envelope.to_dict() == whole.to_dict()  # type: ignore[attr-defined]


def _body(members: dict[str, Any], padding_first: bool, late: dict[str, Any]) -> dict[str, Any]:
    """``members``, a long member before or after them, and ``late`` members after it all."""
    padding = {"padding": PADDING}
    body = {**padding, **members} if padding_first else {**members, **padding}
    return {**body, **late}


@settings(
    deadline=None,
    max_examples=600,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    envelopes | st.dictionaries(st.sampled_from(ENVELOPE_MEMBERS), json_values, max_size=5),
    st.booleans(),
    st.dictionaries(st.sampled_from(["error", "result", "jsonrpc", "id"]), json_values, max_size=2),
    st.sampled_from([200, 201, 202, 299]),
    st.booleans(),
)
@example({"jsonrpc": "2.0", "id": 1, "error": {"code": -32001}}, True, {}, 200, False)
@example({"jsonrpc": "2.0", "id": 1}, True, {"error": {"code": -32001}}, 200, False)
@example({"error": "TaskNotFoundError", "message": "gone"}, True, {}, 200, False)
@example({"type": "https://a2a-protocol.org/errors/task-not-found"}, False, {}, 200, False)
@example({"code": 5, "message": "not found", "details": []}, False, {}, 200, False)
@example({"jsonrpc": "2.0", "result": None}, True, {}, 200, True)
def test_the_envelope_tells_what_the_whole_body_tells(
    members: dict[str, Any],
    padding_first: bool,
    late: dict[str, Any],
    status: int,
    ascii_only: bool,
) -> None:
    """Any 2xx body, its error first or last, said through its envelope as parsed whole."""
    content = json.dumps(_body(members, padding_first, late), ensure_ascii=ascii_only).encode()
    _same(status, content)


def _padded(head: bytes, tail: bytes = b"}") -> bytes:
    """``head``, a long member, then ``tail``: a body past the size its envelope is read from."""
    return head + b'"p": "' + PADDING.encode() + b'"' + tail


RAW_BODIES = {
    "deep": _padded(b'{"result": {"a": ' + b"[" * 250 + b"]" * 250 + b"}, "),
    "deep but within": _padded(b'{"result": ' + b"[" * 199 + b"]" * 199 + b", "),
    "lone surrogate": _padded(b'{"result": {"a": "\\ud800"}, '),
    "nan": _padded(b'{"result": {"a": NaN, "b": -Infinity}, '),
    "invalid utf-8": _padded(b'{"result": {"a": "\xff"}, '),
    "long number": b'{"result": {"a": ' + b"9" * 5000 + b".5}}",
    "long integer": b'{"result": {"a": ' + b"9" * 5000 + b"}}",
    "escaped error key": _padded(b"{", b', "\\u0065rror": {"code": 404}}'),
    "late error": _padded(
        b'{"jsonrpc": "2.0", ', b', "id": 1, "error": {"code": -32001, "message": "gone"}}'
    ),
    "late null result beside an error": _padded(
        b'{"jsonrpc": "2.0", ', b', "error": {"code": -32603}, "result": null}'
    ),
    "duplicate result": _padded(b'{"jsonrpc": "2.0", "result": {}, "result": null, '),
    "error a number": _padded(b"{", b', "error": 3, "code": 5, "message": "m"}'),
    "jsonrpc without result": _padded(b'{"jsonrpc": "2.0", "id": 1, '),
    "trailing data": _padded(b'{"result": {}, ', b"} x"),
    "trailing whitespace": _padded(b'{"result": {}, ', b"} \r\n\t"),
    "byte order mark": _padded(b'\xef\xbb\xbf{"result": {}, '),
    "a batch": b'[{"jsonrpc": "2.0", "id": 1, "result": {}}, "' + PADDING.encode() + b'"]',
    "leading space": _padded(b' {"result": {}, '),
    "truncated": b'{"result": {"a": "' + PADDING.encode(),
}


@pytest.mark.parametrize("content", RAW_BODIES.values(), ids=RAW_BODIES.keys())
@pytest.mark.parametrize("status", [200, 202])
def test_edge_bodies_are_told_as_parsed_whole(status: int, content: bytes) -> None:
    """Bodies at the parsers' edges: said through the envelope as the whole parse says them."""
    assert len(content) >= 512
    _same(status, content)


def test_the_envelope_keeps_its_members_only() -> None:
    """An object result is kept as ``{}``; other members are dropped; a null result is kept."""
    raw = b'{"jsonrpc": "2.0", "id": 7, "result": {"task": {"id": "t"}}, "other": [1, 2]}'
    assert envelope(raw) == {"jsonrpc": "2.0", "id": 7, "result": {}}
    assert envelope(b'{"result": null, "message": "m"}') == {"result": None, "message": "m"}
    assert envelope(b'{"result": [1]}') == {"result": [1]}
    assert envelope(b"[1]") is None
    assert envelope(b'{"a": "\\ud800"}') is None  # json reads it, not jiter: parse it whole
    assert parse_json(b'{"a": "\\ud800"}') == {"a": "\ud800"}


def _success(state: str) -> httpx.Response:
    task = {
        "id": "task-1",
        "contextId": "ctx-1",
        "status": {"state": state},
        "artifacts": [{"artifactId": "a-1", "parts": [{"text": PADDING}]}],
    }
    body = {"jsonrpc": "2.0", "id": 1, "result": {"task": task}}
    return _response(200, json.dumps(body).encode())


def test_a_large_success_is_classified_without_being_parsed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A task in any state, FAILED included, is a result: its body is never parsed whole."""

    def refuse(raw: bytes) -> object:
        raise AssertionError("parsed whole")

    monkeypatch.setattr(normalize_module, "parse_json", refuse)
    assert classify(_success("TASK_STATE_FAILED")).action is Action.OK
    assert classify(_success("TASK_STATE_COMPLETED")).action is Action.OK


def test_an_error_whose_head_names_it_is_parsed_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """A JSON-RPC error on 200 names ``error`` in its head: parsed whole, never read twice."""
    parsed: list[bytes] = []

    def count(raw: bytes) -> object:
        parsed.append(raw)
        return parse_json(raw)

    def refuse(raw: bytes) -> object:
        raise AssertionError("envelope read")

    monkeypatch.setattr(normalize_module, "parse_json", count)
    monkeypatch.setattr(normalize_module, "envelope", refuse)
    body = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": PADDING}}
    decision = classify(_response(200, json.dumps(body).encode()))
    assert decision.action is Action.RECONCILE
    assert len(parsed) == 1


@pytest.mark.parametrize("name", ["truncated", "trailing data", "deep", "invalid utf-8"])
def test_a_large_success_that_is_not_json_is_read_once(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not JSON to the parser: said by the envelope's read alone, as the whole parse says it."""
    content = RAW_BODIES[name]
    whole = from_response(_response(200, content), DEFAULT_LIMITS, keep=[])
    assert whole is not None

    def refuse(raw: bytes) -> object:
        raise AssertionError("parsed whole")

    monkeypatch.setattr(normalize_module, "parse_json", refuse)
    by_envelope = from_response(_response(200, content), DEFAULT_LIMITS)
    assert repr(by_envelope) == repr(whole)
