"""a2a-sdk 0.3 client exceptions, as fakes of their shape: classify reads what they kept.

These run under either a2a-sdk line (the fakes stand for 0.3's classes by module and name);
``tests/sdk03/test_classify03.py`` feeds the real ones.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from a2a_client_errors import Action, Reason, classify, normalize
from a2a_client_errors.types import Source, WireShape
from tests.conftest import A2A_DOMAIN, ERROR_INFO, NINE, NINE_ACTIONS


@dataclass
class _ErrorObject:
    """The shape of a2a-sdk 0.3's JSON-RPC error models: code, message, data."""

    code: Any
    message: Any = "the peer's words"
    data: Any = None


class A2AClientJSONRPCError(Exception):
    """The shape of a2a-sdk 0.3's exception: the answer's error object in ``.error``."""

    __module__ = "a2a.client.errors"

    def __init__(self, error: Any) -> None:
        super().__init__(f"JSON-RPC Error {error}")
        self.error = error


def _named(name: str) -> type[Exception]:
    """A 0.3 client exception class of that name, with a ``message``."""

    def init(self: Any, message: str) -> None:
        Exception.__init__(self, message)
        self.message = message

    return type(name, (Exception,), {"__module__": "a2a.client.errors", "__init__": init})


def _body(code: Any, message: Any = "the peer's words", data: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": message, "data": data}}


@pytest.mark.parametrize(("reason", "code"), [(row[0], row[1]) for row in NINE])
def test_the_code_an_a2a_client_jsonrpc_error_kept_names_the_reason(reason: str, code: int) -> None:
    """-32001..-32009 give their reason and its action, read as the JSON-RPC code."""
    decision = classify(A2AClientJSONRPCError(_ErrorObject(code)))
    assert decision.reason == reason
    assert decision.action == NINE_ACTIONS[reason]
    assert decision.error is not None
    assert decision.error.source is Source.JSONRPC_CODE
    assert decision.error.wire is WireShape.JSONRPC


def test_an_error_info_in_the_data_is_read_first() -> None:
    """An ErrorInfo in ``data`` decides over the code, and its metadata is kept."""
    info = {"@type": ERROR_INFO, "reason": "TASK_NOT_FOUND", "domain": A2A_DOMAIN}
    error = _ErrorObject(-32603, data=[{"@type": "x"}, {**info, "metadata": {"taskId": "t-1"}}])
    decision = classify(A2AClientJSONRPCError(error))
    assert decision.reason == Reason.TASK_NOT_FOUND
    assert decision.action is Action.RECONCILE
    assert decision.error is not None
    assert decision.error.source is Source.ERROR_INFO
    assert dict(decision.error.metadata) == {"taskId": "t-1"}


def test_a_dict_error_object_is_read_too() -> None:
    """An ``error`` kept as a dict reads as the object would."""
    decision = classify(A2AClientJSONRPCError({"code": -32002, "message": "m"}))
    assert decision.reason == Reason.TASK_NOT_CANCELABLE


def test_an_internal_error_and_an_unknown_code_read_as_a_raw_body_would() -> None:
    """-32603 and a code of nobody's table give what the same body gives."""
    for code in (-32603, -31999, -32050, 1):
        assert normalize(A2AClientJSONRPCError(_ErrorObject(code))) == normalize(_body(code))


def test_the_message_text_is_never_read_for_a_reason() -> None:
    """A message that names a reason changes nothing."""
    decision = classify(A2AClientJSONRPCError(_ErrorObject(-31999, message="TASK_NOT_FOUND")))
    assert decision.reason != Reason.TASK_NOT_FOUND


@pytest.mark.parametrize(
    "name", ["A2AClientJSONError", "A2AClientInvalidStateError", "A2AClientInvalidArgsError"]
)
def test_a_broken_answer_is_an_invalid_agent_response(name: str) -> None:
    """0.3 raises these when the answer did not parse or a stream broke its contract."""
    decision = classify(_named(name)("no current Task"))
    assert decision.reason == Reason.INVALID_AGENT_RESPONSE
    assert decision.error is not None
    assert decision.error.source is Source.INVALID_RESPONSE
    assert "no current Task" not in decision.error.message


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_INFO = st.fixed_dictionaries(
    {
        "@type": st.just(ERROR_INFO),
        "reason": st.sampled_from([row[0] for row in NINE]) | st.text(max_size=12),
        "domain": st.sampled_from([A2A_DOMAIN, "example.com"]),
    },
    optional={"metadata": st.dictionaries(st.text(max_size=8), _JSON, max_size=3)},
)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    code=st.integers(-33000, 0) | st.sampled_from([row[1] for row in NINE]) | _JSON,
    message=_JSON,
    data=_JSON | st.lists(_INFO | _JSON, max_size=4) | _INFO,
)
def test_what_the_exception_kept_reads_as_the_same_body(code: Any, message: Any, data: Any) -> None:
    """Whatever the error object holds, it reads as the body holding it; classify never raises."""
    json.dumps([code, message, data])  # only what a JSON answer could have held
    kept = A2AClientJSONRPCError(_ErrorObject(code, message, data))
    if type(code) is int:
        assert normalize(kept) == normalize(_body(code, message, data))
    classify(kept)


def test_crewais_rate_limit_kept_by_an_a2a_client_jsonrpc_error_is_retried_after_its_hint() -> None:
    """-32013 with crewai's ``data`` ``{"retry_after": 12}``: RATE_LIMITED, the hint kept."""
    error = _ErrorObject(-32013, "Rate limit exceeded. Retry after 12 seconds", {"retry_after": 12})
    decision = classify(A2AClientJSONRPCError(error))
    assert decision.reason is Reason.RATE_LIMITED
    assert decision.action is Action.RETRY
    assert decision.retry_after == 12.0
    assert classify(A2AClientJSONRPCError(_ErrorObject(-32013))).reason is None


@pytest.mark.parametrize(
    ("operation", "reason"),
    [
        ("GetTask", Reason.EXTENSION_SUPPORT_REQUIRED),
        ("SendMessage", Reason.TASK_GENERATION_MISMATCH),
    ],
)
def test_a_bare_minus_32010_kept_by_an_a2a_client_jsonrpc_error_reads_by_its_operation(
    operation: str, reason: Reason
) -> None:
    """The -32010 of crewai (no data) answering a GetTask is no generation mismatch."""
    error = _ErrorObject(-32010, "Client does not support required extensions")
    assert classify(A2AClientJSONRPCError(error), operation=operation).reason is reason
