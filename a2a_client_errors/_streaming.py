"""Read an A2A event stream (SSE) over raw httpx, judging every event as it comes.

For people who call A2A without a2a-sdk: open the stream with ``client.stream(...)`` and read
it with `iter_events` (or `aiter_events` for ``httpx.AsyncClient``). Each event's payload is
yielded (the JSON-RPC ``result``, or the HTTP+JSON ``StreamResponse``); an error event (a JSON-RPC
error envelope, or a ``{"error": ...}`` Status body, with or without ``event: error``) raises the
`CallFailed` subclass its decision names, after every event before it was yielded. A stream with
no event at all (only comments, keep-alives) raises `ReportNeeded` (INVALID_AGENT_RESPONSE, as
an empty body does). A stream that closes before its task reached a terminal or interrupted
state (and that was not a single Message) is an interruption, not a success: it raises
`RetryExhausted` with ``give_up == GiveUp.STREAM_STARTED``, so the caller resumes with
SubscribeToTask (or reads the task with GetTask) instead of resending the message.

Example::

    with client.stream("POST", url, json=request) as response:
        for event in iter_events(response, operation="SendStreamingMessage"):
            ...
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

import httpx

from a2a_client_errors._errors import CallError, ErrorKind, Source, WireShape
from a2a_client_errors._foreign_codes import read_generation
from a2a_client_errors._guard import failure_for
from a2a_client_errors._normalize import (
    event_error,
    event_reader,
    no_event_error,
    normalize,
    stream_error,
)
from a2a_client_errors._outcomes import task_outcome
from a2a_client_errors._policy import Decision, GiveUp, Policy
from a2a_client_errors._reasons import Action, TransportFailure
from a2a_client_errors._sse import SSEError, aread_events, read_events

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from a2a_client_errors._failures import CallFailed

__all__ = ["aiter_events", "interruption", "iter_events"]


def interruption(operation: str | None, *, http_status: int | None = None) -> CallFailed:
    """The failure of a stream that closed before its task reached a final state.

    A `RetryExhausted` whose decision gives up with ``GiveUp.STREAM_STARTED``: the message must
    not be sent again; resume with SubscribeToTask, or read the task with GetTask.
    """
    error = CallError(
        ErrorKind.TRANSPORT,
        None,
        Source.TRANSPORT,
        WireShape.TRANSPORT,
        http_status=http_status,
        message="the stream closed before its task reached a terminal or interrupted state",
        transport=TransportFailure.NETWORK,
    )
    decision = Decision(Action.RETRY, None, None, error, operation, give_up=GiveUp.STREAM_STARTED)
    return failure_for(decision)(decision)


class _Reader:
    """What the sync and async readers share: judging events and following the task."""

    def __init__(self, response: httpx.Response, operation: str | None, policy: Policy | None):
        self.response = response
        self.operation = operation
        self.policy = policy or Policy()
        self.reader = event_reader(self.policy.limits)
        self.ended = False
        self.events = 0

    def opened(self) -> None:
        """A response that is not an event stream is judged as a whole first."""
        if not self.response.headers.get("content-type", "").startswith("text/event-stream"):
            self.response.read()
            self._raise_for(normalize(self.response, limits=self.policy.limits))

    async def aopened(self) -> None:
        """The async twin of `opened`."""
        if not self.response.headers.get("content-type", "").startswith("text/event-stream"):
            await self.response.aread()
            self._raise_for(normalize(self.response, limits=self.policy.limits))

    def take(self, event: tuple[str, str]) -> Any:
        """The payload of a completed event; raises for an error event."""
        parsed, error = event_error(*event, self.policy.limits)
        self._raise_for(error)
        self.events += 1
        payload = parsed.get("result", parsed) if isinstance(parsed, dict) else parsed
        self._track(payload)
        return payload

    def broken(self, exc: SSEError) -> NoReturn:
        """The reader stopped the stream (not UTF-8, or past a cap): raise what that is."""
        raise self._failure(stream_error(exc)) from None

    def cut(self, exc: httpx.TransportError) -> NoReturn:
        """The stream broke off (reset, timed out, cut short): raise its failure, judged.

        After an event, an interruption (``GiveUp.STREAM_STARTED``: resume, never resend); before
        one, the transport failure's own decision (a send's outcome is then unknown).
        """
        error = normalize(exc, limits=self.policy.limits, operation=self.operation)
        assert error is not None  # noqa: S101 (a transport error is always a call error)
        raise self._failure(error) from exc

    def closed(self) -> None:
        """The stream ended: fine after a final state, an interruption otherwise.

        A stream that ended without one event (only comments, say) gave no answer at all:
        INVALID_AGENT_RESPONSE, as an empty body is.
        """
        if not self.events:
            raise self._failure(no_event_error(self.response.status_code))
        if not self.ended:
            raise interruption(self.operation, http_status=self.response.status_code)

    def _raise_for(self, error: CallError | None) -> None:
        if error is not None:
            raise self._failure(error)

    def _failure(self, error: CallError) -> CallFailed:
        # -32010 in an event: draft 1.1's mismatch only answering a send (`_foreign_codes`).
        error = read_generation(error, self.operation)
        decision = self.policy.decide(error, operation=self.operation)
        if decision.action is Action.RETRY and self.events:
            decision = Decision(
                decision.action,
                decision.reason,
                decision.retry_after,
                error,
                self.operation,
                give_up=GiveUp.STREAM_STARTED,
            )
        return failure_for(decision)(decision)

    def _track(self, payload: Any) -> None:
        if not isinstance(payload, dict):
            return
        if "message" in payload or payload.get("kind") == "message":
            self.ended = True  # a stream that answers with a Message carries only that one
            return
        outcome = task_outcome(payload)
        if outcome is not None and outcome.is_final:
            self.ended = True


def iter_events(
    response: httpx.Response,
    *,
    operation: str | None = None,
    policy: Policy | None = None,
) -> Iterator[Any]:
    """Yield the payload of every event of an A2A stream; raise the first call error.

    Args:
        response: a streaming response (``client.stream(...)``), unread.
        operation: the A2A operation, for the record and per-operation overrides.
        policy: the policy that decides about error events (default: the table's).

    Raises:
        CallFailed: the subclass an error event's decision names (after the events before it
            were yielded), or `RetryExhausted` with ``GiveUp.STREAM_STARTED`` when the stream
            closed or broke off (a reset, a timeout) before its task reached a final state.
            A stream that breaks off before its first event raises what the transport
            failure's decision names (``RetryExhausted``; a send's delivery is unknown).
    """
    reader = _Reader(response, operation, policy)
    reader.opened()
    events = read_events(response.iter_bytes(), reader.reader)
    while True:
        try:
            event = next(events, None)
        except SSEError as exc:
            reader.broken(exc)
        except httpx.TransportError as exc:
            reader.cut(exc)
        if event is None:
            break
        payload = reader.take(event)
        if payload is not None:
            yield payload
    reader.closed()


async def aiter_events(
    response: httpx.Response,
    *,
    operation: str | None = None,
    policy: Policy | None = None,
) -> AsyncIterator[Any]:
    """The async twin of `iter_events`, for ``httpx.AsyncClient`` streams."""
    reader = _Reader(response, operation, policy)
    await reader.aopened()
    events = aread_events(response.aiter_bytes(), reader.reader)
    while True:
        try:
            event = await anext(events, None)
        except SSEError as exc:
            reader.broken(exc)
        except httpx.TransportError as exc:
            reader.cut(exc)
        if event is None:
            break
        payload = reader.take(event)
        if payload is not None:
            yield payload
    reader.closed()
