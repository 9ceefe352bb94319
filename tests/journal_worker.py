"""An orchestrator process for the journal's crash tests: it sends one message, and is killed.

``python -m tests.journal_worker DB URL MESSAGE_ID [--die]`` sends a JSON-RPC SendMessage of
``MESSAGE_ID`` to the agent at ``URL`` through `GuardTransport`, under a Guard whose journal
is the SQLite file ``DB``, and waits for its answer (the test may kill it first). With
``--die`` it dies the moment the answer is back (``os._exit``: no ``atexit``, as a killed
process), exit status 75.
"""

from __future__ import annotations

import os
import sys

import httpx

from a2a_client_errors import Guard, GuardTransport
from a2a_client_errors.journal import SqliteJournal

VERSION = {"A2A-Version": "1.0"}
DIED = 75
"""The exit status of a worker that died the moment its answer was back (``--die``)."""


def body(message_id: str) -> dict[str, object]:
    """The SendMessage of one logical step (the same in every process)."""
    message = {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "summarise"}]}
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}


def main(argv: list[str]) -> int:
    """Send, and print what came back (if the process lives that long)."""
    db, url, message_id, *die = argv
    guard = Guard(journal=SqliteJournal(db))
    with httpx.Client(transport=GuardTransport(guard), headers=VERSION, timeout=120) as client:
        answer = client.post(url, json=body(message_id))
        print(answer.status_code, flush=True)
        if die == ["--die"]:
            os._exit(DIED)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
