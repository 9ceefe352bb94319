"""Test support for people who test code that uses this package.

* `FakeClock`: a clock you advance by hand, whose ``sleep`` advances it instead of waiting;
  pass ``clock=fake.now, sleep=fake.sleep`` to a `Guard` (``sleep`` works in ``acall`` too).
* `set_testing`: make every Guard skip its sleeps (and, optionally, cap its attempts), as a
  switch or a context manager that restores what was before.
* `RecordingHook`: a Guard hook that keeps every event, to assert on.
* Wire builders: the error bodies a peer sends, per binding, for any reason of the table:
  `jsonrpc_error`, `status_error`, `problem_error`, `error_response`.
* `a2a_client_errors.testing.peer`: a real a2a-sdk server on 127.0.0.1 (`EmbeddedPeer`), the
  ledger of what its agent did, and raw captures of the errors it sends; import it on its own
  (it needs the extra ``a2a`` only when a peer starts). ``EmbeddedPeer(dialect=...)`` takes a
  ``PeerDialect`` of your own, to make it behave as another server does.
* `a2a_client_errors.testing.lossy`: `LossyProxy`, a loopback hop that loses, drops or cuts
  answers by a plan.

Example:
    >>> from a2a_client_errors import Guard
    >>> from a2a_client_errors.testing import FakeClock
    >>> clock = FakeClock()
    >>> guard = Guard(clock=clock.now, sleep=clock.sleep, random=lambda: 1.0)
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import httpx

from a2a_client_errors._engine import switch_testing
from a2a_client_errors._reasons import A2A_DOMAIN, ERROR_INFO_TYPE, GRPC_CODES, Reason, row_for
from a2a_client_errors.hooks import (
    CallRecord,
    FailoverEvent,
    GuardEvent,
    Hook,
    UnknownOutcomeEvent,
)

if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import TracebackType

    from a2a_client_errors._breaker import BreakerTransition
    from a2a_client_errors._retry import BudgetFallback

__all__ = [
    "FakeClock",
    "RecordingHook",
    "error_info",
    "error_response",
    "jsonrpc_error",
    "problem_error",
    "set_testing",
    "status_error",
]


class FakeClock:
    """A monotonic clock that only moves when told to (or when something sleeps on it).

    Attributes:
        sleeps: every delay passed to `sleep`, in order.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)
        self._lock = threading.Lock()
        self.sleeps: list[float] = []

    def now(self) -> float:
        """The current time, in seconds."""
        return self._now

    def advance(self, seconds: float) -> None:
        """Move the clock forward."""
        if seconds < 0:
            msg = "time does not go backwards"
            raise ValueError(msg)
        with self._lock:
            self._now += seconds

    def sleep(self, seconds: float) -> None:
        """Record the delay and advance the clock by it, at once."""
        with self._lock:
            self.sleeps.append(seconds)
            self._now += max(0.0, seconds)

    def __call__(self) -> float:
        """The current time: the clock is its own ``clock=`` callable."""
        return self._now


class RecordingHook(Hook):
    """A Guard hook that keeps every event it is told, in order.

    Attributes:
        events: ``(name, event)`` pairs; names are ``"decision"``, ``"retry"``, ``"give_up"``,
            ``"budget_exhausted"`` and ``"peer_unavailable"`` (a call a breaker refused).
        fallbacks: every `BudgetFallback` told (a shared budget fell back or recovered), in
            order; they may come from another thread.
        unknown_outcomes: every `UnknownOutcomeEvent` told (a send that may have been
            processed, and how that was resolved), in order.
        breakers: every `BreakerTransition` told (a peer's circuit breaker changed state),
            in order.
        failovers: every `FailoverEvent` told (a call moved to the agent's next interface),
            in order.
        calls: every `CallRecord` told (one per call that ended), in order.
    """

    def __init__(self) -> None:
        self.events: list[tuple[str, GuardEvent]] = []
        self.fallbacks: list[BudgetFallback] = []
        self.unknown_outcomes: list[UnknownOutcomeEvent] = []
        self.breakers: list[BreakerTransition] = []
        self.failovers: list[FailoverEvent] = []
        self.calls: list[CallRecord] = []

    def on_decision(self, event: GuardEvent) -> None:
        """Keep a decision."""
        self.events.append(("decision", event))

    def on_call(self, record: CallRecord) -> None:
        """Keep a call's record."""
        self.calls.append(record)

    def on_retry(self, event: GuardEvent) -> None:
        """Keep a scheduled retry."""
        self.events.append(("retry", event))

    def on_give_up(self, event: GuardEvent) -> None:
        """Keep a give-up."""
        self.events.append(("give_up", event))

    def on_budget_exhausted(self, event: GuardEvent) -> None:
        """Keep a retry the budget refused."""
        self.events.append(("budget_exhausted", event))

    def on_budget_fallback(self, event: BudgetFallback) -> None:
        """Keep a shared budget's fallback or recovery."""
        self.fallbacks.append(event)

    def on_unknown_outcome(self, event: UnknownOutcomeEvent) -> None:
        """Keep how an unknown outcome was resolved."""
        self.unknown_outcomes.append(event)

    def on_breaker(self, event: BreakerTransition) -> None:
        """Keep a breaker's change of state."""
        self.breakers.append(event)

    def on_peer_unavailable(self, event: GuardEvent) -> None:
        """Keep a call an open breaker refused."""
        self.events.append(("peer_unavailable", event))

    def on_failover(self, event: FailoverEvent) -> None:
        """Keep a call's move to the agent's next interface."""
        self.failovers.append(event)

    @property
    def resolutions(self) -> list[str]:
        """How each unknown outcome was resolved, in order (``"found"``, ``"resent"``, ...)."""
        return [event.resolution.value for event in self.unknown_outcomes]

    def names(self) -> list[str]:
        """The kinds of event kept, in order."""
        return [name for name, _ in self.events]

    @property
    def decisions(self) -> list[GuardEvent]:
        """The decision events, in order."""
        return [event for name, event in self.events if name == "decision"]

    @property
    def actions(self) -> list[str]:
        """The actions decided, in order."""
        return [event.decision.action.value for event in self.decisions]


class _Testing:
    """The switch `set_testing` returns: already applied, restored on ``__exit__``."""

    def __init__(self, previous: tuple[bool, int | None]) -> None:
        self._previous = previous

    def __enter__(self) -> None:
        """Nothing to do: the setting applied when `set_testing` was called."""

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        switch_testing(*self._previous)


def set_testing(on: bool = True, *, attempts: int | None = None) -> _Testing:
    """Make every Guard skip its sleeps; with ``attempts``, cap the attempts of each call.

    The cap never raises a Guard's own ``max_attempts``: a call makes
    ``min(attempts, max_attempts)`` attempts at most.

    Applies at once; use it as a context manager to restore the previous setting::

        with set_testing(True, attempts=2):
            ...
    """
    if attempts is not None and attempts < 1:
        msg = "attempts must be at least 1"
        raise ValueError(msg)
    return _Testing(switch_testing(on, attempts))


def error_info(reason: str, metadata: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A ``google.rpc.ErrorInfo`` detail with the A2A domain, in ProtoJSON."""
    return {
        "@type": ERROR_INFO_TYPE,
        "reason": reason,
        "domain": A2A_DOMAIN,
        "metadata": dict(metadata or {}),
    }


def _message(reason: str) -> str:
    return reason.replace("_", " ").capitalize()


def jsonrpc_error(
    reason: Reason | str,
    *,
    request_id: int | str | None = 1,
    message: str | None = None,
    metadata: Mapping[str, str] | None = None,
    code: int | None = None,
) -> dict[str, Any]:
    """A JSON-RPC error response for ``reason``: its code, and ErrorInfo in ``error.data``."""
    name = str(reason)
    row = row_for(name)
    found = code if code is not None else (row.jsonrpc if row is not None else None)
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {
            "code": found if found is not None else -32603,
            "message": message or _message(name),
            "data": [error_info(name, metadata)],
        },
    }


def status_error(
    reason: Reason | str,
    *,
    message: str | None = None,
    metadata: Mapping[str, str] | None = None,
    legacy: bool = False,
) -> tuple[int, dict[str, Any]]:
    """The HTTP+JSON error for ``reason``: (HTTP status, ``google.rpc.Status`` body).

    ``legacy=True`` uses the A2A 1.0.0 table's status (409, 415, 502).
    """
    name = str(reason)
    row = row_for(name)
    http = (row.http_legacy if legacy else row.http) if row is not None else 500
    grpc = (row.grpc_legacy if legacy else row.grpc) if row is not None else "INTERNAL"
    status = http or 500
    return status, {
        "error": {
            "code": status,
            "status": grpc if grpc in GRPC_CODES else "UNKNOWN",
            "message": message or _message(name),
            "details": [error_info(name, metadata)],
        }
    }


def problem_error(
    reason: Reason | str, *, detail: str | None = None, **extra: Any
) -> tuple[int, dict[str, Any]]:
    """The RC-era RFC 9457 problem for ``reason``: (status, body), with any extension members.

    Only the nine A2A errors have a ``type`` URI; other reasons get ``about:blank`` and are
    known by their status alone, as a peer of that era would send them.
    """
    name = str(reason)
    row = row_for(name)
    status = (row.http_legacy if row is not None else None) or 500
    body: dict[str, Any] = {
        "type": row.problem_type if row is not None and row.problem_type else "about:blank",
        "title": _message(name),
        "status": status,
        "detail": detail or _message(name),
    }
    body.update(extra)
    return status, body


def error_response(
    reason: Reason | str,
    *,
    binding: str = "jsonrpc",
    headers: Mapping[str, str] | None = None,
    **kwargs: Any,
) -> httpx.Response:
    """An ``httpx.Response`` carrying ``reason`` as ``binding`` sends it.

    Args:
        reason: the reason.
        binding: ``"jsonrpc"`` (HTTP 200), ``"http+json"`` (google.rpc.Status) or
            ``"problem"`` (RFC 9457, ``application/problem+json``).
        headers: extra response headers (``Retry-After``, say).
        **kwargs: passed to the body builder.
    """
    extra = dict(headers or {})
    if binding == "jsonrpc":
        return httpx.Response(200, json=jsonrpc_error(reason, **kwargs), headers=extra)
    if binding == "http+json":
        status, body = status_error(reason, **kwargs)
        extra.setdefault("content-type", "application/a2a+json")
        return httpx.Response(status, json=body, headers=extra)
    if binding == "problem":
        status, body = problem_error(reason, **kwargs)
        extra.setdefault("content-type", "application/problem+json")
        return httpx.Response(status, json=body, headers=extra)
    msg = f"unknown binding {binding!r}: use 'jsonrpc', 'http+json' or 'problem'"
    raise ValueError(msg)
