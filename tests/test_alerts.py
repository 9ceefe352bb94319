"""docs/alerts.yml: every rule is well formed and speaks only of what PrometheusHook exports.

promtool checks the PromQL itself and runs docs/alerts_test.yml in CI; this file checks what
promtool cannot know: that each series, label and label value a rule names exists.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from a2a_client_errors import Action, GiveUp, Reason
from a2a_client_errors.instrumentation import prometheus_series
from a2a_client_errors.instrumentation._labels import OPERATIONS, TASK_STATES

DOCS = Path(__file__).resolve().parent.parent / "docs"
RULES = yaml.safe_load((DOCS / "alerts.yml").read_text(encoding="utf-8"))
UNIT_TESTS = yaml.safe_load((DOCS / "alerts_test.yml").read_text(encoding="utf-8"))
ALL_RULES: list[dict[str, Any]] = [rule for group in RULES["groups"] for rule in group["rules"]]
ALERTS = [rule for rule in ALL_RULES if "alert" in rule]
RECORDS = [rule for rule in ALL_RULES if "record" in rule]
SERIES = prometheus_series()

DURATION = re.compile(r"(\d+(ms|s|m|h|d|w|y))+")
PROMQL_WORDS = {
    "sum", "min", "max", "avg", "count", "rate", "increase", "irate", "by", "without", "on",
    "ignoring", "group_left", "group_right", "offset", "unless", "or", "and", "bool",
    "max_over_time", "min_over_time", "avg_over_time", "histogram_quantile", "abs", "clamp_min",
    "vector", "scalar", "time", "topk", "bottomk", "absent", "label_replace",
}  # fmt: skip
LABEL_VALUES: dict[str, set[str]] = {
    "reason": {r.value for r in Reason} | {"OTHER", "UNSPECIFIED"},
    "action": {a.value for a in Action},
    "outcome": {a.value for a in Action} - {"retry"} | {"gave_up"},
    "give_up": {g.value for g in GiveUp} | {""},
    "state": set(TASK_STATES) | {"OTHER"},
    "method": set(OPERATIONS) | {"other", "unknown"},
    "mode": {"local", "shared"},
}
STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}")
MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*')
GROUPING = re.compile(r"\b(?:by|without|on|ignoring)\s*\(([^)]*)\)")
IDENTIFIER = re.compile(r"(?<![\w:.])([a-zA-Z_:][a-zA-Z0-9_:]*)")


def _recorded() -> dict[str, set[str]]:
    """Each recording rule's name and the labels it keeps (its outermost ``by``)."""
    found: dict[str, set[str]] = {}
    for rule in RECORDS:
        grouping = GROUPING.search(rule["expr"])
        assert grouping is not None, rule["record"]
        found[rule["record"]] = {label.strip() for label in grouping.group(1).split(",")}
    return found


RECORDED = _recorded()
KNOWN: dict[str, set[str]] = {name: set(labels) for name, labels in SERIES.items()} | RECORDED


def _metrics_of(expr: str) -> set[str]:
    """The series an expression names (PromQL words, labels, numbers and durations aside)."""
    text = STRING.sub('""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = GROUPING.sub(" ", text)
    text = re.sub(r"\boffset\s+\w+", " ", text)
    return {
        word
        for word in IDENTIFIER.findall(text)
        if word not in PROMQL_WORDS and not DURATION.fullmatch(word)
    }


def _ids(rules: list[dict[str, Any]], key: str) -> list[str]:
    return [rule[key] for rule in rules]


def test_the_file_has_the_rules_the_advice_asks_for() -> None:
    """Groups are named once; the alerts cover the operating advice."""
    names = [group["name"] for group in RULES["groups"]]
    assert len(names) == len(set(names))
    assert set(_ids(ALERTS, "alert")) == {
        "A2AInvalidAgentResponse",
        "A2AVersionNotSupportedRising",
        "A2ARetryBudgetExhausted",
        "A2AAuthFailing",
        "A2ATaskFailureRateHigh",
        "A2ARetryBudgetNotShared",
        "A2ACircuitBreakerOpen",
    }
    for rules, key in ((ALERTS, "alert"), (RECORDS, "record")):
        assert len(_ids(rules, key)) == len(set(_ids(rules, key)))


@pytest.mark.parametrize(
    "rule", ALL_RULES, ids=[r.get("alert", r.get("record")) for r in ALL_RULES]
)
def test_every_rule_is_well_formed(rule: dict[str, Any]) -> None:
    """Required keys only, durations that parse, severities and annotations on alerts."""
    assert ("alert" in rule) != ("record" in rule)
    assert isinstance(rule["expr"], str)
    assert rule["expr"].strip()
    if "record" in rule:
        assert set(rule) <= {"record", "expr", "labels"}
        assert re.fullmatch(r"[a-zA-Z_]\w*:[a-zA-Z_:]\w*:[\w:]+", rule["record"])
        return
    assert set(rule) <= {"alert", "expr", "for", "keep_firing_for", "labels", "annotations"}
    assert re.fullmatch(r"A2A[A-Z][A-Za-z0-9]+", rule["alert"])
    if "for" in rule:
        assert DURATION.fullmatch(rule["for"]), rule["for"]
    assert rule["labels"]["severity"] in {"critical", "warning"}
    assert {"summary", "description"} <= set(rule["annotations"])
    kept = set()
    grouping = GROUPING.search(rule["expr"])
    if grouping is not None:
        kept = {label.strip() for label in grouping.group(1).split(",")}
    for text in rule["annotations"].values():
        for label in re.findall(r"\$labels\.(\w+)", text):
            assert label in kept, f"{rule['alert']} shows {label}, which its expr drops"


@pytest.mark.parametrize(
    "rule", ALL_RULES, ids=[r.get("alert", r.get("record")) for r in ALL_RULES]
)
def test_every_series_and_label_exists(rule: dict[str, Any]) -> None:
    """Each series named is exported by PrometheusHook (or recorded here), with those labels."""
    expr = rule["expr"]
    metrics = _metrics_of(expr)
    assert metrics, "a rule reads at least one series"
    for metric in metrics:
        assert metric in KNOWN, f"{metric} is not exported by PrometheusHook"
    for metric, matchers in SELECTOR.findall(expr):
        for label, _op, value in MATCHER.findall(matchers):
            assert label in KNOWN[metric], f"{metric} has no label {label}"
            allowed = LABEL_VALUES.get(label)
            if allowed is not None:
                assert set(value.split("|")) <= allowed, f"{label}={value!r}"
    available = set().union(*(KNOWN[metric] for metric in metrics))
    for grouping in GROUPING.findall(expr):
        for label in grouping.split(","):
            assert label.strip() in available, f"no series of the rule has {label.strip()!r}"


def test_task_not_cancelable_never_pages() -> None:
    """TASK_NOT_CANCELABLE is recorded for dashboards and in no alert at all."""
    assert not [a["alert"] for a in ALERTS if "TASK_NOT_CANCELABLE" in a["expr"]]
    assert any("TASK_NOT_CANCELABLE" in r["expr"] for r in RECORDS)


def test_task_failures_are_kept_apart_from_protocol_errors() -> None:
    """The task failure ratio and its alert read task outcomes only, by skill."""
    ratio = next(r for r in RECORDS if r["record"] == "a2a_client:task_failure_ratio:rate30m")
    alert = next(a for a in ALERTS if a["alert"] == "A2ATaskFailureRateHigh")
    for expr in (ratio["expr"], alert["expr"]):
        assert _metrics_of(expr) <= {
            "a2a_client_task_outcomes_total",
            "a2a_client:task_failure_ratio:rate30m",
        }
        assert "by (skill)" in expr
    assert not [a["alert"] for a in ALERTS if a is not alert and "task_outcomes" in a["expr"]]


def test_version_not_supported_names_the_peer() -> None:
    """The version alert groups by peer and says which peer in its summary."""
    alert = next(a for a in ALERTS if a["alert"] == "A2AVersionNotSupportedRising")
    assert 'reason="VERSION_NOT_SUPPORTED"' in alert["expr"]
    assert set(GROUPING.findall(alert["expr"])) == {"peer"}
    assert "{{ $labels.peer }}" in alert["annotations"]["summary"]


def test_every_alert_has_a_promtool_unit_test_that_fires_it() -> None:
    """docs/alerts_test.yml expects each alert to fire somewhere, and reads the same file."""
    assert UNIT_TESTS["rule_files"] == ["alerts.yml"]
    fired = {
        case["alertname"]
        for test in UNIT_TESTS["tests"]
        for case in test.get("alert_rule_test", [])
        if case["exp_alerts"]
    }
    assert fired == set(_ids(ALERTS, "alert"))
    for test in UNIT_TESTS["tests"]:
        for series in test["input_series"]:
            name = series["series"].split("{", 1)[0]
            assert name in SERIES, name


def test_the_checker_finds_what_is_wrong() -> None:
    """The helpers above are not vacuous: they see series, labels and groupings."""
    expr = 'sum by (peer) (rate(a2a_client_nope_total{reason="X"}[5m] offset 1h)) > 2'
    assert _metrics_of(expr) == {"a2a_client_nope_total"}
    assert SELECTOR.findall(expr) == [("a2a_client_nope_total", 'reason="X"')]
    assert GROUPING.findall(expr) == ["peer"]
