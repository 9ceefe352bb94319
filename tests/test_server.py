"""The server side: one A2AError, encoded per binding, read back the same by normalize."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import grpc
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2a_client_errors import Action, Reason, classify, normalize
from a2a_client_errors._errors import CallError, ErrorKind, Source, WireShape
from a2a_client_errors._failures import ReportNeeded
from a2a_client_errors._policy import Decision
from a2a_client_errors._reasons import ROWS
from a2a_client_errors._wire import BadRequest, FieldViolation
from a2a_client_errors.server import (
    CONTENT_TYPE,
    A2AError,
    from_failure,
    to_grpc,
    to_http,
    to_jsonrpc,
)
from tests.conftest import rpc_error

if TYPE_CHECKING:
    from a2a_client_errors._errors import CallError as CallErrorType

SPEC = [row for row in ROWS if row.spec]
METADATA = st.dictionaries(
    st.text(min_size=1, max_size=12), st.one_of(st.text(max_size=20), st.integers()), max_size=4
)


def _via_grpc(error: A2AError) -> CallErrorType | None:
    status = to_grpc(error)
    code = next(c for c in grpc.StatusCode if c.value[0] == status.code)
    return normalize(rpc_error(code, status.message, trailer=status.SerializeToString()))


def _all_bindings(error: A2AError) -> list[CallErrorType | None]:
    status, headers, body = to_http(error)
    return [
        normalize(httpx.Response(200, json=to_jsonrpc(error, 7))),
        normalize(httpx.Response(status, headers=headers, content=body)),
        _via_grpc(error),
    ]


@settings(deadline=None, max_examples=60)
@given(row=st.sampled_from(ROWS), metadata=METADATA, message=st.text(max_size=40))
def test_every_reason_round_trips_on_every_binding(
    row: object, metadata: dict[str, object], message: str
) -> None:
    """Encode, then normalize: the same reason, code, status and metadata (as strings)."""
    reason = row.reason  # type: ignore[attr-defined]
    error = A2AError(reason, message, metadata)
    jsonrpc, http, grpc_error = _all_bindings(error)
    expected = {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in metadata.items()}
    for found in (jsonrpc, http, grpc_error):
        assert found is not None
        assert found.reason is reason
        assert found.source is Source.ERROR_INFO or found.kind is ErrorKind.AUTH
        assert dict(found.metadata) == expected
    assert jsonrpc is not None
    assert http is not None
    assert grpc_error is not None
    assert jsonrpc.jsonrpc_code == (row.jsonrpc if row.jsonrpc is not None else -32603)  # type: ignore[attr-defined]
    assert http.http_status == (row.http or 500)  # type: ignore[attr-defined]
    assert grpc_error.grpc_status == (row.grpc or "INTERNAL")  # type: ignore[attr-defined]


@pytest.mark.parametrize("row", SPEC, ids=[row.reason.value for row in SPEC])
def test_the_nine_use_the_1_0_1_table(row: object) -> None:
    """Each A2A error is encoded with its 1.0.1 JSON-RPC code, HTTP status and gRPC code."""
    error = A2AError(row.reason, "m")  # type: ignore[attr-defined]
    assert to_jsonrpc(error, 1)["error"]["code"] == row.jsonrpc  # type: ignore[attr-defined]
    status, headers, body = to_http(error)
    assert status == row.http  # type: ignore[attr-defined]
    assert headers == {"Content-Type": CONTENT_TYPE}
    assert json.loads(body)["error"]["status"] == row.grpc  # type: ignore[attr-defined]
    assert to_grpc(error).code == grpc.StatusCode[row.grpc].value[0]  # type: ignore[attr-defined]


def test_an_unknown_reason_is_an_internal_error_that_keeps_its_reason() -> None:
    """A reason of the server's own: -32603 / 500 / INTERNAL, the reason kept in ErrorInfo."""
    error = A2AError("QUOTA_OF_THE_DAY", "later")
    assert to_jsonrpc(error, None)["error"]["code"] == -32603
    found = normalize(httpx.Response(200, json=to_jsonrpc(error, None)))
    assert found is not None
    assert found.reason == "QUOTA_OF_THE_DAY"
    assert classify(httpx.Response(200, json=to_jsonrpc(error, None))).action is Action.REPORT


def test_aliases_are_encoded_canonically() -> None:
    """An alias given to A2AError is sent as the canonical reason."""
    assert A2AError("EXTENDED_CARD_NOT_CONFIGURED", "m").reason == (
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED"
    )


@pytest.mark.parametrize("binding", ["jsonrpc", "http", "grpc"])
def test_a_bad_request_detail_names_the_part(binding: str) -> None:
    """ContentTypeNotSupported can carry a BadRequest field violation naming the part."""
    violation = FieldViolation(field="message.parts[1]", description="image/png is not accepted")
    error = A2AError(
        Reason.CONTENT_TYPE_NOT_SUPPORTED,
        "no",
        extra_details=[BadRequest(field_violations=(violation,))],
    )
    found = dict(zip(["jsonrpc", "http", "grpc"], _all_bindings(error), strict=True))[binding]
    assert found is not None
    bad = [d for d in found.details if isinstance(d, BadRequest)]
    assert bad
    assert bad[0].field_violations[0].field == "message.parts[1]"


def test_a_detail_given_as_protojson_is_kept() -> None:
    """An extra detail given as a ProtoJSON object travels as it is."""
    error = A2AError(
        Reason.TASK_NOT_FOUND,
        "gone",
        extra_details=[{"@type": "type.googleapis.com/google.rpc.Help", "links": []}],
    )
    data = to_jsonrpc(error, 1)["error"]["data"]
    assert data[1] == {"@type": "type.googleapis.com/google.rpc.Help", "links": []}
    assert str(error) == "TASK_NOT_FOUND: gone"


def _error(reason: Reason | str | None, *, kind: ErrorKind = ErrorKind.PROTOCOL) -> CallError:
    return CallError(kind, reason, Source.ERROR_INFO, WireShape.JSONRPC, message="peer said")


def test_a_broken_peer_surfaces_as_invalid_agent_response() -> None:
    """A peer's INVALID_AGENT_RESPONSE reaches the caller as -32006, not -32603."""
    failure = ReportNeeded(
        Decision(
            Action.REPORT,
            Reason.INVALID_AGENT_RESPONSE,
            error=_error(Reason.INVALID_AGENT_RESPONSE),
        )
    )
    error = from_failure(failure)
    assert error.reason == "INVALID_AGENT_RESPONSE"
    assert to_jsonrpc(error, 1)["error"]["code"] == -32006
    assert to_http(error)[0] == 500
    assert grpc.StatusCode.INTERNAL.value[0] == to_grpc(error).code


def test_an_unknown_peer_reason_is_invalid_agent_response_with_the_reason_kept() -> None:
    """A reason nobody knows is the peer breaking the contract; its reason is in metadata."""
    error = from_failure(_error("WHATEVER"))
    assert error.reason == "INVALID_AGENT_RESPONSE"
    assert error.metadata["peerReason"] == "WHATEVER"


def test_a2a_reasons_pass_through_a_gateway() -> None:
    """A peer's TASK_NOT_FOUND stays TASK_NOT_FOUND for the gateway's caller."""
    error = from_failure(_error(Reason.TASK_NOT_FOUND))
    assert error.reason == "TASK_NOT_FOUND"
    assert error.message == "peer said"


@pytest.mark.parametrize("reason", [None, Reason.INTERNAL_ERROR])
def test_transport_and_internal_failures_become_internal_errors(reason: Reason | None) -> None:
    """Nothing A2A to pass on: a generic internal error, with no peer text."""
    error = from_failure(_error(reason, kind=ErrorKind.TRANSPORT))
    assert error.reason == "INTERNAL_ERROR"
    assert "peer said" not in error.message


def test_a_failure_without_an_error_is_internal() -> None:
    """A CallFailed whose decision has no error still gives an error to send."""
    assert from_failure(ReportNeeded(Decision(Action.REPORT))).reason == "INTERNAL_ERROR"


def test_a_broken_answer_through_a_guard_reaches_the_caller_as_32006() -> None:
    """A peer answering GetTask with no task: ReportNeeded, and -32006 for the gateway's caller."""
    from a2a_client_errors import Guard

    broken = httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": {"oops": True}})
    with pytest.raises(ReportNeeded) as failed:
        Guard().call(lambda: broken, operation="GetTask")
    assert failed.value.reason is Reason.INVALID_AGENT_RESPONSE
    assert to_jsonrpc(from_failure(failed.value), 9)["error"]["code"] == -32006
