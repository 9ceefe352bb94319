"""Bounded label values, and the metrics every instrumentation hook exports.

A metric label must come from a bounded set, or a misbehaving peer (or a typo in a skill id)
creates a new time series per request. `Labels` folds every value a Guard sees into one:

============  ==========================================================================
label         values
============  ==========================================================================
``method``    the A2A operations (`OPERATIONS`); ``"other"`` for any other name,
              ``"unknown"`` when the call did not say
``reason``    a known `Reason` (``TASK_NOT_FOUND``, ...); ``"OTHER"`` for a reason this
              package does not know; with no reason at all, the signal that decided:
              ``TRANSPORT_<FAILURE>`` (``TRANSPORT_TIMEOUT``), ``HTTP_<STATUS>``
              (``HTTP_503``), ``GRPC_<CODE>`` (``GRPC_UNAVAILABLE``), else ``"UNSPECIFIED"``
``action``    the `Action` values
``peer``      the allow-list given, or the mapping function's answer, or (by default) the
              first ``max_peers`` peers seen; anything else is ``"other"`` (and an empty
              key ``"unknown"``). A URL loses its credentials, query and fragment first.
``skill``     as ``peer``, with ``max_skills``; ``"unknown"`` when the caller did not say
``state``     the A2A task states (``TASK_STATE_FAILED``, ...); ``"OTHER"`` for any other
``outcome``   how a call ended: ``"ok"``; ``"gave_up"`` when a retry the policy wanted did
              not happen (`GiveUp`); else the action of its final decision (``reconcile``,
              ``degrade``, ``fix_request``, ``report``, ``auth``)
``give_up``   why a call gave up: the `GiveUp` values (``attempts``, ``budget``,
              ``deadline``, ``outcome_unknown``, ``peer_unavailable``, ...); ``""`` (no
              label, to Prometheus) for a call that did not
============  ==========================================================================

`METRICS` names the metrics themselves, for both exporters (see `MetricSpec`).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from a2a_client_errors._errors import safe_peer
from a2a_client_errors._reasons import (
    A2A_OPERATIONS,
    ACTIVE_STATES,
    GRPC_CODES,
    INTERRUPTED_STATES,
    TERMINAL_STATES,
    Reason,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from a2a_client_errors._policy import Decision

__all__ = [
    "DEFAULT_DELAY_BUCKETS",
    "METRICS",
    "OPERATIONS",
    "OTHER",
    "OTHER_REASON",
    "UNKNOWN",
    "Labels",
    "MetricSpec",
    "prometheus_series",
    "safe_peer",
]

OTHER: Final = "other"
"""The peer, skill or method label of every value outside the bounded set."""
UNKNOWN: Final = "unknown"
"""The skill or method label when the caller did not name one."""
OTHER_REASON: Final = "OTHER"
"""The reason label of a reason this package does not know (and of unknown task states)."""
UNSPECIFIED: Final = "UNSPECIFIED"
"""The reason label of an error no signal named a reason or a status for."""

OPERATIONS: Final[frozenset[str]] = A2A_OPERATIONS
"""The A2A 1.0 operations: the values of the ``method`` label (with "other", "unknown")."""

TASK_STATES: Final[frozenset[str]] = frozenset(
    {*TERMINAL_STATES, *INTERRUPTED_STATES, *ACTIVE_STATES, "TASK_STATE_UNSPECIFIED"}
)
DEFAULT_DELAY_BUCKETS: Final[tuple[float, ...]] = (
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    20.0,
    30.0,
    60.0,
)
"""Retry-delay histogram buckets, in seconds: the backoff's range up to ``max_retry_after``."""

_MAX_LABEL: Final = 128
_CACHE: Final = 4096
_log = logging.getLogger("a2a_client_errors")


class _Folder:
    """Folds free-form values into at most ``cap`` labels (plus `OTHER`); thread-safe."""

    __slots__ = ("_allowed", "_cap", "_failed", "_kept", "_lock", "_map", "_seen", "_what")

    def __init__(
        self, spec: Iterable[str] | Callable[[str], str | None] | None, cap: int, what: str
    ) -> None:
        if cap < 0:
            msg = f"max_{what}s must not be negative"
            raise ValueError(msg)
        self._what = what
        self._cap = cap
        self._allowed: frozenset[str] | None = None
        self._map: Callable[[str], str | None] | None = None
        if isinstance(spec, str):
            msg = f"{what}s: give an allow-list of names or a function, not one string"
            raise TypeError(msg)
        if callable(spec):
            self._map = spec
        elif spec is not None:
            self._allowed = frozenset(spec)
        self._seen: dict[str, str] = {}
        self._kept: set[str] = set()
        self._lock = threading.Lock()
        self._failed = False

    def __call__(self, value: str) -> str:
        found = self._seen.get(value)
        if found is not None:
            return found
        with self._lock:
            label = self._fold(value)
            if len(self._seen) < _CACHE:
                self._seen[value] = label
        return label

    def _fold(self, value: str) -> str:
        allowed = self._allowed
        if allowed is not None:
            if value in allowed:
                return value
            clean = safe_peer(value)
            return clean if clean in allowed else OTHER
        if self._map is not None:
            try:
                mapped = self._map(value)
            except Exception:
                if not self._failed:  # said once: a broken mapping must not flood the log
                    self._failed = True
                    _log.warning("a2a_client_errors: the %s label function failed", self._what)
                return OTHER
            if not isinstance(mapped, str) or not mapped:
                return OTHER
            value = mapped
        label = safe_peer(value) or UNKNOWN
        if label in (OTHER, UNKNOWN) or label in self._kept:
            return label
        if len(self._kept) >= self._cap:
            return OTHER
        self._kept.add(label)
        return label


class Labels:
    """Folds what a Guard reports into bounded label values (see the module's table).

    Args:
        peers: the peers to label by name: an allow-list, or a function from the Guard's peer
            key to a label (None folds it into ``"other"``). Default: the first
            ``max_peers`` peers seen, by their key.
        skills: the same for skills.
        max_peers: at most this many peer labels besides ``"other"`` (for the default and
            for a function).
        max_skills: the same for skills.

    Example:
        >>> labels = Labels(peers=["https://billing.example:443"])
        >>> labels.peer("https://billing.example:443"), labels.peer("https://x.example:443")
        ('https://billing.example:443', 'other')

    """

    __slots__ = ("_peers", "_skills")

    def __init__(
        self,
        *,
        peers: Iterable[str] | Callable[[str], str | None] | None = None,
        skills: Iterable[str] | Callable[[str], str | None] | None = None,
        max_peers: int = 32,
        max_skills: int = 32,
    ) -> None:
        self._peers = _Folder(peers, max_peers, "peer")
        self._skills = _Folder(skills, max_skills, "skill")

    def peer(self, peer: str) -> str:
        """The label of a peer key."""
        return self._peers(peer)

    def skill(self, skill: str | None) -> str:
        """The label of a skill id (``"unknown"`` when None or empty)."""
        if not skill:
            return UNKNOWN
        return self._skills(skill)

    @staticmethod
    def method(operation: str | None) -> str:
        """The label of an operation: one of `OPERATIONS`, ``"other"`` or ``"unknown"``."""
        if operation is None:
            return UNKNOWN
        return operation if operation in OPERATIONS else OTHER

    @staticmethod
    def reason(decision: Decision) -> str:
        """The label of a decision's reason (see the module's table)."""
        reason = decision.reason
        if isinstance(reason, Reason):
            return reason.value
        if reason is not None:
            return OTHER_REASON
        error = decision.error
        if error is None:
            return UNSPECIFIED
        if error.transport is not None:
            return f"TRANSPORT_{error.transport.value.upper()}"
        if error.grpc_status is not None:
            name = error.grpc_status
            return f"GRPC_{name}" if name in GRPC_CODES else UNSPECIFIED
        status = error.http_status
        if status is not None and 100 <= status <= 599:
            return f"HTTP_{status}"
        return UNSPECIFIED

    @staticmethod
    def give_up(decision: Decision) -> str:
        """The label of why a call gave up: a `GiveUp` value, or ``""`` when it did not."""
        give_up = decision.give_up
        return "" if give_up is None else give_up.value

    @staticmethod
    def state(state: str) -> str:
        """The label of a task state: its 1.0 name, or ``"OTHER"``."""
        return state if state in TASK_STATES else OTHER_REASON


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One metric the hooks export, under both naming schemes.

    Attributes:
        key: a short name for it (``"errors"``).
        kind: ``"counter"``, ``"histogram"`` or ``"gauge"``.
        prometheus: the Prometheus name after the prefix, without ``_total``
            (``"errors"`` is exported as ``a2a_client_errors_total``).
        otel: the OpenTelemetry instrument name after the prefix (``"retry.delay"``).
        unit: the OpenTelemetry unit (UCUM; ``{call}`` style annotations for counts).
        labels: its label names, in order.
        description: what it counts.

    """

    key: str
    kind: Literal["counter", "histogram", "gauge"]
    prometheus: str
    otel: str
    unit: str
    labels: tuple[str, ...]
    description: str


METRICS: Final[tuple[MetricSpec, ...]] = (
    MetricSpec(
        "calls",
        "counter",
        "calls",
        "calls",
        "{call}",
        ("method", "peer", "outcome", "give_up"),
        "Guarded calls by how they ended: ok, gave_up (a retry that did not happen; give_up "
        "says why), or the action of the final decision.",
    ),
    MetricSpec(
        "errors",
        "counter",
        "errors",
        "errors",
        "{error}",
        ("method", "reason", "action", "peer"),
        "Errors decided about (transport, auth, call errors), one per attempt, by reason. "
        "Task outcomes (a FAILED task) are never counted here.",
    ),
    MetricSpec(
        "retries",
        "counter",
        "retries",
        "retries",
        "{retry}",
        ("method", "reason", "peer"),
        "Retries scheduled, by the reason of the error retried.",
    ),
    MetricSpec(
        "retry_delay",
        "histogram",
        "retry_delay_seconds",
        "retry.delay",
        "s",
        ("method", "peer"),
        "Seconds slept before each retry (backoff with jitter, floored by server hints).",
    ),
    MetricSpec(
        "budget_tokens",
        "gauge",
        "retry_budget_tokens",
        "retry_budget.tokens",
        "{token}",
        ("peer",),
        "Retry tokens left in the peer's budget, as last seen.",
    ),
    MetricSpec(
        "budget_exhausted",
        "counter",
        "retry_budget_exhausted",
        "retry_budget.exhausted",
        "{call}",
        ("method", "peer"),
        "Retries refused by the peer's retry budget (the call failed fast).",
    ),
    MetricSpec(
        "budget_fallbacks",
        "counter",
        "retry_budget_fallbacks",
        "retry_budget.fallbacks",
        "{event}",
        ("peer", "mode"),
        "A shared retry budget (on Redis) that fell back to a local bucket (mode local) or "
        "came back (mode shared).",
    ),
    MetricSpec(
        "breaker_state",
        "gauge",
        "circuit_breaker_state",
        "circuit_breaker.state",
        "{state}",
        ("peer",),
        "The peer's circuit breaker, as last seen: 0 closed, 1 half-open (one probe at a "
        "time), 2 open (calls fail fast with PeerUnavailable).",
    ),
    MetricSpec(
        "breaker_transitions",
        "counter",
        "circuit_breaker_transitions",
        "circuit_breaker.transitions",
        "{event}",
        ("peer", "state"),
        "Changes of a peer's circuit breaker, by the state entered (open, half_open, closed).",
    ),
    MetricSpec(
        "breaker_fallbacks",
        "counter",
        "circuit_breaker_fallbacks",
        "circuit_breaker.fallbacks",
        "{event}",
        ("peer", "mode"),
        "A shared circuit breaker (on Redis) that decides locally (mode local) or is shared "
        "again (mode shared).",
    ),
    MetricSpec(
        "peer_unavailable",
        "counter",
        "circuit_breaker_rejected",
        "circuit_breaker.rejected",
        "{call}",
        ("method", "peer"),
        "Calls an open circuit breaker failed fast (PeerUnavailable): nothing was sent.",
    ),
    MetricSpec(
        "unknown_outcomes",
        "counter",
        "unknown_outcomes",
        "unknown_outcomes",
        "{call}",
        ("method", "peer", "resolution"),
        "Attempts of calls that create work (SendMessage) that may have been processed, by how "
        "the outcome was made known: found (the task was the answer), resent (absent by the "
        "declared listing contract, and sent again), not_found (absent by it, the call ended "
        "before a resend), unresolved (not found: OutcomeUnknown, nothing resent), "
        "deduplicating (the peer deduplicates, and the message was sent again).",
    ),
    MetricSpec(
        "failovers",
        "counter",
        "failovers",
        "failovers",
        "{call}",
        ("method", "peer", "to", "why"),
        "Calls moved from one interface of the agent (peer) to its next (to), nothing sent on "
        "the first: why not_sent (it was not reached) or breaker_open. The interface that "
        'served a call is the peer of its calls_total{outcome="ok"}.',
    ),
    MetricSpec(
        "journal",
        "counter",
        "journal_events",
        "journal.events",
        "{event}",
        ("peer", "event"),
        "Steps of journaled sends (Guard(journal=...)): recorded (before the first byte), "
        "settled, released (left open, outcome unknown), waited (another process sends it), "
        "took_over (its sender was gone), replayed (sent before: its answer read back), "
        "mismatch (another body), recovered, failed (the journal could not be written).",
    ),
    MetricSpec(
        "task_outcomes",
        "counter",
        "task_outcomes",
        "task.outcomes",
        "{task}",
        ("skill", "state", "peer"),
        "Tasks that came back in successful calls, by state: results, not protocol errors.",
    ),
)
"""Every metric the hooks export (`PrometheusHook` and `OpenTelemetryHook` alike)."""


def prometheus_series(prefix: str = "a2a_client") -> dict[str, tuple[str, ...]]:
    """Every series name `PrometheusHook` exports under ``prefix``, with its label names.

    Counters give ``<name>_total`` (and ``<name>_created``); histograms ``_bucket`` (with
    ``le``), ``_sum``, ``_count`` (and ``_created``); gauges their name.
    """
    series: dict[str, tuple[str, ...]] = {}
    for spec in METRICS:
        base = f"{prefix}_{spec.prometheus}"
        if spec.kind == "counter":
            series[f"{base}_total"] = spec.labels
            series[f"{base}_created"] = spec.labels
        elif spec.kind == "histogram":
            series[f"{base}_bucket"] = (*spec.labels, "le")
            for suffix in ("_sum", "_count", "_created"):
                series[base + suffix] = spec.labels
        else:
            series[base] = spec.labels
    return series
