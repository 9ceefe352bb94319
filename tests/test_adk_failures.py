"""integrations.adk: a CallFailed's decision on google-adk's error event, without google-adk.

The mapping (`error_code`, `failure_metadata`, `request_message_id`), the book of failures by
messageId and its marking of an event are plain Python: they run here on events that have
an ADK ``Event``'s three fields. The plugin itself, on a real ``RemoteA2aAgent`` and runner, is
checked end to end by ``examples/frameworks/adk.py`` (CI runs it in google-adk's venvs).
"""

from __future__ import annotations

import asyncio
import importlib.util
from types import SimpleNamespace
from typing import Any

import pytest

from a2a_client_errors import (
    Action,
    Decision,
    FixRequestNeeded,
    GiveUp,
    OutcomeUnknown,
    Reason,
    RetryExhausted,
)
from a2a_client_errors.integrations.adk import (
    ADK_REQUEST_KEY,
    METADATA_KEY,
    FailedCalls,
    error_code,
    failure_metadata,
    request_message_id,
)
from a2a_client_errors.types import SentMessage


def _exhausted() -> RetryExhausted:
    return RetryExhausted(Decision(Action.RETRY, give_up=GiveUp.ATTEMPTS), attempts=3)


def _event(message_id: str | None, error: str | None = "A2A request failed: x") -> Any:
    """An ADK error event as RemoteA2aAgent yields it (the three fields the mapping reads)."""
    metadata = {"a2a:error": error}
    if message_id is not None:
        metadata[ADK_REQUEST_KEY] = {"messageId": message_id, "role": "ROLE_USER"}
    return SimpleNamespace(error_message=error, error_code=None, custom_metadata=metadata)


def test_the_error_code_is_the_action_and_the_reason() -> None:
    """A reason joins the action; without one the action stands alone."""
    refused = FixRequestNeeded(Decision(Action.FIX_REQUEST, Reason.INVALID_REQUEST))
    assert error_code(refused) == "fix_request:INVALID_REQUEST"
    assert error_code(_exhausted()) == "retry"


def test_the_metadata_holds_the_decision_fields() -> None:
    """Action, reason, messageId, maybe_processed and the count of attempts are all there."""
    fields = failure_metadata(_exhausted(), "m1")
    assert fields["failure"] == "RetryExhausted"
    assert (fields["action"], fields["reason"], fields["message_id"]) == ("retry", None, "m1")
    assert (fields["maybe_processed"], fields["attempts"]) == (False, 3)
    assert fields["give_up"] == "attempts"
    assert fields["kind"] is None  # no error behind this decision


def test_an_unknown_outcome_names_its_own_message() -> None:
    """OutcomeUnknown's own messageId wins, and it adds what the orchestrator looks up."""
    unknown = OutcomeUnknown(
        Decision(Action.RETRY, give_up=GiveUp.ATTEMPTS),
        sent=SentMessage("own", "ctx", "t1", 1.0),
        why="ListTasks refused",
    )
    fields = failure_metadata(unknown, "other")
    assert (fields["message_id"], fields["context_id"], fields["task_id"]) == ("own", "ctx", "t1")
    assert (fields["maybe_processed"], fields["why"]) == (True, "ListTasks refused")


@pytest.mark.parametrize(
    ("metadata", "found"),
    [
        ({ADK_REQUEST_KEY: {"messageId": "m1"}}, "m1"),
        ({ADK_REQUEST_KEY: {"message_id": "m2"}}, "m2"),
        ({ADK_REQUEST_KEY: {"messageId": ""}}, None),
        ({ADK_REQUEST_KEY: "not a message"}, None),
        ({"a2a:error": "x"}, None),
        (None, None),
    ],
)
def test_the_message_id_is_read_from_adks_request_metadata(
    metadata: dict[str, Any] | None, found: str | None
) -> None:
    """The messageId of ``custom_metadata["a2a:request"]``, in either spelling, else None."""
    assert request_message_id(metadata) == found


def test_an_error_event_gets_its_failure_once() -> None:
    """The event of the failed send is marked, its ADK metadata kept; the failure is taken."""
    failures = FailedCalls()
    failures.record("m1", _exhausted())
    event = _event("m1")
    assert failures.mark(event)
    assert event.error_code == "retry"
    assert event.custom_metadata["a2a:error"] == "A2A request failed: x"
    assert event.custom_metadata[METADATA_KEY]["message_id"] == "m1"
    assert failures.pending == 0
    again = _event("m1")
    assert not failures.mark(again)
    assert again.error_code is None


@pytest.mark.parametrize(
    "event",
    [_event("m1", error=None), _event(None), _event("another")],
    ids=["not an error", "no request", "another message"],
)
def test_other_events_are_left_as_they_are(event: Any) -> None:
    """An event that is no error, names no request, or another message is not marked."""
    failures = FailedCalls()
    failures.record("m1", _exhausted())
    before = dict(event.custom_metadata)
    assert not failures.mark(event)
    assert (event.error_code, event.custom_metadata) == (None, before)
    assert failures.pending == 1


def test_the_book_keeps_the_newest_failures() -> None:
    """Past its limit the oldest failure is dropped; a limit under one is refused."""
    failures = FailedCalls(limit=2)
    for message_id in ("a", "b", "c"):
        failures.record(message_id, _exhausted())
    assert (failures.pop("a"), failures.pending) == (None, 2)
    assert failures.pop("c") is not None
    with pytest.raises(ValueError, match="at least 1"):
        FailedCalls(limit=0)


class _FailingClient:
    """A guarded client whose sends fail after one event, and that has other members."""

    def __init__(self, failure: Exception) -> None:
        self.failure = failure
        self.closed = False

    async def send_message(self, request: Any, *, context: Any = None) -> Any:
        """One event, then the failure."""
        yield "first"
        raise self.failure

    async def close(self) -> None:
        """Mark closed."""
        self.closed = True


async def _drain(client: Any, request: Any) -> list[Any]:
    return [event async for event in client.send_message(request, context=None)]


def test_a_watched_send_notes_its_failure_and_raises_it() -> None:
    """The CallFailed is kept under the request's messageId and still raised to ADK."""
    failures = FailedCalls()
    failure = _exhausted()
    inner = _FailingClient(failure)
    watched = failures.watch(inner)
    # a2a-sdk 1.x reads the message of a SendMessageRequest, 0.3 the Message itself
    request = SimpleNamespace(message_id="m1", message=SimpleNamespace(message_id="m1"))
    with pytest.raises(RetryExhausted) as raised:
        asyncio.run(_drain(watched, request))
    assert raised.value is failure
    assert failures.pop("m1") is failure
    asyncio.run(watched.close())  # everything else is the client's own
    assert inner.closed


def test_a_watched_send_keeps_other_exceptions_to_itself() -> None:
    """What is no CallFailed passes through, noted nowhere."""
    failures = FailedCalls()
    watched = failures.watch(_FailingClient(RuntimeError("boom")))
    request = SimpleNamespace(message_id="m1", message=SimpleNamespace(message_id="m1"))
    with pytest.raises(RuntimeError, match="boom"):
        asyncio.run(_drain(watched, request))
    assert failures.pending == 0


def test_the_factory_refuses_what_each_client_has_of_its_own() -> None:
    """peer, card_url and factory are read per client, as guarded_factory's are."""
    with pytest.raises(TypeError, match="peer"):
        FailedCalls().factory(None, peer="x")


@pytest.mark.skipif(
    importlib.util.find_spec("google.adk") is not None, reason="google-adk is installed here"
)
def test_the_plugin_needs_google_adk() -> None:
    """Without google-adk, asking for the plugin says so; the rest imported without it."""
    with pytest.raises(ImportError):
        FailedCalls().plugin()
