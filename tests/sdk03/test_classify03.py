"""classify reads a2a-sdk 0.3's own client exceptions: built here, and raised by its client."""

from __future__ import annotations

from typing import TYPE_CHECKING

import grpc
import httpx
import pytest
from a2a.client.errors import (
    A2AClientHTTPError,
    A2AClientInvalidStateError,
    A2AClientJSONError,
    A2AClientJSONRPCError,
    A2AClientTimeoutError,
)
from a2a.types import (
    AuthenticatedExtendedCardNotConfiguredError,
    ContentTypeNotSupportedError,
    InternalError,
    InvalidAgentResponseError,
    InvalidParamsError,
    JSONRPCError,
    JSONRPCErrorResponse,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    TaskQueryParams,
    UnsupportedOperationError,
)

from a2a_client_errors import Action, Delivery, Reason, classify
from a2a_client_errors.types import Source, TransportFailure
from tests.conftest import A2A_DOMAIN, ERROR_INFO
from tests.sdk03.client03 import BINDINGS, client03

if TYPE_CHECKING:
    from tests.agent03 import Running03

pytestmark = pytest.mark.a2a_sdk("0.3")

_MODELS = [
    (TaskNotFoundError(), Reason.TASK_NOT_FOUND),
    (TaskNotCancelableError(), Reason.TASK_NOT_CANCELABLE),
    (PushNotificationNotSupportedError(), Reason.PUSH_NOTIFICATION_NOT_SUPPORTED),
    (UnsupportedOperationError(), Reason.UNSUPPORTED_OPERATION),
    (ContentTypeNotSupportedError(), Reason.CONTENT_TYPE_NOT_SUPPORTED),
    (InvalidAgentResponseError(), Reason.INVALID_AGENT_RESPONSE),
    (AuthenticatedExtendedCardNotConfiguredError(), Reason.EXTENDED_AGENT_CARD_NOT_CONFIGURED),
    (JSONRPCError(code=-32008, message="m"), Reason.EXTENSION_SUPPORT_REQUIRED),
    (JSONRPCError(code=-32009, message="m"), Reason.VERSION_NOT_SUPPORTED),
    (InternalError(), Reason.INTERNAL_ERROR),
    (InvalidParamsError(), Reason.INVALID_PARAMS),
]


def _jsonrpc_error(model: object) -> A2AClientJSONRPCError:
    return A2AClientJSONRPCError(JSONRPCErrorResponse(id=1, error=model))  # type: ignore[arg-type]


@pytest.mark.parametrize(("model", "reason"), _MODELS)
def test_a_jsonrpc_error_is_read_by_its_code(model: object, reason: Reason) -> None:
    """Each of 0.3's error models gives its reason, from its code."""
    decision = classify(_jsonrpc_error(model))
    assert decision.reason == reason
    assert decision.error is not None
    assert decision.error.source is Source.JSONRPC_CODE


def test_an_error_info_in_the_data_is_read() -> None:
    """An ErrorInfo the agent put in ``data`` gives the reason and its metadata."""
    info = {"@type": ERROR_INFO, "reason": "TASK_NOT_FOUND", "domain": A2A_DOMAIN}
    model = InternalError(data=[{**info, "metadata": {"taskId": "t"}}])
    decision = classify(_jsonrpc_error(model))
    assert decision.action is Action.RECONCILE
    assert decision.error is not None
    assert decision.error.source is Source.ERROR_INFO
    assert dict(decision.error.metadata) == {"taskId": "t"}


def test_an_http_error_is_read_from_its_response() -> None:
    """A2AClientHTTPError raised from an HTTPStatusError: the response decides."""
    request = httpx.Request("POST", "http://127.0.0.1/v1/message:send")
    response = httpx.Response(429, headers={"Retry-After": "3"}, request=request)
    try:
        response.raise_for_status()
    except httpx.HTTPStatusError as cause:
        exc = A2AClientHTTPError(429, "rate limited")
        exc.__cause__ = cause
    decision = classify(exc)
    assert decision.action is Action.RETRY
    assert decision.retry_after == 3.0


def test_a_network_error_0_3_calls_503_is_the_network_error() -> None:
    """0.3 raises A2AClientHTTPError(503) from a connect error: nothing was sent."""
    exc = A2AClientHTTPError(503, "Network communication error")
    exc.__cause__ = httpx.ConnectError("refused")
    decision = classify(exc)
    assert decision.error is not None
    assert decision.error.transport is TransportFailure.CONNECT
    assert decision.error.delivery is Delivery.NOT_SENT


def test_a_timeout_and_a_broken_answer() -> None:
    """A2AClientTimeoutError is a timeout; a JSON or stream-state error a broken answer."""
    timeout = classify(A2AClientTimeoutError("Client Request timed out"))
    assert timeout.error is not None
    assert timeout.error.transport is TransportFailure.TIMEOUT
    for exc in (A2AClientJSONError("x"), A2AClientInvalidStateError("no current Task")):
        assert classify(exc).reason == Reason.INVALID_AGENT_RESPONSE


@pytest.mark.parametrize("binding", list(BINDINGS))
async def test_a_real_unknown_task_is_task_not_found(agent03: Running03, binding: str) -> None:
    """GetTask of an unknown task, from the real 0.3 client on each binding: reconcile."""
    async with client03(agent03, binding) as client:
        with pytest.raises(Exception) as raised:  # noqa: PT011 (each binding raises its own)
            await client.get_task(TaskQueryParams(id="no-such-task"))
    decision = classify(raised.value, operation="GetTask")
    assert decision.reason == Reason.TASK_NOT_FOUND
    assert decision.action is Action.RECONCILE
    if binding == "grpc":
        assert isinstance(raised.value, grpc.aio.AioRpcError)
