"""Check that pip installs each agent framework at its newest release beside the ``[a2a]`` extra.

    python .ci/resolve_frameworks.py [--only NAME] [--timeout SECONDS] [--save PATH]

Most code that calls A2A agents runs inside a framework, and several pin a2a-sdk's 0.3 line.
This script asks pip, in a throwaway venv with the newest pip, what it would install for each
`Scenario` (``pip install --dry-run --ignore-installed --report``; nothing is installed), and
checks the resolution: the framework at the release that was its newest when the scenario was
written (a framework pip backtracked to an older release fails), and a2a-sdk on the line the
framework pins. Each framework is resolved alone, with the command docs/integrations.md gives,
and three together (in two orders). A required scenario that does not resolve, or resolves to
something too old, fails the run (exit 1); an informational one is only reported. The dry runs
share pip's cache, so a second scenario downloads little.

Why a framework can be backtracked: pip settles the requirements that have an upper bound
first. With ``a2a-sdk<2`` in the extra, pip took a2a-sdk 1.3 before it read the framework's
``a2a-sdk<0.4``, then gave up the framework's newest release instead of a2a-sdk 1.x
(strands-agents 0.3.0, beeai-framework 0.1.21, agno 2.5.17, crewai 1.2.1); the extra has no
upper bound since.

`check` (the report's reading and the checks) runs no pip: tests/test_resolve_frameworks.py
holds it to saved reports (``--save`` writes them, cut to the distributions each scenario
names).
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


@dataclass(frozen=True)
class Scenario:
    """What pip is asked to install together, and what its resolution must hold.

    Attributes:
        name: its key (``--only``).
        requirements: pip's arguments after ``install`` (the project first, as ``-e .[a2a]``).
        minimums: the lowest version each named distribution may resolve to (inclusive).
        below: versions each named distribution must stay below (exclusive).
        required: whether a failed check fails the run (else it is reported only).
    """

    name: str
    requirements: tuple[str, ...]
    minimums: dict[str, str]
    below: dict[str, str] = field(default_factory=dict)
    required: bool = True


def alone(
    name: str, requirement: str, newest: str, line: tuple[str, str], **others: str
) -> Scenario:
    """A framework beside the project alone: at ``newest``, a2a-sdk within ``line``."""
    distribution = re.split(r"[\[<>=!~ ]", requirement, maxsplit=1)[0]
    return Scenario(
        name,
        (*PROJECT, requirement),
        minimums={"a2a-client-errors": "0", distribution: newest, "a2a-sdk": line[0], **others},
        below={"a2a-sdk": line[1]},
    )


def together(name: str, requirements: tuple[str, ...], *, required: bool = True) -> Scenario:
    """strands-agents, beeai-framework and google-adk in one venv, each at its newest."""
    return Scenario(
        name,
        (*PROJECT, *requirements),
        minimums={
            "a2a-client-errors": "0",
            "strands-agents": "1.62.0",
            "beeai-framework": "0.1.85",
            "google-adk": "2.13.0",
            "a2a-sdk": V03[0],
        },
        below={"a2a-sdk": V03[1]},
        required=required,
    )


# The newest releases when this was written; a framework's next release moves its minimum up.
V03 = ("0.3.20", "0.4")  # the 0.3 line the project supports
V1 = ("1.0", "2")
SCENARIOS = (
    alone("strands-agents", "strands-agents[a2a]", "1.62.0", V03),
    alone("beeai-framework", "beeai-framework[a2a]", "0.1.85", V03),
    alone("google-adk", "google-adk", "2.13.0", V1),  # alone, pip takes a2a-sdk 1.x
    alone("agno", "agno[a2a]", "3.1.10", V03),
    alone("crewai", "crewai[a2a]", "1.15.30", V03),
    alone("fasta2a", "fasta2a", "2.1.1", V1),  # fasta2a needs no a2a-sdk: the extra's 1.x
    alone("agent-framework-a2a", "agent-framework-a2a", "1.0.0b261022", V1),
    # Three together, google-adk named first: strands-agents' opentelemetry-sdk<2 is an upper
    # bound, so named first it settles opentelemetry 1.45 before google-adk's <=1.44 is read,
    # and pip backtracks google-adk to 1.10 (the frameworks' pins, not this project's).
    together("adk-strands-beeai", ("google-adk", "strands-agents[a2a]", "beeai-framework[a2a]")),
    together(
        "strands-beeai-adk",
        ("strands-agents[a2a]", "beeai-framework[a2a]", "google-adk"),
        required=False,  # reports whether that order still backtracks google-adk
    ),
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


def check(report: dict[str, Any], scenario: Scenario) -> list[str]:
    """The problems of a resolution (an empty list: it holds everything the scenario asks)."""
    versions = resolved(report)
    problems = []
    for name, lowest in scenario.minimums.items():
        found = versions.get(canonical(name))
        if found is None:
            problems.append(f"{name} is not in the resolution")
        elif version(found) < version(lowest):
            problems.append(f"{name} {found} is older than {lowest}")
    for name, limit in scenario.below.items():
        found = versions.get(canonical(name))
        if found is not None and version(found) >= version(limit):
            problems.append(f"{name} {found} is not below {limit}")
    return problems


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


def resolve(python: Path, scenario: Scenario, out: Path, timeout: float) -> tuple[int, str]:
    """Run pip's dry run for a scenario (report written to ``out``); its exit code and stderr."""
    command = [
        str(python),
        *("-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet"),
        *("--disable-pip-version-check", "--report", str(out), *scenario.requirements),
    ]
    try:
        done = subprocess.run(  # noqa: S603 (pip, with our own arguments)
            command, cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return 124, f"pip did not resolve within {timeout:.0f} s"
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
    return done.returncode, "\n".join(errors[-20:])


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
    """Resolve every scenario in a throwaway venv; 1 when a required one fails."""
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
            code, errors = resolve(python, scenario, out, args.timeout)
            kind = "required" if scenario.required else "informational"
            took = f"{time.monotonic() - started:.0f} s"
            if code != 0:
                print(f"{scenario.name} ({kind}): pip cannot resolve it ({took})\n{errors}")
                failed = failed or scenario.required
                continue
            report = json.loads(out.read_text(encoding="utf-8"))
            saved[scenario.name] = cut(report, scenario)
            versions = resolved(report)
            names = ", ".join(
                f"{name} {versions.get(canonical(name), '?')}" for name in scenario.minimums
            )
            problems = check(report, scenario)
            print(f"{scenario.name} ({kind}): {names} ({took})")
            for problem in problems:
                print(f"  {'FAILED' if scenario.required else 'note'}: {problem}")
            failed = failed or (scenario.required and bool(problems))
    if args.save is not None:
        args.save.write_text(json.dumps(saved, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
