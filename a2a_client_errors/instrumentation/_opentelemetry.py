"""OpenTelemetry metrics from a Guard's decisions (extra ``otel``).

`OpenTelemetryHook` is a `Hook`: pass it to ``Guard(hooks=[...])``. It records the same
metrics as `PrometheusHook`, with the same label names and values, as OpenTelemetry
instruments named ``a2a.client.<name>`` (see `METRICS`):

==========================================  ==========  ===========  ==============================
instrument                                  kind        unit         attributes
==========================================  ==========  ===========  ==============================
``a2a.client.calls``                        counter     ``{call}``   method, peer, outcome, give_up
``a2a.client.errors``                       counter     ``{error}``  method, reason, action, peer
``a2a.client.retries``                      counter     ``{retry}``  method, reason, peer
``a2a.client.retry.delay``                  histogram   ``s``        method, peer
``a2a.client.retry_budget.tokens``          obs. gauge  ``{token}``  peer
``a2a.client.retry_budget.exhausted``       counter     ``{call}``   method, peer
``a2a.client.retry_budget.fallbacks``       counter     ``{event}``  peer, mode
``a2a.client.circuit_breaker.state``        obs. gauge  ``{state}``  peer
``a2a.client.circuit_breaker.transitions``  counter     ``{event}``  peer, state
``a2a.client.circuit_breaker.rejected``     counter     ``{call}``   method, peer
``a2a.client.circuit_breaker.fallbacks``    counter     ``{event}``  peer, mode
``a2a.client.task.outcomes``                counter     ``{task}``   skill, state, peer
==========================================  ==========  ===========  ==============================

Only ``opentelemetry-api`` is needed, imported when the hook is created; the SDK (or any
other implementation) is the application's choice. The budget gauge is observed when the SDK
collects: a call only stores the latest value. Without a configured meter provider the
API's no-op meter records nothing.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from a2a_client_errors.instrumentation._labels import DEFAULT_DELAY_BUCKETS, METRICS, Labels
from a2a_client_errors.instrumentation._metrics import MetricsHook

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from types import ModuleType

    from opentelemetry.metrics import CallbackOptions, Meter, MeterProvider, Observation


__all__ = ["OpenTelemetryHook"]

_INSTALL_HINT: Final = "pip install 'a2a-client-errors[otel]'"
_SCOPE: Final = "a2a_client_errors"
_LABELS: Final = {spec.key: spec.labels for spec in METRICS}


def _metrics_api() -> ModuleType:
    try:
        from opentelemetry import metrics  # noqa: PLC0415 (an optional extra, on first use)
    except ImportError as exc:  # pragma: no cover (the extra is installed where tests run)
        msg = f"OpenTelemetryHook needs opentelemetry-api: {_INSTALL_HINT}"
        raise ImportError(msg) from exc
    return metrics


class OpenTelemetryHook(MetricsHook):
    """Record a Guard's decisions, retries, budgets and task outcomes as OpenTelemetry metrics.

    Args:
        meter_provider: the meter provider (default: the global one).
        meter: a meter to use as it is (wins over ``meter_provider``).
        prefix: the instrument name prefix (``a2a.client``).
        peers: peers to label by name: an allow-list, or a function from the peer key to a
            label (None: ``"other"``). Default: the first ``max_peers`` seen.
        skills: the same for skills (``"unknown"`` when the caller did not say).
        max_peers: peer labels kept besides ``"other"``.
        max_skills: skill labels kept besides ``"other"``.
        buckets: the retry-delay histogram's bucket boundaries (advice to the SDK), seconds.

    Raises:
        ImportError: ``opentelemetry-api`` is not installed.

    Example:
        >>> from opentelemetry.sdk.metrics import MeterProvider
        >>> from a2a_client_errors import Guard
        >>> from a2a_client_errors.instrumentation import OpenTelemetryHook
        >>> guard = Guard(hooks=[OpenTelemetryHook(meter_provider=MeterProvider())])

    """

    def __init__(
        self,
        *,
        meter_provider: MeterProvider | None = None,
        meter: Meter | None = None,
        prefix: str = "a2a.client",
        peers: Iterable[str] | Callable[[str], str | None] | None = None,
        skills: Iterable[str] | Callable[[str], str | None] | None = None,
        max_peers: int = 32,
        max_skills: int = 32,
        buckets: Sequence[float] = DEFAULT_DELAY_BUCKETS,
    ) -> None:
        api = _metrics_api()
        self._observation = api.Observation
        self._tokens_seen: dict[str, float] = {}
        self._gauges: dict[str, dict[tuple[str, ...], float]] = {}
        if meter is None:
            from a2a_client_errors import __version__  # noqa: PLC0415 (no import cycle)

            provider = meter_provider if meter_provider is not None else api.get_meter_provider()
            meter = provider.get_meter(_SCOPE, __version__)
        self.meter: Meter = meter
        self.prefix = prefix
        self.labels = Labels(peers=peers, skills=skills, max_peers=max_peers, max_skills=max_skills)
        instruments: dict[str, Any] = {}
        for spec in METRICS:
            name = f"{prefix}.{spec.otel}"
            if spec.kind == "counter":
                instruments[spec.key] = meter.create_counter(name, spec.unit, spec.description)
            elif spec.kind == "histogram":
                instruments[spec.key] = meter.create_histogram(
                    name,
                    spec.unit,
                    spec.description,
                    explicit_bucket_boundaries_advisory=[float(b) for b in buckets],
                )
            else:
                # Observed when the SDK collects: a call only stores the latest value.
                callback = (
                    self._observe_tokens
                    if spec.key == "budget_tokens"
                    else self._observer_of(spec.key, spec.labels)
                )
                instruments[spec.key] = meter.create_observable_gauge(
                    name, [callback], spec.unit, spec.description
                )
        self._instruments = instruments
        self._attributes: dict[tuple[str, ...], Mapping[str, str]] = {}

    def _attrs(self, names: tuple[str, ...], values: tuple[str, ...]) -> Mapping[str, str]:
        """The attributes of one label combination, built once (labels are bounded)."""
        key = (*names, *values)
        found = self._attributes.get(key)
        if found is None:
            found = self._attributes[key] = MappingProxyType(dict(zip(names, values, strict=True)))
        return found

    def _count(self, key: str, values: tuple[str, ...]) -> None:
        self._instruments[key].add(1, self._attrs(_LABELS[key], values))

    def _observe(self, key: str, values: tuple[str, ...], amount: float) -> None:
        self._instruments[key].record(amount, self._attrs(_LABELS[key], values))

    def _tokens(self, peer: str, tokens: float) -> None:
        self._tokens_seen[peer] = tokens

    def _gauge(self, key: str, values: tuple[str, ...], value: float) -> None:
        self._gauges.setdefault(key, {})[values] = value

    def _observer_of(
        self, key: str, names: tuple[str, ...]
    ) -> Callable[[CallbackOptions], Iterable[Observation]]:
        """The callback of gauge ``key``: its values last set, when the SDK collects."""

        def observe(options: CallbackOptions) -> Iterable[Observation]:
            observation = self._observation
            return [
                observation(value, self._attrs(names, values))
                for values, value in list(self._gauges.get(key, {}).items())
            ]

        return observe

    def _observe_tokens(self, options: CallbackOptions) -> Iterable[Observation]:
        """The retry tokens last seen per peer, when the SDK collects."""
        observation = self._observation
        return [
            observation(tokens, self._attrs(("peer",), (peer,)))
            for peer, tokens in list(self._tokens_seen.items())
        ]
