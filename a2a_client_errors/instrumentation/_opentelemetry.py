"""OpenTelemetry metrics from a Guard's decisions (extra ``otel``).

`OpenTelemetryHook` is a `Hook`: pass it to ``Guard(hooks=[...])``. It records the same
metrics as `PrometheusHook`, with the same label names and values, as OpenTelemetry
instruments named ``a2a.client.<name>`` (see `METRICS`):

==========================================  ==========  ===========  ==============================
instrument                                  kind        unit         attributes
==========================================  ==========  ===========  ==============================
``a2a.client.calls``                        obs. count  ``{call}``   method, peer, outcome, give_up
``a2a.client.errors``                       obs. count  ``{error}``  method, reason, action, peer
``a2a.client.retries``                      obs. count  ``{retry}``  method, reason, peer
``a2a.client.retry.delay``                  histogram   ``s``        method, peer
``a2a.client.retry_budget.tokens``          obs. gauge  ``{token}``  peer
``a2a.client.retry_budget.exhausted``       obs. count  ``{call}``   method, peer
``a2a.client.retry_budget.fallbacks``       obs. count  ``{event}``  peer, mode
``a2a.client.circuit_breaker.state``        obs. gauge  ``{state}``  peer
``a2a.client.circuit_breaker.transitions``  obs. count  ``{event}``  peer, state
``a2a.client.circuit_breaker.rejected``     obs. count  ``{call}``   method, peer
``a2a.client.circuit_breaker.fallbacks``    obs. count  ``{event}``  peer, mode
``a2a.client.task.outcomes``                obs. count  ``{task}``   skill, state, peer
==========================================  ==========  ===========  ==============================

Only ``opentelemetry-api`` is needed, imported when the hook is created; the SDK (or any
other implementation) is the application's choice. Without a configured meter provider the
API's no-op meter records nothing.

The counts are observable counters (obs. count): a call adds one to the hook's own tally
(under a lock), and the SDK reads the totals when it collects, as it reads the gauges' last
values. A synchronous ``Counter.add`` costs the SDK about 7 µs (its measurement pipeline and
exemplar filter), paid on every success; a tally costs a fraction of one. The totals are
cumulative and monotonic, so every exporter reads them as it reads a counter's sums
(delta temporality included); what is lost is the exemplar a synchronous measurement may
carry of the span it was made in. The retry-delay histogram stays synchronous: it is
recorded on retries only.
"""

from __future__ import annotations

import threading
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from a2a_client_errors.instrumentation._labels import DEFAULT_DELAY_BUCKETS, METRICS, Labels
from a2a_client_errors.instrumentation._metrics import MetricsHook, SharedMetrics

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


class _Instruments:
    """The instruments of one prefix on one meter, and what their callbacks read.

    Shared by every hook on that meter and prefix (the SDK keeps one instrument per name, and
    the callbacks of an instrument created twice would be dropped): each counter's totals
    and each gauge's last values, by label values. A count is a read and a write, under the
    lock; a gauge's value is one write.
    """

    def __init__(
        self, api: ModuleType, meter: Meter, prefix: str, buckets: tuple[float, ...]
    ) -> None:
        self.buckets = buckets
        self.observation = api.Observation
        self.lock = threading.Lock()
        self.values: dict[str, dict[tuple[str, ...], float]] = {
            spec.key: {} for spec in METRICS if spec.kind != "histogram"
        }
        self.attributes: dict[tuple[str, ...], Mapping[str, str]] = {}
        made: dict[str, Any] = {}
        for spec in METRICS:
            name = f"{prefix}.{spec.otel}"
            if spec.kind == "counter":
                made[spec.key] = meter.create_observable_counter(
                    name, [self._observer_of(spec.key, spec.labels)], spec.unit, spec.description
                )
            elif spec.kind == "histogram":
                made[spec.key] = meter.create_histogram(
                    name,
                    spec.unit,
                    spec.description,
                    explicit_bucket_boundaries_advisory=list(buckets),
                )
            else:
                # Observed when the SDK collects: a call only stores the latest value.
                made[spec.key] = meter.create_observable_gauge(
                    name, [self._observer_of(spec.key, spec.labels)], spec.unit, spec.description
                )
        self.by_key = made

    def attrs(self, names: tuple[str, ...], values: tuple[str, ...]) -> Mapping[str, str]:
        """The attributes of one label combination, built once (labels are bounded)."""
        key = (*names, *values)
        found = self.attributes.get(key)
        if found is None:
            found = self.attributes[key] = MappingProxyType(dict(zip(names, values, strict=True)))
        return found

    def _observer_of(
        self, key: str, names: tuple[str, ...]
    ) -> Callable[[CallbackOptions], Iterable[Observation]]:
        """The callback of ``key``: a counter's totals, a gauge's last values, when collected."""
        current = self.values[key]

        def observe(options: CallbackOptions) -> Iterable[Observation]:
            with self.lock:
                seen = list(current.items())
            observation = self.observation
            return [observation(value, self.attrs(names, values)) for values, value in seen]

        return observe


_SHARED: Final[SharedMetrics[_Instruments]] = SharedMetrics("instruments", "meter")


class OpenTelemetryHook(MetricsHook):
    """Record a Guard's decisions, retries, budgets and task outcomes as OpenTelemetry metrics.

    Hooks on the same meter and prefix share the instruments and their counts: two Guards
    may each get an ``OpenTelemetryHook(meter_provider=provider)``.

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
        ValueError: the instruments already exist on this meter and prefix with other buckets.

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
        if meter is None:
            from a2a_client_errors import __version__  # noqa: PLC0415 (no import cycle)

            provider = meter_provider if meter_provider is not None else api.get_meter_provider()
            meter = provider.get_meter(_SCOPE, __version__)
        self.meter: Meter = meter
        self.prefix = prefix
        self.labels = Labels(peers=peers, skills=skills, max_peers=max_peers, max_skills=max_skills)
        layout = tuple(float(b) for b in buckets)
        shared: _Instruments = _SHARED.get(
            meter, prefix, layout, lambda: _Instruments(api, meter, prefix, layout)
        )
        self._shared = shared
        self._instruments = shared.by_key
        self._values = shared.values
        self._lock = shared.lock
        self._attrs = shared.attrs

    def _count(self, key: str, values: tuple[str, ...]) -> None:
        tally = self._values[key]
        with self._lock:
            tally[values] = tally.get(values, 0) + 1

    def _observe(self, key: str, values: tuple[str, ...], amount: float) -> None:
        self._instruments[key].record(amount, self._attrs(_LABELS[key], values))

    def _tokens(self, peer: str, tokens: float) -> None:
        self._values["budget_tokens"][peer,] = tokens

    def _gauge(self, key: str, values: tuple[str, ...], value: float) -> None:
        self._values[key][values] = value
