"""Check that pip installs each agent framework at its newest release beside the ``[a2a]`` extra.

    python .ci/resolve_frameworks.py [--only NAME] [--timeout SECONDS] [--save PATH]

Most code that calls A2A agents runs inside a framework, and several pin a2a-sdk's 0.3 line.
This script asks pip, in a throwaway venv with the newest pip, what it would install for each
`Scenario` (``pip install --dry-run --ignore-installed --report``; nothing is installed), and
checks the resolution: the framework at the release that was its newest when the scenario was
written (`NEWEST`: a framework pip backtracked to an older release is a problem), and a2a-sdk
on the line the framework pins. Each framework is resolved alone, with the command
docs/integrations.md gives, and three together (in two orders).

A problem is this project's only when the project causes it. When a scenario has one, the same
frameworks are resolved again without the project: a problem that resolution has too (the
distribution at the very same version, or missing too, or nothing resolving at all) is the
frameworks' own pins against each other, reported and not failed; any other fails the run
(exit 1). google-adk 2.15 needs ``watchdog>=7`` and strands-agents 1.65
``watchdog<7``, so the two cannot both be at their newest in one venv, with this project or
without it. The dry runs share pip's cache, so a second one downloads little.

Why a framework can be backtracked by this project: pip settles the requirements that have an
upper bound first. With ``a2a-sdk<2`` in the extra, pip took a2a-sdk 1.3 before it read the
framework's ``a2a-sdk<0.4``, then gave up the framework's newest release instead of a2a-sdk
1.x (strands-agents 0.3.0, beeai-framework 0.1.21, agno 2.5.17, crewai 1.2.1); the extra has
no upper bound since.

`judge` (the report's reading and the checks) runs no pip: tests/test_resolve_frameworks.py
holds it to saved reports (``--save`` writes them, cut to the distributions each scenario
names, with the resolution without the project where one was made).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
import venv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ("-e", ".[a2a]")
PROJECT_NAMES = frozenset({"a2a-client-errors"})


@dataclass(frozen=True)
class Scenario:
    """What pip is asked to install together, and what its resolution must hold.

    Attributes:
        name: its key (``--only``).
        requirements: pip's arguments after ``install`` (the project first, as ``-e .[a2a]``).
        minimums: the lowest version each named distribution may resolve to (inclusive).
        below: versions each named distribution must stay below (exclusive).
    """

    name: str
    requirements: tuple[str, ...]
    minimums: dict[str, str]
    below: dict[str, str] = field(default_factory=dict)

    @property
    def without_project(self) -> tuple[str, ...]:
        """The requirements without the project: the frameworks' own resolution."""
        return self.requirements[len(PROJECT) :]


# The newest release of each framework when this was written (its next release moves it up).
NEWEST = {
    "strands-agents": "1.65.0",
    "beeai-framework": "0.1.85",
    "google-adk": "2.15.0",
    "agno": "3.1.10",
    "crewai": "1.15.30",
    "fasta2a": "2.1.1",
    "agent-framework-a2a": "1.0.0b261022",
}
V03 = ("0.3.20", "0.4")  # the 0.3 line the project supports
V1 = ("1.0", "2")


def alone(requirement: str, line: tuple[str, str]) -> Scenario:
    """A framework beside the project alone: at its newest, a2a-sdk within ``line``."""
    name = re.split(r"[\[<>=!~ ]", requirement, maxsplit=1)[0]
    return Scenario(
        name,
        (*PROJECT, requirement),
        minimums={"a2a-client-errors": "0", name: NEWEST[name], "a2a-sdk": line[0]},
        below={"a2a-sdk": line[1]},
    )


def together(name: str, requirements: tuple[str, ...]) -> Scenario:
    """strands-agents, beeai-framework and google-adk in one venv, each at its newest."""
    frameworks = ("strands-agents", "beeai-framework", "google-adk")
    return Scenario(
        name,
        (*PROJECT, *requirements),
        minimums={
            "a2a-client-errors": "0",
            **{f: NEWEST[f] for f in frameworks},
            "a2a-sdk": V03[0],
        },
        below={"a2a-sdk": V03[1]},
    )


SCENARIOS = (
    alone("strands-agents[a2a]", V03),
    alone("beeai-framework[a2a]", V03),
    alone("google-adk", V1),  # alone, pip takes a2a-sdk 1.x
    alone("agno[a2a]", V03),
    alone("crewai[a2a]", V03),
    alone("fasta2a", V1),  # fasta2a needs no a2a-sdk: the extra's 1.x
    alone("agent-framework-a2a", V1),
    # Three together, in two orders: pip settles what it reads first, and the frameworks' pins
    # decide which of google-adk and strands-agents gives up its newest release.
    together("adk-strands-beeai", ("google-adk", "strands-agents[a2a]", "beeai-framework[a2a]")),
    together("strands-beeai-adk", ("strands-agents[a2a]", "beeai-framework[a2a]", "google-adk")),
)


def canonical(name: str) -> str:
    """A distribution name as pip compares it (PEP 503: lower case, runs of ``-_.`` as ``-``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def version(text: str) -> Version:
    """A version as pip orders it (``"1.0"`` == ``"1.0.0"``; ``"1.0.0b2"`` < ``"1.0.0"``).

    Raises:
        ValueError: ``text`` is not a version.
    """
    try:
        return Version(text.strip())
    except InvalidVersion:
        raise ValueError(f"not a version: {text!r}") from None


def resolved(report: dict[str, Any]) -> dict[str, str]:
    """What a pip ``--report`` would install: canonical name -> version."""
    versions: dict[str, str] = {}
    for item in report.get("install", []):
        metadata = item.get("metadata", {})
        versions[canonical(str(metadata["name"]))] = str(metadata["version"])
    return versions


def problems(report: dict[str, Any], scenario: Scenario) -> dict[str, str]:
    """The problems of a resolution, by the canonical name of the distribution each is about."""
    versions = resolved(report)
    found: dict[str, str] = {}
    for name, lowest in scenario.minimums.items():
        got = versions.get(canonical(name))
        if got is None:
            found[canonical(name)] = f"{name} is not in the resolution"
        elif version(got) < version(lowest):
            found[canonical(name)] = f"{name} {got} is older than {lowest}"
    for name, limit in scenario.below.items():
        got = versions.get(canonical(name))
        if got is not None and version(got) >= version(limit):
            found[canonical(name)] = f"{name} {got} is not below {limit}"
    return found


def check(report: dict[str, Any], scenario: Scenario) -> list[str]:
    """The problems of a resolution (an empty list: it holds everything the scenario asks)."""
    return list(problems(report, scenario).values())


UNRESOLVED = "pip cannot resolve it"
WITHOUT = "without the project"
"""The key suffix of a saved resolution of a scenario's frameworks alone."""


def judge(
    scenario: Scenario, mine: dict[str, Any] | None, theirs: dict[str, Any] | None
) -> tuple[list[str], list[str]]:
    """A resolution's problems split into the project's and the frameworks' own.

    Args:
        scenario: what was resolved.
        mine: pip's report of the scenario (None: pip could not resolve it).
        theirs: pip's report of the same frameworks without the project (None: pip could not
            resolve them at all).

    Returns:
        ``(ours, frameworks')``. A problem is the frameworks' own when their resolution without
        the project has the distribution at the same version (or has it not either), or when
        they do not resolve at all; any other, and any with the project's own distribution, is
        the project's.
    """
    if mine is None:
        if theirs is None:
            return [], [f"{UNRESOLVED}, without this project either"]
        return [f"{UNRESOLVED}; without this project it resolves"], []
    ours: list[str] = []
    frameworks: list[str] = []
    here, there = resolved(mine), None if theirs is None else resolved(theirs)
    for name, problem in problems(mine, scenario).items():
        if name in PROJECT_NAMES:
            ours.append(problem)
        elif there is None:  # the frameworks do not resolve at all without the project
            frameworks.append(f"{problem} (without this project: {UNRESOLVED})")
        else:
            alike = f"{name} {there[name]}" if name in there else f"no {name}"
            # the project changed nothing about it: the frameworks resolve it so themselves
            (frameworks if here.get(name) == there.get(name) else ours).append(
                f"{problem} (without this project: {alike})"
            )
    return ours, frameworks


def cut(report: dict[str, Any], scenario: Scenario) -> dict[str, Any]:
    """The report with only what `check` reads of the distributions the scenario names."""
    named = {canonical(name) for name in (*scenario.minimums, *scenario.below)}
    return {
        "pip_version": report.get("pip_version"),
        "install": [
            {"metadata": {"name": item["metadata"]["name"], "version": item["metadata"]["version"]}}
            for item in report.get("install", [])
            if canonical(str(item["metadata"]["name"])) in named
        ],
    }


def resolve(
    python: Path, requirements: tuple[str, ...], out: Path, timeout: float
) -> tuple[dict[str, Any] | None, str]:
    """The report of pip's dry run of ``requirements`` (None: it cannot resolve) and its errors."""
    command = [
        str(python),
        *("-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet"),
        *("--disable-pip-version-check", "--report", str(out), *requirements),
    ]
    try:
        done = subprocess.run(  # noqa: S603 (pip, with our own arguments)
            command, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return None, f"pip did not resolve within {timeout:.0f} s"
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
        return None, "\n".join(errors[-20:])
    report: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return report, ""


def throwaway_pip(folder: Path, timeout: float) -> Path:
    """A new venv with the newest pip (the one users get); its python."""
    env = folder / "venv"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    upgrade = [str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"]
    subprocess.run(upgrade, check=True, timeout=timeout)  # noqa: S603 (pip itself)
    shown = [str(python), "-m", "pip", "--version"]
    print(subprocess.run(shown, check=True, capture_output=True, text=True).stdout.strip())  # noqa: S603
    return python


def main(argv: list[str] | None = None) -> int:
    """Resolve every scenario in a throwaway venv; 1 when the project causes a problem."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="a scenario to resolve (repeatable)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per resolution")
    parser.add_argument("--save", type=Path, help="write the cut reports (tests/data) here")
    args = parser.parse_args(argv)
    chosen = [s for s in SCENARIOS if args.only is None or s.name in args.only]
    unknown = set(args.only or ()) - {s.name for s in SCENARIOS}
    if unknown or not chosen:
        parser.error(f"no scenario {sorted(unknown)}; there are {[s.name for s in SCENARIOS]}")
    failed = False
    saved: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="resolve-frameworks-") as folder:
        python = throwaway_pip(Path(folder), args.timeout)
        for scenario in chosen:
            started = time.monotonic()
            out = Path(folder) / f"{scenario.name}.json"
            mine, errors = resolve(python, scenario.requirements, out, args.timeout)
            theirs = None
            if mine is None or check(mine, scenario):
                theirs, _ = resolve(python, scenario.without_project, out, args.timeout)
                if theirs is not None:
                    saved[f"{scenario.name} {WITHOUT}"] = cut(theirs, scenario)
            took = f"{time.monotonic() - started:.0f} s"
            if mine is None:
                print(f"{scenario.name}: {UNRESOLVED} ({took})\n{errors}")
            else:
                saved[scenario.name] = cut(mine, scenario)
                versions = resolved(mine)
                names = ", ".join(
                    f"{name} {versions.get(canonical(name), '?')}" for name in scenario.minimums
                )
                print(f"{scenario.name}: {names} ({took})")
            ours, frameworks = judge(scenario, mine, theirs)
            for problem in ours:
                print(f"  FAILED: {problem}")
            for problem in frameworks:
                print(f"  the frameworks' own pins: {problem}")
            failed = failed or bool(ours)
    if args.save is not None:
        args.save.write_text(json.dumps(saved, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
