""".ci/resolve_frameworks.py: the reading of pip's report and its checks, on a saved report.

tests/data/pip_report_frameworks.json is a pip ``--report`` (cut to the distributions that
matter) of the required scenario, as it resolved when it was written. No pip runs here.
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
FIXTURE = ROOT / "tests" / "data" / "pip_report_frameworks.json"


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
REQUIRED = next(s for s in rf.SCENARIOS if s.required)


def _report() -> dict[str, Any]:
    report: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
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


def test_the_saved_resolution_passes() -> None:
    """Today's resolution holds every check of the required scenario."""
    assert rf.check(_report(), REQUIRED) == []


def test_names_are_read_as_pip_compares_them() -> None:
    """beeai_framework in a report is beeai-framework in a scenario."""
    versions = rf.resolved(_report())
    assert versions["beeai-framework"] == "0.1.85"
    assert versions["a2a-sdk"] == "0.3.26"
    assert rf.canonical("Google_ADK") == "google-adk"


@pytest.mark.parametrize(
    ("name", "version", "problem"),
    [
        ("strands-agents", "0.3.0", "strands-agents 0.3.0 is older than 1.0"),
        ("google-adk", "1.31.0", "google-adk 1.31.0 is older than 2.0"),
        ("beeai-framework", "0.1.79", "beeai-framework 0.1.79 is older than 0.1.80"),
        ("a2a-sdk", "1.3.0", "a2a-sdk 1.3.0 is not below 0.4"),
        ("a2a-sdk", "0.3.19", "a2a-sdk 0.3.19 is older than 0.3.20"),
        ("google-adk", None, "google-adk is not in the resolution"),
    ],
)
def test_an_old_or_missing_framework_is_a_problem(
    name: str, version: str | None, problem: str
) -> None:
    """A framework pip backtracked to an old release, or a2a-sdk off its line, is reported."""
    assert rf.check(_with(_report(), name, version), REQUIRED) == [problem]


@pytest.mark.parametrize(
    ("version", "numbers"),
    [("1.62.0", (1, 62)), ("1.0", (1,)), ("2.0rc1", (2,)), ("0.1.85", (0, 1, 85)), ("v3", (3,))],
)
def test_releases_compare_by_their_numbers(version: str, numbers: tuple[int, ...]) -> None:
    """Trailing zeros and pre-release tags do not change the release line."""
    assert rf.release(version) == numbers


def test_a_version_that_is_no_version_is_refused() -> None:
    """A report with garbage in a version fails loudly, not as 'old'."""
    with pytest.raises(ValueError, match="not a version"):
        rf.release("latest")


def test_the_informational_scenario_never_fails_the_run() -> None:
    """Crewai and agno are reported, never required."""
    (informational,) = [s for s in rf.SCENARIOS if not s.required]
    assert {"crewai", "agno"} <= set(informational.minimums)
    assert rf.check(_report(), informational) == [
        "crewai is not in the resolution",
        "agno is not in the resolution",
    ]
