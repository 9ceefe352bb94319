"""Properties: normalize and classify never raise, are deterministic, and read the reason first."""

from __future__ import annotations

import itertools
import json
import math
import socket
import ssl
from typing import Any

import grpc
import httpx
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from a2a_client_errors import Action, CallError, Decision, Reason, classify, normalize
from a2a_client_errors._card_claims import (
    CardClaims,
    asks_for_push,
    card_interfaces,
    keys_of,
    read_against_card,
    read_card_claims,
)
from a2a_client_errors._normalize import NotSentError, StreamHead
from a2a_client_errors._reasons import A2A_OPERATIONS, ROWS, Delivery
from a2a_client_errors.types import DEFAULT_LIMITS, Source
from tests.conftest import (
    A2A_DOMAIN,
    BAD_REQUEST,
    DEBUG_INFO,
    ERROR_INFO,
    RETRY_INFO,
    jsonrpc_error,
    rpc_error,
    status_body,
)

PROPERTY = settings(
    deadline=None,
    max_examples=150,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FEW = settings(
    deadline=None,
    max_examples=40,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

KEYS = [
    "error",
    "data",
    "details",
    "code",
    "message",
    "status",
    "@type",
    "reason",
    "domain",
    "metadata",
    "jsonrpc",
    "id",
    "result",
    "type",
    "title",
    "detail",
    "errors",
    "supportedVersions",
    "retryDelay",
    "fieldViolations",
]
TYPE_URLS = [ERROR_INFO, BAD_REQUEST, RETRY_INFO, DEBUG_INFO, "type.googleapis.com/x.Y", ""]
GRPC_NAMES = [code.name for code in grpc.StatusCode]
NON_AUTH_GRPC = [n for n in GRPC_NAMES if n not in ("UNAUTHENTICATED", "PERMISSION_DENIED")]

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | st.sampled_from(["TASK_NOT_FOUND", A2A_DOMAIN, "1.5s", "2.0", "-32001", ERROR_INFO])
)
keys = st.sampled_from(KEYS) | st.text(max_size=6)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=5),
    max_leaves=25,
)

details = st.fixed_dictionaries(
    {"@type": st.sampled_from(TYPE_URLS) | json_values},
    optional={
        "reason": st.sampled_from([r.value for r in Reason]) | json_values,
        "domain": st.sampled_from([A2A_DOMAIN, "googleapis.com"]) | json_values,
        "metadata": st.dictionaries(st.text(max_size=5), json_values, max_size=4) | json_values,
        "retryDelay": st.sampled_from(["1.5s", "-1s", "1e999s", "x"]) | json_values,
        "fieldViolations": json_values,
        "stackEntries": json_values,
    },
)
codes = st.sampled_from([-32001, -32009, -32603, -32700, -31401, 404, 0]) | json_values
error_objects = st.fixed_dictionaries(
    {},
    optional={
        "code": codes,
        "message": json_values,
        "data": st.lists(details | json_values, max_size=4) | details | json_values,
        "status": st.sampled_from(GRPC_NAMES) | json_values,
        "details": st.lists(details | json_values, max_size=4) | json_values,
    },
)
envelopes = st.one_of(
    st.fixed_dictionaries(
        {"jsonrpc": st.just("2.0"), "id": json_values},
        optional={"error": error_objects | json_values, "result": json_values},
    ),
    st.fixed_dictionaries({"error": error_objects | json_values}),
    st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(
                ["https://a2a-protocol.org/errors/task-not-found", "TaskNotFoundError"]
            )
            | json_values,
            "status": json_values,
            "title": json_values,
            "detail": json_values,
            "errors": json_values,
            "supportedVersions": json_values,
        },
    ),
    error_objects,
)
statuses = st.integers(min_value=100, max_value=599)
content_types = st.sampled_from(
    [
        "application/json",
        "application/a2a+json",
        "application/problem+json",
        "text/event-stream",
        "text/html",
        "",
    ]
)
header_values = st.binary(max_size=40) | st.text(
    st.characters(max_codepoint=255, exclude_categories=["Cs"]), max_size=40
).map(lambda s: s.encode("latin-1"))


def _check(found: object) -> None:
    """Invariants of any normalize result."""
    assert found is None or isinstance(found, CallError)
    if isinstance(found, CallError):
        pairs: list[tuple[object, object]] = list(found.metadata.items())
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in pairs)
        assert len(found.message) <= DEFAULT_LIMITS.max_message + 1
        # Finite seconds; infinity only from gRPC, whose pushback can say "do not retry".
        assert found.retry_after is None or (
            found.retry_after >= 0
            and (math.isfinite(found.retry_after) or found.grpc_status is not None)
        )
        assert isinstance(str(found), str)
        assert isinstance(found.delivery, Delivery)
        assert found.to_dict()["delivery"] == found.delivery.value


def _check_all(x: object) -> None:
    found = normalize(x)
    _check(found)
    decision = classify(x)
    assert isinstance(decision, Decision)
    assert isinstance(decision.action, Action)
    assert (decision.action is Action.OK) == (found is None)
    assert decision.delivery is (None if found is None else found.delivery)


# --- never raises ------------------------------------------------------------------------------


@PROPERTY
@given(json_values)
def test_any_json_value(value: Any) -> None:
    """Any JSON value is normalised and classified without raising."""
    _check_all(value)


@PROPERTY
@given(envelopes)
def test_any_error_envelope(body: dict[str, Any]) -> None:
    """Envelopes with error, data and details of wrong types everywhere never raise."""
    _check_all(body)


@PROPERTY
@given(statuses, st.binary(max_size=300), content_types)
def test_any_bytes_body(status: int, content: bytes, content_type: str) -> None:
    """Arbitrary bytes with any status and content type never raise."""
    headers = {"content-type": content_type} if content_type else {}
    _check_all(httpx.Response(status, content=content, headers=headers))
    _check_all(content)


@PROPERTY
@given(statuses, envelopes, content_types)
def test_any_envelope_in_a_response(status: int, body: dict[str, Any], content_type: str) -> None:
    """Any envelope, serialised on any status, never raises."""
    content = json.dumps(body).encode()
    _check_all(httpx.Response(status, content=content, headers={"content-type": content_type}))


@PROPERTY
@given(
    statuses,
    st.dictionaries(
        st.sampled_from([b"retry-after", b"retry-after-ms", b"date", b"content-type"]),
        header_values,
    ),
)
def test_any_retry_after_header(status: int, headers: dict[bytes, bytes]) -> None:
    """Any Retry-After, retry-after-ms or Date value gives a finite hint or none."""
    response = httpx.Response(status, headers=headers)
    _check_all(response)
    found = normalize(response)
    if found is not None and found.retry_after is not None:
        assert math.isfinite(found.retry_after)
        assert found.retry_after >= 0


hint_headers = st.dictionaries(
    st.sampled_from([b"retry-after", b"retry-after-ms", b"date"]),
    header_values | st.sampled_from([b"1", b"0", b"250", b"Sun, 09 Nov 2025 10:30:05 GMT"]),
)
A2A_SOURCES = (Source.ERROR_INFO, Source.JSONRPC_CODE, Source.PROBLEM_TYPE, Source.LEGACY_BODY)


@PROPERTY
@given(st.sampled_from([500, 502, 504, 507, 520, 599]), envelopes, content_types, hint_headers)
def test_no_hint_or_body_makes_a_late_5xx_not_processed(
    status: int, body: dict[str, Any], content_type: str, hints: dict[bytes, bytes]
) -> None:
    """500, 502, 504, ... with any body and hint: not processed only by an A2A reason."""
    headers = {b"content-type": content_type.encode(), **hints}
    response = httpx.Response(status, content=json.dumps(body).encode(), headers=headers)
    found = normalize(response)
    _check_all(response)
    assert found is not None
    if found.delivery is not Delivery.UNKNOWN:
        assert found.delivery is Delivery.NOT_PROCESSED
        assert isinstance(found.reason, Reason)
        assert found.source in A2A_SOURCES


@PROPERTY
@given(st.binary(max_size=200), st.sampled_from(["text/html", "text/plain", ""]), hint_headers)
def test_a_503_page_is_not_processed_exactly_when_it_carries_a_hint(
    content: bytes, content_type: str, hints: dict[bytes, bytes]
) -> None:
    """A 503 with no body of the server's (a page, bytes, nothing): refused iff it has a hint."""
    headers = {b"content-type": content_type.encode(), **hints} if content_type else hints
    response = httpx.Response(503, content=b"<" + content, headers=headers)
    found = normalize(response)
    _check_all(response)
    assert found is not None
    expected = Delivery.UNKNOWN if found.retry_after is None else Delivery.NOT_PROCESSED
    assert found.delivery is expected


@PROPERTY
@given(st.sampled_from(list(grpc.StatusCode)), st.binary(max_size=200), header_values)
def test_corrupt_grpc_trailer(code: grpc.StatusCode, trailer: bytes, pushback: bytes) -> None:
    """Arbitrary trailer bytes and pushback values never raise; the code is always kept."""
    exc = rpc_error(code, "x", trailer=trailer, pushback_ms=pushback.decode("latin-1"))
    found = normalize(exc)
    _check_all(exc)
    if code is grpc.StatusCode.OK:
        assert found is None
    else:
        assert found is not None
        assert found.grpc_status == code.name


@PROPERTY
@given(st.binary(min_size=1, max_size=200).filter(lambda b: not _is_utf8(b)))
def test_non_utf8_success_body_is_invalid_agent_response(content: bytes) -> None:
    """A 200 whose body is not UTF-8 is INVALID_AGENT_RESPONSE, on any content type."""
    for content_type in ("application/json", "text/event-stream", "text/plain"):
        response = httpx.Response(200, content=content, headers={"content-type": content_type})
        found = normalize(response)
        assert found is not None
        assert found.reason is Reason.INVALID_AGENT_RESPONSE
        assert classify(response).action is Action.REPORT


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@pytest.mark.a2a_sdk("1")
@FEW
@given(st.dictionaries(st.text(max_size=5), json_values | st.floats(), max_size=6))
def test_sdk_exception_data_becomes_str_metadata(data: dict[str, Any]) -> None:
    """Whatever data an a2a-sdk error carries, its metadata is str -> str."""
    from a2a.utils.errors import TaskNotFoundError

    _check_all(TaskNotFoundError("x", data=data))


# --- hostile sizes -------------------------------------------------------------------------

DEEP = 100_000


@pytest.mark.parametrize(
    "text",
    [
        "[" * DEEP,
        "[" * DEEP + "]" * DEEP,
        '{"error":' * DEEP + "1" + "}" * DEEP,
        '{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"data":' + "[" * DEEP + "]" * DEEP + "}}",
    ],
    ids=["open", "balanced", "objects", "in-data"],
)
def test_deep_nesting(text: str) -> None:
    """100k-deep nesting in a body, raw or in a response of any kind, never raises."""
    raw = text.encode()
    _check_all(text)
    _check_all(raw)
    for status in (200, 400, 500):
        for content_type in ("application/json", "text/event-stream"):
            body = b"data: " + raw + b"\n\n" if content_type == "text/event-stream" else raw
            _check_all(httpx.Response(status, content=body, headers={"content-type": content_type}))


def test_deep_python_objects() -> None:
    """100k-deep Python lists and dicts given directly never raise."""
    deep_list: Any = []
    deep_dict: Any = {}
    for _ in range(DEEP):
        deep_list = [deep_list]
        deep_dict = {"error": deep_dict, "data": [deep_dict], "details": [deep_dict]}
    _check_all(deep_list)
    _check_all(deep_dict)
    _check_all(jsonrpc_error(-32001, "x", [{"@type": ERROR_INFO, "metadata": deep_dict}]))


@pytest.mark.parametrize(
    "make",
    [
        lambda m: jsonrpc_error(-32001, m),
        lambda m: status_body(404, "NOT_FOUND", m),
        lambda m: {"type": "https://a2a-protocol.org/errors/task-not-found", "detail": m},
    ],
    ids=["jsonrpc", "status-json", "problem"],
)
def test_huge_message_is_capped(make: Any) -> None:
    """A 20 MB message is kept to Limits.max_message characters plus the cut mark."""
    message = "\x1b" + "m" * (20 * 1024 * 1024)
    body = make(message)
    for x in (body, httpx.Response(404, content=json.dumps(body).encode())):
        found = normalize(x)
        assert found is not None
        assert len(found.message) == DEFAULT_LIMITS.max_message + 1
        assert found.message.startswith("\x1bmmm")
        assert message.startswith(found.message[:-1])
        assert len(str(found)) < DEFAULT_LIMITS.max_message * 2


def test_huge_detail_text_is_capped() -> None:
    """Text in an unknown detail is capped like the message."""
    body = jsonrpc_error(
        -32001, "x", [{"@type": "type.googleapis.com/x.Y", "blob": "b" * 5_000_000}]
    )
    found = normalize(body)
    assert found is not None
    assert all(len(json.dumps(d.model_dump())) < 100_000 for d in found.details)


# --- read against the operation it answers ----------------------------------------------------

operations = st.sampled_from([*sorted(A2A_OPERATIONS), "tasks/get", "SomethingElse"])


@PROPERTY
@given(envelopes | json_values, statuses, operations)
def test_any_body_read_against_any_operation(body: Any, status: int, operation: str) -> None:
    """With an operation too, any body and any status never raise; the decision agrees."""
    content = json.dumps(body).encode()
    for x in (body, content, httpx.Response(status, content=content)):
        found = normalize(x, operation=operation)
        _check(found)
        decision = classify(x, operation=operation)
        assert (decision.action is Action.OK) == (found is None)


@PROPERTY
@given(envelopes | json_values, operations)
def test_a_success_body_is_judged_alike_parsed_or_in_a_response(body: Any, operation: str) -> None:
    """A 200 that holds no error is the operation's answer, or not, in either form."""
    response = httpx.Response(200, content=json.dumps(body).encode(), headers=JSON_TYPE)
    # An error (or no body at all) is read as such, whatever the operation.
    assume(body is not None and normalize(body) is None and normalize(response) is None)
    parsed = normalize(body, operation=operation)
    read = normalize(response, operation=operation)
    assert (parsed is None) == (read is None)
    if read is not None:
        assert read.reason is Reason.INVALID_AGENT_RESPONSE


JSON_TYPE = {"content-type": "application/json"}


# --- deterministic ----------------------------------------------------------------------------


@PROPERTY
@given(envelopes | json_values, statuses)
def test_deterministic(body: Any, status: int) -> None:
    """The same input gives an equal result twice, as a body and as a response."""
    assert normalize(body) == normalize(body)
    assert classify(body) == classify(body)
    content = json.dumps(body).encode()
    first = httpx.Response(status, content=content)
    second = httpx.Response(status, content=content)
    assert normalize(first) == normalize(second)
    assert classify(first) == classify(second)


# --- reason first ------------------------------------------------------------------------------

SPELLINGS: list[tuple[str, Reason]] = [
    (spelling, row.reason)
    for row in ROWS
    for spelling in (row.reason.value, *row.aliases, row.error, row.reason.value.lower())
]

other_details = (details | st.dictionaries(keys, json_values, max_size=4)).filter(
    lambda d: d.get("domain") != A2A_DOMAIN
)
non_auth_codes = st.one_of(
    st.sampled_from([row.jsonrpc for row in ROWS if row.jsonrpc is not None]),
    st.integers(min_value=-33000, max_value=-1),
).filter(lambda c: c not in (-31401, -31403))


@st.composite
def bodies_with_error_info(draw: st.DrawFn) -> tuple[dict[str, Any], int, Reason]:
    """A JSON-RPC or Status body with an A2A ErrorInfo among arbitrary other details."""
    sent, reason = draw(st.sampled_from(SPELLINGS))
    metadata = draw(st.dictionaries(st.text(max_size=5), json_values, max_size=4))
    info = {"@type": ERROR_INFO, "reason": sent, "domain": A2A_DOMAIN, "metadata": metadata}
    before = draw(st.lists(other_details, max_size=3))
    after = draw(st.lists(other_details, max_size=3))
    listed = [*before, info, *after]
    status = draw(statuses.filter(lambda s: s not in (401, 403)))
    message = draw(st.text(max_size=30))
    if draw(st.booleans()):
        body = jsonrpc_error(draw(non_auth_codes), message, listed)
    else:
        grpc_name = draw(st.sampled_from(NON_AUTH_GRPC))
        body = {
            "error": {"code": status, "status": grpc_name, "message": message, "details": listed}
        }
    return body, status, reason


@PROPERTY
@given(bodies_with_error_info())
def test_error_info_reason_comes_first(case: tuple[dict[str, Any], int, Reason]) -> None:
    """An A2A ErrorInfo anywhere in the details names the reason, whatever else is sent."""
    body, status, reason = case
    response = httpx.Response(
        status, content=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    for x in (body, response):
        found = normalize(x)
        assert found is not None
        assert found.reason is reason
        assert found.source is Source.ERROR_INFO
        assert found.domain == A2A_DOMAIN
        assert all(isinstance(v, str) for v in found.metadata.values())
        assert classify(x).reason is reason


# --- delivery: any chain of exceptions -----------------------------------------------------------

NOT_SENT_TYPES = (
    NotSentError,
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.ProxyError,
    httpx.UnsupportedProtocol,
    httpx.InvalidURL,
    httpx.LocalProtocolError,
    ConnectionRefusedError,
    socket.gaierror,
    ssl.SSLCertVerificationError,
)
EXCEPTIONS = [
    *(lambda t=t: t("x") for t in NOT_SENT_TYPES),
    lambda: httpx.ReadError("x"),
    lambda: httpx.WriteError("x"),
    lambda: httpx.ReadTimeout("x"),
    lambda: httpx.RemoteProtocolError("x"),
    lambda: httpx.DecodingError("x"),
    lambda: ConnectionResetError("x"),
    lambda: ssl.SSLError("x"),
    lambda: TimeoutError("x"),
    lambda: RuntimeError("x"),
    lambda: ValueError("x"),
]


@st.composite
def exception_chains(draw: st.DrawFn) -> BaseException:
    """An exception whose causes and contexts are other exceptions, in any order."""
    links = [draw(st.sampled_from(EXCEPTIONS))() for _ in range(draw(st.integers(1, 5)))]
    for outer, inner in itertools.pairwise(links):
        if draw(st.booleans()):
            outer.__cause__ = inner
        else:
            outer.__context__ = inner
    return links[0]


def _causes(exc: BaseException | None) -> list[BaseException]:
    found = []
    while exc is not None:
        found.append(exc)
        exc = exc.__cause__
    return found


@PROPERTY
@given(exception_chains())
def test_any_exception_chain_has_a_delivery(exc: BaseException) -> None:
    """Any chain of exceptions: never raises, and not sent only when a cause proves it."""
    found = normalize(exc)
    _check_all(exc)
    assert found is not None
    proven = any(isinstance(link, NOT_SENT_TYPES) for link in _causes(exc))
    assert (found.delivery is Delivery.NOT_SENT) == proven
    assert found.delivery in (Delivery.NOT_SENT, Delivery.UNKNOWN)


sse_lines = st.lists(
    st.sampled_from([b": keep-alive", b"retry: 10", b"id: 1", b"event: error", b"", b"data:"])
    | st.binary(max_size=40).map(lambda b: b"data: " + b),
    max_size=8,
)


@given(sse_lines, st.integers(min_value=1, max_value=16), st.sampled_from([200, 503]))
def test_any_event_stream_and_its_head(lines: list[bytes], size: int, status: int) -> None:
    """Any stream body: a decision, never a raise; with no event with data, never ok.

    The head reader (`StreamHead`, fed any chunking of it) never raises either, and says a
    result at most once (its first event).
    """
    body = b"\n".join(lines) + b"\n\n"
    response = httpx.Response(status, headers={"content-type": "text/event-stream"}, content=body)
    decision = classify(response)
    if status == 200 and b"data:" not in body:
        assert decision.action is Action.REPORT
    head = StreamHead()
    said = [head(body[i : i + size]) for i in range(0, len(body), size)]
    assert said.count(True) <= 1


CARD_KEYS = [
    "capabilities",
    "streaming",
    "pushNotifications",
    "extendedAgentCard",
    "supportsAuthenticatedExtendedCard",
    "url",
    "supportedInterfaces",
    "additionalInterfaces",
    "params",
    "configuration",
    "pushNotificationConfig",
    "method",
]
card_values = st.recursive(
    scalars | st.sampled_from(["http://h:1/a", "https://[::1]:x/", "grpc:1"]),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(CARD_KEYS) | keys, children, max_size=5)
    ),
    max_leaves=25,
)


@PROPERTY
@given(card_values, st.sampled_from([*sorted(A2A_OPERATIONS), None]), st.booleans())
def test_any_json_read_as_a_card_never_raises(
    card: Any, operation: str | None, asks_push: bool
) -> None:
    """Any JSON as a card, a send's body or a URL: an answer, never a raise.

    What is read is well typed, and an error read against it keeps everything but its reason
    and source; only an internal error changes, and only to the card's reason.
    """
    claims = read_card_claims(card)
    assert claims is None or isinstance(claims, CardClaims)
    urls = card_interfaces(card)
    assert all(isinstance(u, str) and u for u in urls)
    assert len(urls) <= 16
    assert isinstance(asks_for_push(card), bool)
    for url in urls:
        assert all(isinstance(key, str) for key in keys_of(url))
    error = normalize({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "x"}})
    assert error is not None
    read = read_against_card(error, claims, operation, asks_push=asks_push)
    if read is not error:
        assert read.source is Source.AGENT_CARD
        assert read.reason in (Reason.PUSH_NOTIFICATION_NOT_SUPPORTED, Reason.UNSUPPORTED_OPERATION)
        assert (read.delivery, read.jsonrpc_code) == (error.delivery, error.jsonrpc_code)
