"""What every benchmark shares: its figures as JSON, its tables as Markdown, its targets.

Each ``bench_*.py`` script measures, then hands its figures (plain JSON data) to two functions
of its own: ``markdown(figures)``, the tables it prints, and ``targets(figures)``, the targets
of design.md ("Numbers we hold ourselves to") the figures meet or miss. ``--json PATH`` writes
the figures; ``bench/report.py`` runs every script that way and renders one page from them,
with the same two functions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse
    from collections.abc import Iterable, Sequence


@dataclass(frozen=True, slots=True)
class Target:
    """One target and what a run measured against it.

    Attributes:
        what: the target, in design.md's words (``"≤ 1.05x the bare call"``).
        measured: the figure that decides it, as the page shows it.
        met: whether the run met it.
    """

    what: str
    measured: str
    met: bool


def add_json_option(parser: argparse.ArgumentParser) -> None:
    """``--json [PATH]``: write the figures to PATH; alone (or ``-``), print them, not tables."""
    parser.add_argument(
        "--json",
        nargs="?",
        const="-",
        metavar="PATH",
        help="write the figures as JSON to PATH; without PATH (or '-'), print them instead of "
        "the tables",
    )


def emit(path: str | None, figures: object) -> bool:
    """Write ``figures`` as ``--json`` asks; True when they were printed (print no tables)."""
    if path is None:
        return False
    text = json.dumps(figures, indent=2, allow_nan=False)
    if path == "-":
        print(text)
        return True
    Path(path).write_text(text + "\n", encoding="utf-8")
    return False


def table(header: Sequence[str], rows: Iterable[Sequence[object]], align: str = "") -> list[str]:
    """A Markdown table; ``align`` has an ``l`` or ``r`` per column (default: ``lrrr...``)."""
    align = align or "l" + "r" * (len(header) - 1)
    rule = "|".join("---" if side == "l" else "---:" for side in align)
    lines = [f"| {' | '.join(header)} |", f"|{rule}|"]
    lines.extend(f"| {' | '.join(str(cell) for cell in row)} |" for row in rows)
    return lines


def show(heading: str, lines: Iterable[str], found: Iterable[Target]) -> None:
    """Print a script's report: a line on how it ran, its tables, then each target's verdict."""
    print(heading)
    print()
    print("\n".join(lines))
    print()
    for target in found:
        mark = "met" if target.met else "MISSED"
        print(f"{mark}: {target.what} (measured: {target.measured})")
