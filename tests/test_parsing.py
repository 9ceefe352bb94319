"""One parse per body: `parse_json` picks the parser first, and reads what the two-step parse read.

The two-step parse these tests hold it to is the one it replaced: jiter, and ``json.loads``
again whenever jiter refused. `parse_json` gives the same value, or refuses a body nested past
`MAX_DEPTH` levels that the two-step parse read with ``json``. The counting tests wrap both
parsers and count their calls, for a body read through every path that reads a peer's body.
"""

from __future__ import annotations

import importlib
import json
import math
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic_core import from_json

from a2a_client_errors import _parsing as parsing
from a2a_client_errors import classify, normalize, task_outcome
from a2a_client_errors._http_lookup import HttpLookup
from a2a_client_errors._lookup import GetTaskQuery
from a2a_client_errors._normalize import INVALID, event_error, normalize_body
from a2a_client_errors._parsing import MAX_DEPTH, parse_json
from a2a_client_errors.cli import main
from tests.conftest import error_info, jsonrpc_error, task

# The module, not the function the package exports under the same name.
normalize_module = importlib.import_module("a2a_client_errors._normalize")

PROPERTY = settings(
    deadline=None,
    max_examples=400,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def two_step(raw: bytes) -> object:
    """The parse `parse_json` replaced: jiter, and the standard library when jiter refused."""
    try:
        return from_json(raw)
    except ValueError:
        pass
    try:
        return json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        return INVALID


def same(a: object, b: object) -> bool:
    """Equal values of equal types all the way down (NaN equal to NaN, 1 never equal to 1.0).

    Walked with a stack of its own: the values may nest deeper than Python recurses.
    """
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, float) and isinstance(y, float):
            if not ((math.isnan(x) and math.isnan(y)) or x == y):
                return False
        elif isinstance(x, dict) and isinstance(y, dict):
            if list(x) != list(y):
                return False
            pending.extend((x[key], y[key]) for key in x)
        elif isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y):
                return False
            pending.extend(zip(x, y, strict=True))
        elif x != y:
            return False
    return True


def depth(value: object) -> int:
    """How deep arrays and objects nest in ``value`` (0 for a scalar), with a stack of its own."""
    deepest = 0
    pending = [(value, 1)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, dict):
            deepest = max(deepest, level)
            pending.extend((child, level + 1) for child in item.values())
        elif isinstance(item, list):
            deepest = max(deepest, level)
            pending.extend((child, level + 1) for child in item)
    return deepest


def read_as_before(raw: bytes) -> None:
    """The value of the two-step parse, or (only for a body nested past 200 levels) INVALID."""
    value, before = parse_json(raw), two_step(raw)
    if value is INVALID and before is not INVALID:
        assert depth(before) > MAX_DEPTH, raw[:80]
    else:
        assert same(value, before), raw[:80]


# --- the value: the same as the two-step parse ----------------------------------------------

# Pieces that move a body between the parsers: nesting, escapes of every kind (lone and paired
# surrogates, escaped backslashes before a "u"), long digit runs, bytes that are not UTF-8.
PIECES = [
    b"{",
    b"}",
    b"[",
    b"]",
    b'"',
    b":",
    b",",
    b" ",
    b"1",
    b"0",
    b".5",
    b"e9",
    b"-",
    b"null",
    b"NaN",
    b"Infinity",
    b'"a"',
    b'{"a":',
    b"\\",
    b"\\\\",
    b'\\"',
    b"\\u",
    b"u",
    b"\\ud800",
    b"\\uDBFF",
    b"\\udc00",
    b"\\uDFFF",
    b"\\u0041",
    b"ud800",
    b"d8",
    b"\\n",
    b"\xed\xa0\x80",
    b"\xff",
    b"\xef\xbb\xbf",
    b"\xc3\xa9",
]
token_bodies = st.lists(st.sampled_from(PIECES), max_size=24).map(b"".join)
escape_strings = (
    st.lists(
        st.sampled_from([b"\\\\", b"\\ud800", b"\\udc00", b"\\uDBFF", b"\\uDFFF", b"a", b"ud8"]),
        max_size=8,
    )
    .map(b"".join)
    .map(lambda s: b'["' + s + b'"]')
)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True)
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
    | st.text(alphabet="\ud800\udc00\udbff\udfffa\\", max_size=6),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=20,
)
dumped = st.builds(
    lambda value, ascii_only: json.dumps(value, ensure_ascii=ascii_only).encode(
        "utf-8", "surrogatepass"
    ),
    json_values,
    st.booleans(),
)


def _nest(depth: int, inner: bytes, *, objects: bool, tail: bytes) -> bytes:
    if objects:
        return b'{"a":' * depth + (inner or b"1") + b"}" * depth + tail
    return b"[" * depth + inner + b"]" * depth + tail


nested = st.builds(
    _nest,
    st.sampled_from([1, 100, 199, 200, 201, 202, 250, 400, 990, 1500]),
    st.sampled_from([b"", b"1", b"{}", b"[]", b'"\\ud800"', b'"\\ud83d\\ude00"', b"1" * 4301]),
    objects=st.booleans(),
    tail=st.sampled_from([b"", b" ", b"x", b","]),
)


def _long_number(padding: int, digits: int, suffix: bytes, *, wrap: bool) -> bytes:
    number = b"1" * digits + suffix
    body = b" " * padding + (b"[" + number + b"]" if wrap else number)
    return body + b" " * (padding % 7)


long_numbers = st.builds(
    _long_number,
    st.integers(0, 2 * parsing._DIGIT_BLOCK),
    st.sampled_from([4095, 4299, 4300, 4301, 4302, 6000, 9000]),
    st.sampled_from([b"", b".5", b"e3", b"E-2", b".0e1"]),
    wrap=st.booleans(),
)


@PROPERTY
@given(st.one_of(st.binary(max_size=64), token_bodies, escape_strings, dumped))
@example(b'"\\ud800"')
@example(b'"\\\\ud800\\udc00"')  # an escaped backslash, text, then a lone low half
@example(b'"\\ud800\\\\\\udc00"')  # a high half, an escaped backslash, a low half: both lone
@example(b'"\\ud83d\\ude00"')
@example(b'"\\ud800\\ud800\\udc00"')
@example(b"1" * 5000 + b".0")
def test_parse_json_reads_what_the_two_step_parse_read(raw: bytes) -> None:
    """Any bytes: the same value (or the same refusal) as jiter-then-json, to the type."""
    read_as_before(raw)


@pytest.mark.parametrize(
    "raw",
    [
        b'"\\u00e9t\\u00e9"',
        b'{"taskId": "\\u4efb\\u52a1-1"}',
        b'{"\\r\\u0100": null}',
        b'["\\u00c6\\u007f5~\\u0000", "\\ud83d\\ude00"]',
    ],
)
def test_an_escaped_character_is_the_character(raw: bytes) -> None:
    r"""A ``\u`` escape of a character past ASCII reads as that character, as ``json`` reads it.

    pydantic-core 2.18.1 to 2.18.3 read ``"\u00e9"`` as ``"Ã©"`` (its UTF-8 bytes, each
    taken for a character): the lowest release the package allows is past them.
    """
    assert parse_json(raw) == json.loads(raw)


@settings(deadline=None, max_examples=120)
@given(st.one_of(nested, long_numbers))
def test_deep_bodies_and_long_numbers_read_as_before(raw: bytes) -> None:
    """Around 200 levels and 4300 digits, aligned or not: as before, or refused as too deep."""
    read_as_before(raw)


LARGE = 64 * 1024


@settings(
    deadline=None,
    max_examples=150,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.one_of(token_bodies, escape_strings, dumped, nested, long_numbers),
    st.sampled_from(["spaces before", "a string before", "escapes before", "brackets before"]),
)
def test_large_bodies_read_as_before(raw: bytes, padding: str) -> None:
    """Past 64 KiB, behind a string, escapes or brackets: read as before, or too deep."""
    filler = {
        "spaces before": b" " * LARGE + raw,
        "a string before": b'["' + b"p" * LARGE + b'", ' + raw + b"]",
        "escapes before": b'["' + b"\\n" * (LARGE // 2) + b'", ' + raw + b"]",
        "brackets before": b"[" + b"[], " * (LARGE // 4) + raw + b"]",
    }[padding]
    assert len(filler) >= LARGE
    read_as_before(filler)


@pytest.mark.parametrize(
    "raw",
    [
        b'["' + b"x" * (64 * 1024) + b'", "\\ud800"]',
        b'["\\ud800"]',
        b'{"message": "\\udc00 lone"}',
        b'{"message": "\\ud800\\\\\\udc00"}',  # a high half, an escaped backslash, a low half
        b"[" + b"7" * 5000 + b".5]",
        b" " * 5000 + b"[" + b"7" * 4301 + b"e2]",
    ],
)
def test_bodies_jiter_refuses_are_read_by_the_standard_library(raw: bytes) -> None:
    """A lone surrogate, an integer part past 4300 digits: still JSON, read by ``json`` alone."""
    with pytest.raises(ValueError, match=r"surrogate|hex escape|out of range"):
        from_json(raw)
    assert parse_json(raw) is not INVALID
    assert same(parse_json(raw), json.loads(raw))


@pytest.mark.parametrize(
    "raw",
    [
        b"[" * 202 + b"1" + b"]" * 202,
        b'{"a":' * 201 + b"1" + b"}" * 201,
        b'{"a":' * 300 + b"1" + b"}" * 300,
        b" " * (64 * 1024) + b"[" * 250 + b"]" * 250,
        b'{"message": "\\n\\t ok", "data": ' + b"[" * 250 + b"]" * 250 + b"}",
    ],
)
def test_a_body_nested_past_200_levels_is_not_read(raw: bytes) -> None:
    """Deeper than `MAX_DEPTH`: refused as a body that is not JSON, with one parse."""
    assert json.loads(raw) is not None  # the standard library would read it
    assert parse_json(raw) is INVALID


def test_200_levels_are_read() -> None:
    """At `MAX_DEPTH` levels of objects and of arrays, the body is read."""
    objects = b'{"a":' * MAX_DEPTH + b"1" + b"}" * MAX_DEPTH
    arrays = b"[" * MAX_DEPTH + b"1" + b"]" * MAX_DEPTH
    for raw in (objects, arrays):
        assert depth(parse_json(raw)) == MAX_DEPTH


def test_a_deep_body_json_reads_for_another_reason_is_read_whole() -> None:
    """A lone surrogate sends a body to ``json``, which reads it to its own depth (documented)."""
    raw = b'["\\ud800", ' + b"[" * 300 + b"]" * 300 + b"]"
    assert depth(parse_json(raw)) == 301
    assert same(parse_json(raw), json.loads(raw))


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"{",
        b"[1,2,]",
        b"\xef\xbb\xbf{}",
        b'{"a": "\xff"}',
        b'{"a": "\xed\xa0\x80"}',  # a surrogate encoded as bytes: not UTF-8
        b'{"a": 1} x',
        # Deeper than either reads: json's own limit is the interpreter's (about 1000 levels
        # to Python 3.12, about 10000 from 3.13 on).
        b"[" * 100_000 + b"]" * 100_000,
        b'["\\ud800", ' + b"[" * 100_000 + b"]" * 100_000 + b"]",
        b"1" * 4301,
    ],
)
def test_what_neither_parser_reads_stays_invalid(raw: bytes) -> None:
    """Not JSON, not UTF-8, too deep for both, an integer past the digit limit: INVALID."""
    assert parse_json(raw) is INVALID
    assert two_step(raw) is INVALID


# --- the count: one parse per body ----------------------------------------------------------


class Calls:
    """The parser calls made while it is installed: jiter's and the standard library's."""

    def __init__(self) -> None:
        self.jiter = 0
        self.stdlib = 0

    @property
    def total(self) -> int:
        """Every parse, by either parser."""
        return self.jiter + self.stdlib


@pytest.fixture(name="calls")
def calls_fixture(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """Count the calls of both parsers, wherever a body is parsed."""
    calls = Calls()
    real_jiter, real_scan, real_loads = parsing.from_json, parsing._scan_once, json.loads

    def counting_jiter(data: Any, **kwargs: Any) -> Any:
        calls.jiter += 1
        return real_jiter(data, **kwargs)

    def counting_scan(text: str, at: int) -> Any:
        calls.stdlib += 1
        return real_scan(text, at)

    def counting_loads(text: Any, **kwargs: Any) -> Any:
        calls.stdlib += 1
        return real_loads(text, **kwargs)

    monkeypatch.setattr(parsing, "from_json", counting_jiter)
    monkeypatch.setattr(parsing, "_scan_once", counting_scan)
    monkeypatch.setattr(json, "loads", counting_loads)
    return calls


def _error_body(data: list[Any], *, tail: bytes = b"") -> bytes:
    return json.dumps(jsonrpc_error(-32001, "Task not found", data)).encode() + tail


SMALL_DETAILS = [{"@type": "type.googleapis.com/google.rpc.Help", "n": i} for i in range(20_000)]
DEEP: Any = 1
for _ in range(300):
    DEEP = [DEEP]

BODIES: dict[str, bytes] = {
    "a plain error": _error_body([error_info("TASK_NOT_FOUND", metadata={"taskId": "t-1"})]),
    "a large error with one stray byte at its end": _error_body(SMALL_DETAILS, tail=b"x"),
    "a large error, well formed": _error_body(SMALL_DETAILS),
    "a lone surrogate in the message": json.dumps(
        jsonrpc_error(-32001, "\ud800 gone"), ensure_ascii=True
    ).encode(),
    "a 5000-digit number in the data": _error_body([error_info("TASK_NOT_FOUND")]).replace(
        b'"data": [', b'"data": [' + b"9" * 5000 + b".5, ", 1
    ),
    "a success": json.dumps(
        {"jsonrpc": "2.0", "id": 1, "result": task("TASK_STATE_FAILED")}
    ).encode(),
    "not JSON at all": b"{not json",
    "an error with escapes": _error_body([error_info("TASK_NOT_FOUND")]).replace(
        b"Task not found", b'Task \\"t-1\\" not found\\n' * 8
    ),
}
DEEP_ERROR = _error_body([error_info("TASK_NOT_FOUND"), {"deep": DEEP}])


def _old_normalize(response: httpx.Response, monkeypatch: pytest.MonkeyPatch) -> object:
    """What `normalize` gave before: the same reader, with the two-step parse in."""
    with monkeypatch.context() as patch:
        patch.setattr(normalize_module, "parse_json", two_step)
        return normalize(response)


@pytest.mark.parametrize("name", list(BODIES))
@pytest.mark.parametrize("status", [200, 400])
def test_every_body_is_parsed_once_and_read_as_before(
    name: str, status: int, calls: Calls, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Invalid, deep, surrogate, long-number, plain: one parser call each, the same answer."""
    raw = BODIES[name]
    response = httpx.Response(status, content=raw, headers={"content-type": "application/json"})
    before = _old_normalize(response, monkeypatch)
    calls.jiter = calls.stdlib = 0
    assert normalize(response) == before
    assert calls.total == 1, (calls.jiter, calls.stdlib)
    calls.jiter = calls.stdlib = 0
    decision = classify(response)
    assert decision.error == before
    assert calls.total == 1


@pytest.mark.parametrize("status", [200, 400])
def test_an_error_nested_past_200_levels_is_read_as_not_json(status: int, calls: Calls) -> None:
    """One parse; at 200 the answer is INVALID_AGENT_RESPONSE, at 400 the status alone."""
    response = httpx.Response(status, content=DEEP_ERROR)
    error = normalize(response)
    assert calls.total == 1
    assert error is not None
    if status == 200:
        assert error.reason == "INVALID_AGENT_RESPONSE"
    else:
        assert error.wire == "bare_status"
        assert error.http_status == 400


def test_the_parser_is_chosen_by_the_body(calls: Calls) -> None:
    """Jiter reads a plain body; the standard library alone a lone-surrogate or escaped one."""
    parse_json(BODIES["a plain error"])
    assert (calls.jiter, calls.stdlib) == (1, 0)
    parse_json(DEEP_ERROR)
    assert (calls.jiter, calls.stdlib) == (2, 0)  # refused by jiter, not read again
    parse_json(BODIES["a lone surrogate in the message"])
    assert (calls.jiter, calls.stdlib) == (2, 1)
    parse_json(BODIES["a large error with one stray byte at its end"])
    assert (calls.jiter, calls.stdlib) == (3, 1)
    parse_json(BODIES["a 5000-digit number in the data"])
    assert (calls.jiter, calls.stdlib) == (3, 2)
    parse_json(BODIES["an error with escapes"])  # 24 escapes: past what is looked at
    assert (calls.jiter, calls.stdlib) == (3, 3)
    spread = (
        b'{"message": "a \\"quoted\\" text", "pad": "%s", "e": "\\ud83d\\ude00", "x": "\\\\ud800"}'
    )
    parse_json(spread % (b"p" * 80))
    assert (calls.jiter, calls.stdlib) == (4, 3)  # few escapes, a pair, an escaped backslash
    parse_json(b'{"message": "\\u041d\\u0435\\u0442 \\u0437\\u0430\\u0434\\u0430\\u0447\\u0438"}')
    assert (calls.jiter, calls.stdlib) == (4, 4)  # escapes packed together: json, unread


@pytest.mark.parametrize("name", list(BODIES))
def test_bytes_text_and_sse_events_are_parsed_once(name: str, calls: Calls) -> None:
    """A raw body, the same as text, and one SSE event's data: one parse each."""
    raw = BODIES[name]
    normalize(raw)
    assert calls.total == 1
    normalize(raw.decode("utf-8", "surrogatepass"))
    assert calls.total == 2
    event_error("message", raw.decode("utf-8", "surrogatepass"))
    assert calls.total == 3


def test_normalize_body_gives_the_body_it_read(calls: Calls) -> None:
    """The error and the parsed body from one parse; INVALID when no JSON body was read."""
    body = {"jsonrpc": "2.0", "id": 1, "result": task("TASK_STATE_COMPLETED")}
    response = httpx.Response(200, json=body)
    error, parsed = normalize_body(response)
    assert error is None
    assert parsed == body
    assert calls.total == 1
    assert task_outcome(parsed) is not None  # a dict: no parse
    assert calls.total == 1
    assert normalize_body(httpx.Response(502, text="<html>bad gateway</html>"))[1] is INVALID
    sse = {"content-type": "text/event-stream"}
    assert normalize_body(httpx.Response(200, text="data: {}\n\n", headers=sse)) == (None, INVALID)
    failed = jsonrpc_error(-32001, "gone")
    text = f"data: {json.dumps(task('TASK_STATE_WORKING'))}\n\ndata: {json.dumps(failed)}\n\n"
    calls.jiter = calls.stdlib = 0
    error, parsed = normalize_body(httpx.Response(200, text=text, headers=sse))
    assert error is not None
    assert parsed == failed  # the data of the event that carried the error
    assert calls.total == 2  # one parse per event
    given: dict[str, Any] = {"id": "t-1"}
    assert normalize_body(given)[1] is given
    assert normalize_body(ValueError("x"))[1] is INVALID


def test_a_look_up_reads_its_answer_once(calls: Calls) -> None:
    """GetTask's answer is judged and read from one parse."""
    request = httpx.Request(
        "POST",
        "http://agent.example/a2a",
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendMessage",
            "params": {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": []}},
        },
    )
    lookup = HttpLookup(request, json.loads(request.content))
    calls.jiter = calls.stdlib = 0
    result = {"jsonrpc": "2.0", "id": 2, "result": task("TASK_STATE_WORKING")}
    answer = httpx.Response(200, json=result)
    found = lookup.read(GetTaskQuery("task-123"), answer)
    assert found is not None
    assert found["id"] == "task-123"
    assert calls.total == 1


def test_the_cli_reads_a_capture_once(
    calls: Calls, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """``a2a-errors classify`` on a successful answer: the decision and the task, one parse."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": task("TASK_STATE_FAILED")})
    path = tmp_path / "capture.http"
    path.write_text(f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{body}")
    calls.jiter = calls.stdlib = 0
    assert main(["classify", str(path)]) == 0
    assert "TASK_STATE_FAILED" in capsys.readouterr().out
    assert calls.total == 1


def test_a_task_outcome_reads_what_normalize_reads() -> None:
    """A task 250 levels deep in its metadata is not read, by either; 150 levels deep is."""
    for levels, read in ((150, True), (250, False)):
        deep: Any = "x"
        for _ in range(levels):
            deep = {"k": deep}
        body = {**task("TASK_STATE_REJECTED"), "metadata": deep}
        response = httpx.Response(200, content=json.dumps(body).encode())
        error = normalize(response)
        outcome = task_outcome(response)
        if read:
            assert error is None
            assert outcome is not None
            assert outcome.state == "TASK_STATE_REJECTED"
        else:
            assert error is not None
            assert error.reason == "INVALID_AGENT_RESPONSE"
            assert outcome is None


def test_the_escape_scan_stays_short_and_errs_towards_the_standard_library() -> None:
    """Many escapes, or a lone surrogate however it is written: json reads it, the same value."""
    many_pairs = b'["' + b"\\ud83d\\ude00" * 100 + b'"]'
    many_newlines = b'["' + b"line\\n" * 10_000 + b'"]'
    long_run = b'["' + b"\\\\" * 40 + b"\\ud800" + b'"]'
    lone_at_the_end = b'["\\n", "' + b"p" * 100_000 + b'\\ud800"]'
    for raw in (many_pairs, many_newlines, long_run, lone_at_the_end):
        assert parsing._escapes_for_json(raw)
        assert same(parse_json(raw), two_step(raw))
    # A few escapes, spread over a large body: looked at one by one, and jiter reads it.
    sparse = b'["' + (b"p" * 5000 + b"\\n") * 20 + b'"]'
    assert not parsing._escapes_for_json(sparse)
    assert not parsing._escapes_for_json(b'["\\ud83d\\ude00", "\\\\ud800"]')
    assert parsing._escapes_for_json(b'["\\ud83d\\ude00", "\\\\\\ud800"]')
    assert parsing._escapes_for_json(b'["a\\')  # a backslash at the very end
    assert repr(INVALID) == "INVALID"


stdlib_bodies = st.one_of(
    st.binary(max_size=48),
    token_bodies,
    st.builds(
        lambda before, body, after: before + body + after,
        st.sampled_from([b"", b" ", b"\t\n", b"\xef\xbb\xbf", b"\x0c"]),
        dumped,
        st.sampled_from([b"", b" ", b"\r\n", b" x", b"]", b"\x00"]),
    ),
)


@PROPERTY
@given(stdlib_bodies)
@example(b"")
@example(b" ")
@example(b"\xef\xbb\xbf{}")
@example(b"[1] [2]")
@example(b"NaN")
def test_the_standard_library_path_is_json_loads(raw: bytes) -> None:
    """`_json_loads` gives what ``json.loads(raw.decode("utf-8"))`` gives, or INVALID."""
    try:
        expected: object = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        expected = INVALID
    assert same(parsing._json_loads(raw), expected)


def test_a_reader_that_raises_still_gives_an_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """A body that defeats the reader: classify reports it, normalize_body keeps no body."""

    def trap(*_: object) -> None:
        raise RuntimeError

    monkeypatch.setattr(normalize_module, "_from_body", trap)
    response = httpx.Response(200, json=jsonrpc_error(-32001, "m"))
    decision = classify(response)
    assert decision.action == "report"
    assert decision.error is not None
    assert decision.error.message == "unreadable input (RuntimeError)"
    assert normalize_body(response) == (decision.error, INVALID)
