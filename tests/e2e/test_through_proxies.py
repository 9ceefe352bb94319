"""Errors that cross a hop that strips their details, or replaces them: still sensible."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from a2a_client_errors import Action, Reason, classify
from a2a_client_errors.types import ErrorKind, Source
from tests.e2e.proxy import Proxy

if TYPE_CHECKING:
    from collections.abc import Iterator

    from a2a_client_errors.testing.peer import EmbeddedPeer

pytestmark = pytest.mark.e2e
HEADERS = {"A2A-Version": "1.0"}


@pytest.fixture(scope="module")
def stripping(peer: EmbeddedPeer) -> Iterator[Proxy]:
    """A proxy in front of the peer that drops every error's details."""
    with Proxy(peer.jsonrpc_url.rsplit("/", 1)[0], "strip") as proxy:
        yield proxy


@pytest.fixture(scope="module")
def bare(peer: EmbeddedPeer) -> Iterator[Proxy]:
    """A proxy in front of the peer that answers every error with its own 502 page."""
    with Proxy(peer.jsonrpc_url.rsplit("/", 1)[0], "bare") as proxy:
        yield proxy


def _rpc(proxy: Proxy, method: str, params: dict[str, Any]) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return httpx.post(f"{proxy.url}/jsonrpc", json=body, headers=HEADERS, timeout=10)


def _completed_task(proxy: Proxy) -> str:
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    answer = _rpc(proxy, "SendMessage", {"message": message})
    return str(answer.json()["result"]["task"]["id"])


def test_the_proxy_forwards_successes(stripping: Proxy) -> None:
    """A success crosses the proxy untouched: ok."""
    task_id = _completed_task(stripping)
    answer = _rpc(stripping, "GetTask", {"id": task_id})
    assert classify(answer, operation="GetTask").action is Action.OK


def test_jsonrpc_without_details_is_read_by_its_code(stripping: Proxy) -> None:
    """TASK_NOT_CANCELABLE without ErrorInfo: the code -32002 still names it."""
    answer = _rpc(stripping, "CancelTask", {"id": _completed_task(stripping)})
    assert "data" not in answer.json()["error"]
    decision = classify(answer, operation="CancelTask")
    assert decision.reason is Reason.TASK_NOT_CANCELABLE
    assert decision.error is not None
    assert decision.error.source is Source.JSONRPC_CODE
    assert decision.action is Action.RECONCILE


def test_rest_404_without_details_is_task_not_found(stripping: Proxy) -> None:
    """HTTP+JSON 404 without ErrorInfo: the status alone names TASK_NOT_FOUND."""
    answer = httpx.get(f"{stripping.url}/rest/tasks/no-such-task", headers=HEADERS, timeout=10)
    assert answer.status_code == 404
    decision = classify(answer, operation="GetTask")
    assert decision.reason is Reason.TASK_NOT_FOUND
    assert decision.error is not None
    assert decision.error.source is Source.STATUS_FALLBACK
    assert decision.action is Action.RECONCILE


def test_rest_400_without_details_names_no_reason(stripping: Proxy) -> None:
    """HTTP+JSON 400 FAILED_PRECONDITION without ErrorInfo: no reason guessed; not retried."""
    task_id = _completed_task(stripping)
    answer = httpx.post(f"{stripping.url}/rest/tasks/{task_id}:cancel", headers=HEADERS, timeout=10)
    assert answer.status_code == 400
    decision = classify(answer, operation="CancelTask")
    assert decision.reason is None
    assert decision.error is not None
    assert decision.error.grpc_status == "FAILED_PRECONDITION"
    assert decision.action is Action.FIX_REQUEST


def test_a_gateway_page_instead_of_the_error_is_transient(bare: Proxy) -> None:
    """A 502 HTML page where the agent's error was: a transport failure, retried."""
    answer = _rpc(bare, "GetTask", {"id": "no-such-task"})
    assert answer.status_code == 502
    decision = classify(answer, operation="GetTask")
    assert decision.action is Action.RETRY
    assert decision.error is not None
    assert decision.error.kind is ErrorKind.TRANSPORT
