"""normalize of a2a-sdk's own exceptions (either line): what its client raises is read as sent.

A module of its own: it imports a2a-sdk, which an environment without it (the runtime
dependencies at their lowest versions, `.ci/run`) does not hold; there, these tests are left
out and say so (`tests/sdk_lines.py`).
"""

from __future__ import annotations

import json
import ssl

import grpc
import httpx
import pytest
from a2a.client.errors import A2AClientError, A2AClientTimeoutError
from a2a.utils import errors as sdk

from a2a_client_errors import Action, Reason, classify
from a2a_client_errors._reasons import ROWS, Delivery, ReasonRow
from a2a_client_errors.types import ErrorKind, Source, TransportFailure
from tests.conftest import (
    error_info,
    error_of,
    json_response,
    raised_from,
    send_through,
    status_body,
)
from tests.test_normalize import (
    NOT_SENT,
    TRANSPORT_DELIVERY,
    UNKNOWN,
    NotSentRpcError,
    expected_delivery,
)

pytestmark = pytest.mark.a2a_sdk("0.3", "1")


def real_connect_error() -> httpx.ConnectError:
    """A ConnectError as httpx raises it: mapped from httpcore, itself from the OS error."""
    import httpcore

    try:
        try:
            try:
                raise ConnectionRefusedError(111, "Connection refused")
            except ConnectionRefusedError as os_error:
                raise httpcore.ConnectError(str(os_error)) from os_error
        except httpcore.ConnectError as core:
            raise httpx.ConnectError(str(core)) from core
    except httpx.ConnectError as exc:
        return exc


@pytest.mark.a2a_sdk("1")
def test_sdk_task_not_found_with_data() -> None:
    """a2a-sdk's TaskNotFoundError gives TASK_NOT_FOUND with its data as metadata."""
    exc = sdk.TaskNotFoundError("x", data={"taskId": "t"})
    found = error_of(exc)
    assert found.reason is Reason.TASK_NOT_FOUND
    assert dict(found.metadata) == {"taskId": "t"}
    assert classify(exc).action is Action.RECONCILE


@pytest.mark.a2a_sdk("1")
@pytest.mark.parametrize(
    ("name", "reason", "action"),
    [
        ("TaskNotCancelableError", Reason.TASK_NOT_CANCELABLE, Action.RECONCILE),
        ("UnsupportedOperationError", Reason.UNSUPPORTED_OPERATION, Action.DEGRADE),
        (
            "PushNotificationNotSupportedError",
            Reason.PUSH_NOTIFICATION_NOT_SUPPORTED,
            Action.DEGRADE,
        ),
        (
            "ExtendedAgentCardNotConfiguredError",
            Reason.EXTENDED_AGENT_CARD_NOT_CONFIGURED,
            Action.DEGRADE,
        ),
        ("VersionNotSupportedError", Reason.VERSION_NOT_SUPPORTED, Action.FIX_REQUEST),
        ("ContentTypeNotSupportedError", Reason.CONTENT_TYPE_NOT_SUPPORTED, Action.FIX_REQUEST),
        (
            "ExtensionSupportRequiredError",
            Reason.EXTENSION_SUPPORT_REQUIRED,
            Action.FIX_REQUEST,
        ),
        ("InvalidAgentResponseError", Reason.INVALID_AGENT_RESPONSE, Action.REPORT),
        ("InvalidParamsError", Reason.INVALID_PARAMS, Action.FIX_REQUEST),
        ("InternalError", Reason.INTERNAL_ERROR, Action.RETRY),
        ("JSONParseError", Reason.PARSE_ERROR, Action.FIX_REQUEST),
        ("InvalidRequestError", Reason.INVALID_REQUEST, Action.FIX_REQUEST),
        ("MethodNotFoundError", Reason.METHOD_NOT_FOUND, Action.FIX_REQUEST),
    ],
    ids=str,
)
def test_sdk_error_classes(name: str, reason: Reason, action: Action) -> None:
    """Each a2a-sdk error class gives its reason and default action."""
    decision = classify(getattr(sdk, name)())
    assert decision.reason is reason
    assert decision.action is action


@pytest.mark.a2a_sdk("1")
def test_sdk_client_error_from_http_status_error() -> None:
    """An A2AClientError raised from an HTTPStatusError gives the response's error."""
    body = status_body(400, "FAILED_PRECONDITION", "x", [error_info("VERSION_NOT_SUPPORTED")])
    response = send_through(json_response(400, body))
    try:
        response.raise_for_status()
    except httpx.HTTPStatusError as cause:
        exc = raised_from(A2AClientError("HTTP error 400"), cause)
    found = error_of(exc)
    assert found.reason is Reason.VERSION_NOT_SUPPORTED
    assert found.source is Source.ERROR_INFO
    assert found.http_status == 400


@pytest.mark.a2a_sdk("1")
def test_sdk_client_timeout() -> None:
    """A2AClientTimeoutError is a transport timeout: retry."""
    exc = A2AClientTimeoutError("Client Request timed out")
    found = error_of(exc)
    assert found.kind is ErrorKind.TRANSPORT
    assert found.transport is TransportFailure.TIMEOUT
    assert classify(exc).action is Action.RETRY


@pytest.mark.a2a_sdk("1")
def test_sdk_client_error_from_connect_error() -> None:
    """An A2AClientError raised from a ConnectError is that connect failure."""
    exc = raised_from(A2AClientError("Network error"), httpx.ConnectError("refused"))
    found = error_of(exc)
    assert found.transport is TransportFailure.CONNECT
    assert classify(exc).action is Action.RETRY


@pytest.mark.a2a_sdk("1")
def test_an_sdk_error_raised_from_a_not_sent_rpc_error_is_not_sent() -> None:
    """a2a-sdk's A2AClientError (or timeout error) raised from the gRPC error: not sent."""
    unavailable = NotSentRpcError(grpc.StatusCode.UNAVAILABLE, "not connected")
    late = NotSentRpcError(grpc.StatusCode.DEADLINE_EXCEEDED, "not connected in time")
    assert error_of(raised_from(A2AClientError("gRPC Error"), unavailable)).delivery is NOT_SENT
    assert error_of(raised_from(A2AClientTimeoutError("timed out"), late)).delivery is NOT_SENT
    try:
        try:
            raise unavailable
        except NotSentRpcError:
            raise A2AClientError("gRPC Error")  # noqa: B904 (a context only proves nothing)
    except A2AClientError as exc:
        found = error_of(exc)
    assert found.delivery is UNKNOWN


@pytest.mark.a2a_sdk("1")
@pytest.mark.parametrize(
    "row", [row for row in ROWS if hasattr(sdk, row.error)], ids=lambda row: row.reason.value
)
def test_sdk_error_class_decides_the_delivery(row: ReasonRow) -> None:
    """Each a2a-sdk error class names the delivery of its reason."""
    found = error_of(getattr(sdk, row.error)("x"))
    assert found.reason is row.reason
    assert found.delivery is expected_delivery(row.reason)


@pytest.mark.a2a_sdk("1")
def test_every_sdk_error_class_is_in_the_delivery_table() -> None:
    """The a2a-sdk error classes the table covers are all the sdk's A2A errors."""
    covered = {row.error for row in ROWS if hasattr(sdk, row.error)}
    assert len(covered) >= 13


@pytest.mark.parametrize(
    ("exc", "expected"), TRANSPORT_DELIVERY, ids=[type(e).__name__ for e, _ in TRANSPORT_DELIVERY]
)
def test_transport_exception_in_an_sdk_client_error(exc: BaseException, expected: Delivery) -> None:
    """An A2AClientError raised from a transport exception has that exception's delivery."""
    wrapped = raised_from(A2AClientError("Network communication error"), exc)
    assert error_of(wrapped).delivery is expected


def test_httpx_connect_error_from_the_os_is_not_sent() -> None:
    """A ConnectError mapped from httpcore from a refused connection is not sent, wrapped too."""
    exc = real_connect_error()
    assert error_of(exc).delivery is NOT_SENT
    assert error_of(raised_from(A2AClientError("Network error"), exc)).delivery is NOT_SENT


def test_a_wrapper_of_a_connect_error_by_context_only_is_unknown() -> None:
    """A wrapper that does not say it was raised from the connect error proves nothing."""
    try:
        try:
            raise httpx.ConnectError("refused")
        except httpx.ConnectError:
            raise A2AClientError("Network error")  # noqa: B904
    except A2AClientError as exc:
        found = error_of(exc)
    assert found.delivery is UNKNOWN


def test_sdk_timeout_is_unknown() -> None:
    """A2AClientTimeoutError may be a read timeout: unknown."""
    assert error_of(A2AClientTimeoutError("timed out")).delivery is UNKNOWN


def test_sdk_error_from_a_json_decode_error_is_unknown() -> None:
    """An A2AClientError raised from a body that is not JSON: the answer broke, unknown."""
    try:
        json.loads("<html>")
    except ValueError as cause:
        exc = raised_from(A2AClientError("bad json"), cause)
    found = error_of(exc)
    assert found.reason is Reason.INVALID_AGENT_RESPONSE
    assert found.delivery is UNKNOWN


def test_sdk_error_from_a_certificate_failure_is_tls_not_a_broken_answer() -> None:
    """A certificate failure (a ValueError too) under an a2a-sdk error is TLS, not the peer's."""
    cause = ssl.SSLCertVerificationError("certificate verify failed")
    found = error_of(raised_from(A2AClientError("Network error"), cause))
    assert found.transport is TransportFailure.TLS
    assert found.reason is None
    assert found.delivery is NOT_SENT
