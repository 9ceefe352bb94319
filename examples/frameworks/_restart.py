"""A crash and a restart, for the crash-stable messageId recipes: each run is a process of its own.

A recipe runs itself as a child process twice over the same files (its journal, its
framework's session): the first child dies with `crash` right after the remote agent's answer
reached it, before its framework recorded the answer (no ``finally``, no ``atexit``: as a
killed process dies); the second child is the restarted orchestrator, which runs the same step
again. Each child reports what it got on one stdout line (`report`), which the parent reads
back (`run_child`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, NoReturn

CRASHED = 75
"""The exit status of a child that died on purpose (`crash`)."""
_MARK = "result: "


def report(**result: Any) -> None:
    """What this child got, on one line of stdout, for the parent."""
    print(_MARK + json.dumps(result), flush=True)


def crash(**result: Any) -> NoReturn:
    """Report ``result``, then die at once (``os._exit``): nothing after this line runs."""
    report(**result)
    sys.stderr.flush()
    os._exit(CRASHED)


def run_child(script: str, *args: str, timeout: float = 120) -> tuple[int, dict[str, Any]]:
    """Run ``script`` with ``args`` in a new process of this Python; its exit status and report.

    The report is empty when the child printed none; its stderr is passed through when it
    failed otherwise than by `crash`.
    """
    done = subprocess.run(  # noqa: S603 (this interpreter, this recipe)
        [sys.executable, script, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode not in (0, CRASHED):
        sys.stderr.write(done.stderr)
    lines = [line for line in done.stdout.splitlines() if line.startswith(_MARK)]
    return done.returncode, json.loads(lines[-1][len(_MARK) :]) if lines else {}
