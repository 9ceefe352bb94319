"""Prometheus metrics from a Guard's decisions (extra ``prometheus``).

`PrometheusHook` is a `Hook`: pass it to ``Guard(hooks=[...])``. ``prometheus_client`` is
imported when the hook is created, never before; a Guard without it pays nothing.

It exports (with the default prefix ``a2a_client``; labels are folded, see
`a2a_client_errors.instrumentation._labels`):

================================================  =========  ==============================
series                                            type       labels
================================================  =========  ==============================
``a2a_client_calls_total``                        counter    method, peer, outcome, give_up
``a2a_client_errors_total``                       counter    method, reason, action, peer
``a2a_client_retries_total``                      counter    method, reason, peer
``a2a_client_retry_delay_seconds``                histogram  method, peer
``a2a_client_retry_budget_tokens``                gauge      peer
``a2a_client_retry_budget_exhausted_total``       counter    method, peer
``a2a_client_retry_budget_fallbacks_total``       counter    peer, mode
``a2a_client_circuit_breaker_state``              gauge      peer
``a2a_client_circuit_breaker_transitions_total``  counter    peer, state
``a2a_client_circuit_breaker_rejected_total``     counter    method, peer
``a2a_client_circuit_breaker_fallbacks_total``    counter    peer, mode
``a2a_client_unknown_outcomes_total``             counter    method, peer, resolution
``a2a_client_journal_events_total``               counter    peer, event
``a2a_client_task_outcomes_total``                counter    skill, state, peer
================================================  =========  ==============================

``errors`` counts every error decided about, one per attempt: count by ``reason``, not by
status. Task outcomes (a task that came back FAILED) are a separate counter, by skill, and
never reach ``errors``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final

from a2a_client_errors.instrumentation._labels import DEFAULT_DELAY_BUCKETS, METRICS, Labels
from a2a_client_errors.instrumentation._metrics import MetricsHook, SharedMetrics

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from types import ModuleType

    from prometheus_client import CollectorRegistry


__all__ = ["PrometheusHook"]

_INSTALL_HINT: Final = "pip install 'a2a-client-errors[prometheus]'"
_NAME: Final = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def _prometheus_client() -> ModuleType:
    try:
        import prometheus_client  # noqa: PLC0415 (an optional extra, imported on first use)
    except ImportError as exc:  # pragma: no cover (the extra is installed where tests run)
        msg = f"PrometheusHook needs prometheus-client: {_INSTALL_HINT}"
        raise ImportError(msg) from exc
    return prometheus_client


class _Collectors:
    """The metrics of one prefix in one registry, shared by every hook that exports them."""

    def __init__(
        self,
        client: ModuleType,
        registry: CollectorRegistry,
        prefix: str,
        buckets: tuple[float, ...],
    ) -> None:
        self.buckets = buckets
        made: dict[str, Any] = {}
        for spec in METRICS:
            name = f"{prefix}_{spec.prometheus}"
            if spec.kind == "counter":
                made[spec.key] = client.Counter(
                    name, spec.description, spec.labels, registry=registry
                )
            elif spec.kind == "histogram":
                made[spec.key] = client.Histogram(
                    name, spec.description, spec.labels, registry=registry, buckets=buckets
                )
            else:
                made[spec.key] = client.Gauge(
                    name, spec.description, spec.labels, registry=registry
                )
        self.by_key = made
        self.tokens_seen: dict[str, float] = {}  # the gauge's value per peer, as last set


_SHARED: Final[SharedMetrics[_Collectors]] = SharedMetrics("metrics", "registry")


class PrometheusHook(MetricsHook):
    """Count a Guard's decisions, retries, budgets and task outcomes in Prometheus.

    Every metric has bounded labels (see `Labels`). Hooks sharing a registry and a prefix
    share the metrics: two Guards may each get a ``PrometheusHook()``.

    Args:
        registry: the ``CollectorRegistry`` (default: ``prometheus_client.REGISTRY``).
        prefix: the metric name prefix (``a2a_client``).
        peers: peers to label by name: an allow-list, or a function from the peer key to a
            label (None: ``"other"``). Default: the first ``max_peers`` seen.
        skills: the same for skills (``"unknown"`` when the caller did not say).
        max_peers: peer labels kept besides ``"other"``.
        max_skills: skill labels kept besides ``"other"``.
        buckets: the retry-delay histogram's buckets, in seconds.

    Raises:
        ImportError: ``prometheus-client`` is not installed.
        ValueError: the prefix is not a valid metric name, or its metrics are already
            registered with other buckets (or by someone else).

    Example:
        >>> from prometheus_client import CollectorRegistry
        >>> from a2a_client_errors import Guard
        >>> from a2a_client_errors.instrumentation import PrometheusHook
        >>> guard = Guard(hooks=[PrometheusHook(registry=CollectorRegistry())])

    """

    def __init__(
        self,
        *,
        registry: CollectorRegistry | None = None,
        prefix: str = "a2a_client",
        peers: Iterable[str] | Callable[[str], str | None] | None = None,
        skills: Iterable[str] | Callable[[str], str | None] | None = None,
        max_peers: int = 32,
        max_skills: int = 32,
        buckets: Sequence[float] = DEFAULT_DELAY_BUCKETS,
    ) -> None:
        client = _prometheus_client()
        if not _NAME.fullmatch(prefix):
            msg = f"{prefix!r} is not a valid Prometheus metric name prefix"
            raise ValueError(msg)
        self.registry: CollectorRegistry = registry if registry is not None else client.REGISTRY
        self.prefix = prefix
        self.labels = Labels(peers=peers, skills=skills, max_peers=max_peers, max_skills=max_skills)
        layout = tuple(float(b) for b in buckets)
        registry = self.registry
        metrics = self._shared = _SHARED.get(
            registry, prefix, layout, lambda: _Collectors(client, registry, prefix, layout)
        )
        self._metrics = metrics.by_key
        # One cache of label children per metric: a dict lookup instead of .labels() per event.
        self._tokens_seen = metrics.tokens_seen  # shared, like the gauge
        self._children: dict[str, dict[tuple[str, ...], Any]] = {key: {} for key in metrics.by_key}

    def _child(self, key: str, values: tuple[str, ...]) -> Any:
        children = self._children[key]
        child = children.get(values)
        if child is None:
            child = children[values] = self._metrics[key].labels(*values)
        return child

    def _count(self, key: str, values: tuple[str, ...]) -> None:
        self._child(key, values).inc()

    def _observe(self, key: str, values: tuple[str, ...], amount: float) -> None:
        self._child(key, values).observe(amount)

    def _tokens(self, peer: str, tokens: float) -> None:
        seen = self._tokens_seen
        if seen.get(peer) != tokens:
            # A full budget stays full on every success: set the gauge only when it moves.
            seen[peer] = tokens
            self._child("budget_tokens", (peer,)).set(tokens)

    def _gauge(self, key: str, values: tuple[str, ...], value: float) -> None:
        self._child(key, values).set(value)
