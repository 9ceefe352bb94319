"""Check that pip installs recent agent frameworks beside this project's ``[a2a]`` extra.

    python .ci/resolve_frameworks.py [--only NAME] [--timeout SECONDS]

Most code that calls A2A agents runs inside a framework, and several pin a2a-sdk's 0.3 line.
This script asks pip, in a throwaway venv, what it would install for each `Scenario`
(``pip install --dry-run --ignore-installed --report``; nothing is installed), and checks the
resolution: each framework at a recent release (not a year-old one pip backtracked to), and
a2a-sdk on the line the frameworks pin. A required scenario that does not resolve, or resolves
to something too old, fails the run (exit 1); an informational one is only reported.

`check` (the report's reading and the checks) runs no pip: tests/test_resolve_frameworks.py
holds it to a saved report.
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

ROOT = Path(__file__).resolve().parent.parent


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


SCENARIOS = (
    Scenario(
        "strands-beeai-adk",
        ("-e", ".[a2a]", "strands-agents[a2a]", "beeai-framework[a2a]", "google-adk"),
        # The newest when this was written: strands-agents 1.62.0, beeai-framework 0.1.85,
        # google-adk 2.13.0; they pin a2a-sdk 0.3, this project accepts 0.3.20 and newer.
        minimums={
            "a2a-client-errors": "0",
            "strands-agents": "1.0",
            "beeai-framework": "0.1.80",
            "google-adk": "2.0",
            "a2a-sdk": "0.3.20",
        },
        below={"a2a-sdk": "0.4"},
    ),
    Scenario(
        "crewai-agno",
        ("-e", ".[a2a]", "crewai[a2a]", "agno[a2a]"),
        minimums={"a2a-client-errors": "0", "crewai": "1.0", "agno": "2.0", "a2a-sdk": "0.3.20"},
        required=False,
    ),
)


def canonical(name: str) -> str:
    """A distribution name as pip compares it (PEP 503: lower case, runs of ``-_.`` as ``-``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def release(version: str) -> tuple[int, ...]:
    """The numeric release of a version (``"1.62.0"`` -> (1, 62, 0); ``"2.0rc1"`` -> (2, 0)).

    Pre-release and local parts are dropped: a minimum is about the release line.
    """
    match = re.match(r"\d+(?:\.\d+)*", version.strip().lstrip("vV"))
    if match is None:
        raise ValueError(f"not a version: {version!r}")
    numbers = [int(part) for part in match.group().split(".")]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()  # 1.0 == 1.0.0
    return tuple(numbers)


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
        version = versions.get(canonical(name))
        if version is None:
            problems.append(f"{name} is not in the resolution")
        elif release(version) < release(lowest):
            problems.append(f"{name} {version} is older than {lowest}")
    for name, limit in scenario.below.items():
        version = versions.get(canonical(name))
        if version is not None and release(version) >= release(limit):
            problems.append(f"{name} {version} is not below {limit}")
    return problems


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


def main(argv: list[str] | None = None) -> int:
    """Resolve every scenario in a throwaway venv; 1 when a required one fails."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="the one scenario to resolve")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per resolution")
    args = parser.parse_args(argv)
    chosen = [s for s in SCENARIOS if args.only in (None, s.name)]
    if not chosen:
        parser.error(f"no scenario {args.only!r}")
    failed = False
    with tempfile.TemporaryDirectory(prefix="resolve-frameworks-") as folder:
        env = Path(folder) / "venv"
        venv.create(env, with_pip=True)
        python = env / "bin" / "python"
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
            versions = resolved(report)
            names = ", ".join(
                f"{name} {versions.get(canonical(name), '?')}" for name in scenario.minimums
            )
            problems = check(report, scenario)
            print(f"{scenario.name} ({kind}): {names} ({took})")
            for problem in problems:
                print(f"  {'FAILED' if scenario.required else 'note'}: {problem}")
            failed = failed or (scenario.required and bool(problems))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
