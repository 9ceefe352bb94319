"""What the metric hooks share: which metric each event counts, under which labels.

`PrometheusHook` and `OpenTelemetryHook` count the same things with the same label values
(see `METRICS`); only how a value is recorded differs. This base maps each hook event to its
metric key and label values once, and leaves three primitives to each exporter: count one,
observe an amount, and note a peer's retry tokens.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from a2a_client_errors._reasons import Action
from a2a_client_errors.hooks import Hook, first_time
from a2a_client_errors.instrumentation._labels import Labels

if TYPE_CHECKING:
    from collections.abc import Callable

    from a2a_client_errors._breaker import BreakerFallback, BreakerTransition
    from a2a_client_errors._retry import BudgetFallback
    from a2a_client_errors.hooks import (
        CallRecord,
        FailoverEvent,
        GuardEvent,
        JournalEvent,
        TaskOutcomeEvent,
        UnknownOutcomeEvent,
    )


class _Bucketed(Protocol):
    buckets: tuple[float, ...]


M = TypeVar("M", bound=_Bucketed)


class SharedMetrics(Generic[M]):
    """The metrics of each prefix in each home (a registry, a meter): made once, then shared.

    Hooks on the same home and prefix share them (and count a shared change once, see
    `MetricsHook.sink`). A home is held weakly: its metrics go with it.

    Args:
        what: how an error names them (``"metrics"``, ``"instruments"``).
        home: how it names their home (``"registry"``, ``"meter"``).
    """

    def __init__(self, what: str, home: str) -> None:
        self._what = what
        self._home = home
        self._made: weakref.WeakKeyDictionary[Any, dict[str, M]] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def get(
        self, home: object, prefix: str, buckets: tuple[float, ...], make: Callable[[], M]
    ) -> M:
        """The metrics of ``prefix`` in ``home`` (``make`` makes them the first time).

        Raises:
            ValueError: they exist with other histogram buckets.
        """
        with self._lock:
            try:
                by_prefix = self._made.setdefault(home, {})
            except TypeError:  # a home that cannot be weakly referenced: its hook's own
                return make()
            found = by_prefix.get(prefix)
            if found is None:
                found = by_prefix[prefix] = make()
            elif found.buckets != buckets:
                msg = (
                    f"the {prefix!r} {self._what} already exist in this {self._home} with "
                    f"other buckets: use one bucket layout per {self._home} and prefix"
                )
                raise ValueError(msg)
            return found


class MetricsHook(Hook):
    """A `Hook` that counts by `METRICS`; subclasses record (see the module's docstring).

    Attributes:
        labels: folds what the Guard reports into bounded label values.
    """

    labels: Labels
    _shared: object  # the metrics of its home and prefix (`SharedMetrics`), set by a subclass

    @property
    def sink(self) -> object:
        """The metrics shared by every hook on its home (a registry, a meter) and prefix.

        Hooks on the same sink count a shared change once.
        """
        return self._shared

    def _count(self, key: str, values: tuple[str, ...]) -> None:
        """Add one to metric ``key`` under ``values`` (in the order of its labels)."""
        raise NotImplementedError

    def _observe(self, key: str, values: tuple[str, ...], amount: float) -> None:
        """Record ``amount`` in histogram ``key`` under ``values``."""
        raise NotImplementedError

    def _tokens(self, peer: str, tokens: float) -> None:
        """Note the retry tokens a peer (its label) has left."""
        raise NotImplementedError

    def _gauge(self, key: str, values: tuple[str, ...], value: float) -> None:
        """Set gauge ``key`` under ``values`` to ``value``."""
        raise NotImplementedError

    def on_breaker(self, event: BreakerTransition) -> None:
        """Count a breaker's change of state, once per breaker; set its state gauge."""
        if not first_time(self.sink, event):  # told by another hook on the same metrics
            return
        peer = self.labels.peer(event.peer)
        self._count("breaker_transitions", (peer, event.new.value))
        self._gauge("breaker_state", (peer,), float(event.new.level))

    def on_breaker_fallback(self, event: BreakerFallback) -> None:
        """Count a shared breaker deciding locally (or shared again), once per breaker."""
        if not first_time(self.sink, event):
            return
        self._count("breaker_fallbacks", (self.labels.peer(event.peer), event.state.value))

    def on_peer_unavailable(self, event: GuardEvent) -> None:
        """Count a call an open breaker failed fast."""
        self._count(
            "peer_unavailable", (Labels.method(event.operation), self.labels.peer(event.peer))
        )

    def on_call(self, record: CallRecord) -> None:
        """Count a call that ended, by its outcome (one per call, however it ended)."""
        values = (
            Labels.method(record.operation),
            self.labels.peer(record.peer),
            record.outcome,
            Labels.give_up(record.decision),
        )
        self._count("calls", values)

    def on_decision(self, event: GuardEvent) -> None:
        """Count an error by reason (an open breaker's refusal is none); note the budget left."""
        decision = event.decision
        peer = self.labels.peer(event.peer)
        if decision.error is not None and decision.action is not Action.OK:
            method = Labels.method(event.operation)
            self._count("errors", (method, Labels.reason(decision), decision.action.value, peer))
        if event.budget_tokens is not None:
            self._tokens(peer, event.budget_tokens)

    def on_retry(self, event: GuardEvent) -> None:
        """Count a retry and record its delay."""
        decision = event.decision
        method = Labels.method(event.operation)
        peer = self.labels.peer(event.peer)
        self._count("retries", (method, Labels.reason(decision), peer))
        self._observe("retry_delay", (method, peer), decision.delay or 0.0)

    def on_budget_exhausted(self, event: GuardEvent) -> None:
        """Count a retry the budget refused; note the budget left."""
        method = Labels.method(event.operation)
        peer = self.labels.peer(event.peer)
        self._count("budget_exhausted", (method, peer))
        if event.budget_tokens is not None:
            self._tokens(peer, event.budget_tokens)

    def on_budget_fallback(self, event: BudgetFallback) -> None:
        """Count a shared budget falling back to local (or coming back); note its tokens."""
        if not first_time(self.sink, event):
            return
        peer = self.labels.peer(event.peer)
        self._count("budget_fallbacks", (peer, event.state.value))
        self._tokens(peer, event.tokens)

    def on_unknown_outcome(self, event: UnknownOutcomeEvent) -> None:
        """Count an attempt that may have been processed, by how it was resolved."""
        values = (
            Labels.method(event.operation),
            self.labels.peer(event.peer),
            event.resolution.value,
        )
        self._count("unknown_outcomes", values)

    def on_failover(self, event: FailoverEvent) -> None:
        """Count a call moved from one interface of the agent to the next."""
        labels = self.labels
        values = (
            Labels.method(event.operation),
            labels.peer(event.peer),
            labels.peer(event.to),
            event.why,
        )
        self._count("failovers", values)

    def on_journal(self, event: JournalEvent) -> None:
        """Count a step of a journaled send, by its kind."""
        self._count("journal", (self.labels.peer(event.peer), event.kind))

    def on_task_outcome(self, event: TaskOutcomeEvent) -> None:
        """Count a task that came back, by skill and state (never as an error)."""
        values = (
            self.labels.skill(event.skill),
            Labels.state(event.outcome.state),
            self.labels.peer(event.peer),
        )
        self._count("task_outcomes", values)
