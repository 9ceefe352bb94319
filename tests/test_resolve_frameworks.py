""".ci/resolve_frameworks.py: the reading of pip's reports and their checks, on saved reports.

tests/data/pip_reports_frameworks.json holds, per scenario, pip's ``--report`` of it as it
resolved when it was written (``--save``: cut to the distributions the scenario names). No pip
runs here.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "data" / "pip_reports_frameworks.json"
FRAMEWORKS = {
    "strands-agents": "strands-agents[a2a]",
    "beeai-framework": "beeai-framework[a2a]",
    "google-adk": "google-adk",
    "agno": "agno[a2a]",
    "crewai": "crewai[a2a]",
    "fasta2a": "fasta2a",
    "agent-framework-a2a": "agent-framework-a2a",
}
"""Each framework docs/integrations.md covers, and what its install command names."""


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "resolve_frameworks", ROOT / ".ci" / "resolve_frameworks.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses read their module while being made
    spec.loader.exec_module(module)
    return module


rf = _load()
BY_NAME = {scenario.name: scenario for scenario in rf.SCENARIOS}


def _report(name: str) -> dict[str, Any]:
    reports: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    report: dict[str, Any] = reports[name]
    return report


def _with(report: dict[str, Any], name: str, version: str | None) -> dict[str, Any]:
    """The report with one distribution at another version (None: left out)."""
    changed = copy.deepcopy(report)
    changed["install"] = [
        item for item in changed["install"] if rf.canonical(item["metadata"]["name"]) != name
    ]
    if version is not None:
        changed["install"].append({"metadata": {"name": name, "version": version}})
    return changed


def test_every_framework_is_resolved_alone_and_required() -> None:
    """One required scenario per framework: the project's extra and the docs' command alone."""
    for name, requirement in FRAMEWORKS.items():
        scenario = BY_NAME[name]
        assert scenario.required
        assert scenario.requirements == ("-e", ".[a2a]", requirement)
        assert set(scenario.minimums) == {"a2a-client-errors", name, "a2a-sdk"}


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_each_saved_resolution_is_checked_as_it_was(name: str) -> None:
    """Every required scenario's saved resolution passes; the informational one has its note."""
    problems = rf.check(_report(name), BY_NAME[name])
    if BY_NAME[name].required:
        assert problems == []
    else:
        assert problems == ["google-adk 1.10.0 is older than 2.13.0"]


@pytest.mark.parametrize(
    ("scenario", "name", "version", "problem"),
    [
        # what pip gave while the extra capped a2a-sdk at <2
        ("strands-agents", "strands-agents", "0.3.0", "strands-agents 0.3.0 is older than 1.62.0"),
        (
            "beeai-framework",
            "beeai-framework",
            "0.1.21",
            "beeai-framework 0.1.21 is older than 0.1.85",
        ),
        ("agno", "agno", "2.5.17", "agno 2.5.17 is older than 3.1.10"),
        ("crewai", "crewai", "1.2.1", "crewai 1.2.1 is older than 1.15.30"),
        ("strands-agents", "a2a-sdk", "1.3.0", "a2a-sdk 1.3.0 is not below 0.4"),
        # a pre-release is older than the release, and an older beta older than the newest
        (
            "agent-framework-a2a",
            "agent-framework-a2a",
            "1.0.0b251001",
            "agent-framework-a2a 1.0.0b251001 is older than 1.0.0b261022",
        ),
        ("google-adk", "google-adk", "2.13.0rc1", "google-adk 2.13.0rc1 is older than 2.13.0"),
        ("fasta2a", "a2a-sdk", "0.3.26", "a2a-sdk 0.3.26 is older than 1.0"),
        ("adk-strands-beeai", "google-adk", None, "google-adk is not in the resolution"),
    ],
)
def test_an_old_or_missing_framework_is_a_problem(
    scenario: str, name: str, version: str | None, problem: str
) -> None:
    """A framework pip backtracked to an older release, or a2a-sdk off its line, is reported."""
    report = _with(_report(scenario), name, version)
    assert rf.check(report, BY_NAME[scenario]) == [problem]


def test_names_are_read_as_pip_compares_them() -> None:
    """beeai_framework in a report is beeai-framework in a scenario."""
    report = _report("beeai-framework")
    for item in report["install"]:
        item["metadata"]["name"] = item["metadata"]["name"].replace("-", "_").title()
    assert rf.resolved(report)["beeai-framework"] == "0.1.85"
    assert rf.check(report, BY_NAME["beeai-framework"]) == []
    assert rf.canonical("Google_ADK") == "google-adk"


@pytest.mark.parametrize(
    ("low", "high"),
    [("1.0", "1.0.1"), ("1.0.0b9", "1.0.0"), ("2.0rc1", "2.0"), ("0.1.9", "0.1.85")],
)
def test_versions_compare_as_pip_orders_them(low: str, high: str) -> None:
    """Numbers, not strings; a pre-release before its release; trailing zeros change nothing."""
    assert rf.version(low) < rf.version(high)
    assert rf.version("1.0") == rf.version("1.0.0")


def test_a_version_that_is_no_version_is_refused() -> None:
    """A report with garbage in a version fails loudly, not as 'old'."""
    with pytest.raises(ValueError, match="not a version"):
        rf.version("latest")


def test_a_cut_report_keeps_what_check_reads() -> None:
    """Only the distributions the scenario names stay, and the cut checks as the whole."""
    scenario = BY_NAME["strands-agents"]
    whole = _with(_report("strands-agents"), "httpx", "0.29.0")
    whole["install"][0]["download_info"] = {"url": "file:///elsewhere"}
    kept = rf.cut(whole, scenario)
    assert {rf.canonical(i["metadata"]["name"]) for i in kept["install"]} == {
        "a2a-client-errors",
        "strands-agents",
        "a2a-sdk",
    }
    assert all(set(item) == {"metadata"} for item in kept["install"])
    assert rf.check(kept, scenario) == rf.check(whole, scenario) == []
