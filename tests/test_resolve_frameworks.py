""".ci/resolve_frameworks.py: the reading of pip's reports and their checks, on saved reports.

tests/data/pip_reports_frameworks.json holds, per scenario, pip's ``--report`` of it as it
resolved when it was written (``--save``: cut to the distributions the scenario names), and for
a scenario with a problem the report of its frameworks without the project. No pip runs here.
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


REPORTS: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
OWN_PINS = {
    # google-adk 2.15 needs watchdog>=7, strands-agents 1.65 watchdog<7: whichever pip reads
    # first keeps its newest release, with this project or without it
    "adk-strands-beeai": [
        "strands-agents 0.0.1 is older than 1.65.0 (without this project: strands-agents 0.0.1)"
    ],
    "strands-beeai-adk": [
        "google-adk 2.14.1 is older than 2.15.0 (without this project: google-adk 2.14.1)"
    ],
}
"""What the saved resolutions' frameworks cannot hold together, whoever installs them."""


def _report(name: str) -> dict[str, Any]:
    return copy.deepcopy(REPORTS[name])


def _without(name: str) -> dict[str, Any]:
    """The saved resolution of the scenario's frameworks without the project."""
    return _report(f"{name} {rf.WITHOUT}")


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
        assert scenario.requirements == ("-e", ".[a2a]", requirement)
        assert set(scenario.minimums) == {"a2a-client-errors", name, "a2a-sdk"}


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_each_saved_resolution_is_judged_as_it_was(name: str) -> None:
    """No saved resolution has a problem of the project's; the frameworks' own are told."""
    theirs = REPORTS.get(f"{name} {rf.WITHOUT}")
    assert (theirs is None) == (name not in OWN_PINS)  # resolved again only on a problem
    assert rf.judge(BY_NAME[name], _report(name), theirs) == ([], OWN_PINS.get(name, []))


@pytest.mark.parametrize(
    ("scenario", "name", "version", "problem"),
    [
        # what pip gave while the extra capped a2a-sdk at <2
        ("strands-agents", "strands-agents", "0.3.0", "strands-agents 0.3.0 is older than 1.65.0"),
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
        ("google-adk", "google-adk", "2.15.0rc1", "google-adk 2.15.0rc1 is older than 2.15.0"),
        ("fasta2a", "a2a-sdk", "0.3.26", "a2a-sdk 0.3.26 is older than 1.0"),
        ("google-adk", "google-adk", None, "google-adk is not in the resolution"),
    ],
)
def test_an_old_or_missing_framework_is_a_problem(
    scenario: str, name: str, version: str | None, problem: str
) -> None:
    """A framework pip backtracked to an older release, or a2a-sdk off its line, is reported."""
    report = _with(_report(scenario), name, version)
    assert rf.check(report, BY_NAME[scenario]) == [problem]
    # the frameworks alone resolve it at its newest: the problem is the project's
    ours, frameworks = rf.judge(BY_NAME[scenario], report, _with(_report(scenario), "x", None))
    assert [reason.split(" (without")[0] for reason in ours] == [problem]
    assert frameworks == []


def test_a_backtrack_the_project_worsens_is_its_own() -> None:
    """strands-agents at 0.0.1 without the project, older still with it: the project's."""
    scenario = BY_NAME["adk-strands-beeai"]
    mine = _with(_report("adk-strands-beeai"), "strands-agents", "0.0.0")
    assert rf.judge(scenario, mine, _without("adk-strands-beeai")) == (
        ["strands-agents 0.0.0 is older than 1.65.0 (without this project: strands-agents 0.0.1)"],
        [],
    )


def test_a2a_sdk_the_frameworks_do_not_pull_is_the_projects() -> None:
    """fasta2a needs no a2a-sdk: a2a-sdk off the line is the extra's doing, never fasta2a's."""
    scenario = BY_NAME["fasta2a"]
    mine = _with(_report("fasta2a"), "a2a-sdk", "0.3.26")
    theirs = _with(_report("fasta2a"), "a2a-sdk", None)
    assert rf.judge(scenario, mine, theirs) == (
        ["a2a-sdk 0.3.26 is older than 1.0 (without this project: no a2a-sdk)"],
        [],
    )


def test_the_projects_own_distribution_is_always_its_problem() -> None:
    """a2a-client-errors missing from a resolution is never the frameworks' pins."""
    scenario = BY_NAME["adk-strands-beeai"]
    mine = _with(_report("adk-strands-beeai"), "a2a-client-errors", None)
    ours, frameworks = rf.judge(scenario, mine, _without("adk-strands-beeai"))
    assert ours == ["a2a-client-errors is not in the resolution"]
    assert frameworks == OWN_PINS["adk-strands-beeai"]
    assert rf.judge(scenario, mine, None)[0] == ours


@pytest.mark.parametrize(
    ("mine", "theirs", "ours", "frameworks"),
    [
        (False, False, [], ["pip cannot resolve it, without this project either"]),
        (False, True, ["pip cannot resolve it; without this project it resolves"], []),
        (
            True,
            False,
            [],
            [
                "strands-agents 0.0.1 is older than 1.65.0"
                " (without this project: pip cannot resolve it)"
            ],
        ),
    ],
)
def test_what_pip_cannot_resolve_is_judged_by_the_frameworks_alone(
    mine: bool, theirs: bool, ours: list[str], frameworks: list[str]
) -> None:
    """Unresolvable with the project only: the project's; unresolvable alone: the frameworks'."""
    scenario = BY_NAME["adk-strands-beeai"]
    judged = rf.judge(
        scenario,
        _report("adk-strands-beeai") if mine else None,
        _without("adk-strands-beeai") if theirs else None,
    )
    assert judged == (ours, frameworks)


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
