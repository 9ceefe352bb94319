"""The httpx doors' look-up reads: what their I/O raises is handled once, in both doors.

A card read that fails is no card (logged at debug); a subscription that cannot be opened
falls back on the task found; a BaseException (``KeyboardInterrupt``, a cancellation) from
either goes through unchanged, never taken for a failed read.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from a2a_client_errors import AsyncGuardTransport, GuardTransport
from a2a_client_errors.testing import FakeClock
from tests.test_transport import SECRET, LosingAgent, lookup_guard, send_message

if TYPE_CHECKING:
    from collections.abc import Callable


def _raising_at(
    agent: LosingAgent, route: Callable[[httpx.Request], bool], error: BaseException
) -> Callable[[httpx.Request], httpx.Response]:
    """``agent``, but raising ``error`` for each request ``route`` picks."""

    def answer(request: httpx.Request) -> httpx.Response:
        if route(request):
            raise error
        return agent(request)

    return answer


def _card(request: httpx.Request) -> bool:
    return request.url.path.endswith("/.well-known/agent-card.json")


def _subscription(request: httpx.Request) -> bool:
    return b'"SubscribeToTask"' in request.content


def _post(mode: str, handler: Callable[[httpx.Request], httpx.Response], body: Any) -> Any:
    """POST ``body`` to the agent through the sync or async door over ``handler``."""
    guard = lookup_guard(FakeClock())
    inner = httpx.MockTransport(handler)
    headers = {"Authorization": SECRET}
    if mode == "sync":
        with httpx.Client(transport=GuardTransport(guard, inner=inner)) as client:
            return client.post("http://agent/a2a", json=body, headers=headers)

    async def go() -> httpx.Response:
        transport = AsyncGuardTransport(guard, inner=inner)
        async with httpx.AsyncClient(transport=transport) as client:
            return await client.post("http://agent/a2a", json=body, headers=headers)

    return asyncio.run(go())


MODES = pytest.mark.parametrize("mode", ["sync", "async"])
BASE_EXCEPTIONS = pytest.mark.parametrize(
    ("mode", "error"),
    [("sync", KeyboardInterrupt), ("async", KeyboardInterrupt), ("async", asyncio.CancelledError)],
)
"""What goes through a read whichever door: an interrupt, and in the async one a cancellation."""


@MODES
def test_a_card_read_that_raises_is_no_card(mode: str, caplog: pytest.LogCaptureFixture) -> None:
    """A card read that raises: logged at debug, no card; the look-up finds the task."""
    agent = LosingAgent("lose")
    handler = _raising_at(agent, _card, httpx.ConnectError("refused"))
    with caplog.at_level(logging.DEBUG, logger="a2a_client_errors"):
        answer = _post(mode, handler, send_message())
    assert answer.json()["result"]["task"] == agent.tasks[0]
    assert len(agent.sends) == 1
    assert "the agent card could not be read (ConnectError)" in caplog.text


@BASE_EXCEPTIONS
def test_a_base_exception_from_a_card_read_goes_through(
    mode: str, error: type[BaseException]
) -> None:
    """A KeyboardInterrupt or a cancellation in a card read is not taken for a missing card."""
    agent = LosingAgent("lose")
    with pytest.raises(error):
        _post(mode, _raising_at(agent, _card, error()), send_message())
    assert len(agent.sends) == 1  # never resent


@BASE_EXCEPTIONS
def test_a_base_exception_from_a_subscription_goes_through(
    mode: str, error: type[BaseException]
) -> None:
    """Opening the found task's subscription: only an httpx error falls back on the task."""
    agent = LosingAgent("lose", state="TASK_STATE_WORKING")
    handler = _raising_at(agent, _subscription, error())
    with pytest.raises(error):
        _post(mode, handler, send_message("SendStreamingMessage"))
    assert len(agent.sends) == 1
