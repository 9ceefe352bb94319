"""Metrics and logs from a Guard's hooks: Prometheus, OpenTelemetry, `logging`.

Nothing here is imported by ``a2a_client_errors`` itself, and each optional library is
imported only when its hook is created: a Guard without these hooks pays nothing.

    >>> from a2a_client_errors import Guard
    >>> from a2a_client_errors.instrumentation import LoggingHook
    >>> guard = Guard(hooks=[LoggingHook()])

* `PrometheusHook` (extra ``prometheus``) and `OpenTelemetryHook` (extra ``otel``): errors
  by reason, retries and their delays, retry budgets, and task outcomes by skill, kept apart
  from errors. Labels come from bounded sets (`Labels`).
* `LoggingHook`: one line per decision at a level that fits its action, with structured
  extras; no bodies, no credentials, peer text escaped.
"""

from __future__ import annotations

from a2a_client_errors.instrumentation._labels import (
    METRICS,
    OPERATIONS,
    Labels,
    MetricSpec,
    prometheus_series,
    safe_peer,
)
from a2a_client_errors.instrumentation._logging import DEFAULT_LEVELS, LoggingHook
from a2a_client_errors.instrumentation._opentelemetry import OpenTelemetryHook
from a2a_client_errors.instrumentation._prometheus import PrometheusHook

__all__ = [
    "DEFAULT_LEVELS",
    "METRICS",
    "OPERATIONS",
    "Labels",
    "LoggingHook",
    "MetricSpec",
    "OpenTelemetryHook",
    "PrometheusHook",
    "prometheus_series",
    "safe_peer",
]
