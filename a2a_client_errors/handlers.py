"""Compatibility module: the decision handlers moved to the a2a-sdk wing.

They live in `a2a_client_errors.integrations.a2a_sdk.handlers`. This module is kept so that
``from a2a_client_errors.handlers import DecisionHandlers``, the path the documentation gave
before the a2a-sdk integration became a package, keeps working; new code imports from the
new home. The names are the same objects.
"""

from __future__ import annotations

from a2a_client_errors.integrations.a2a_sdk.handlers import (
    LOST_RACE,
    DecisionHandlers,
    Polling,
    Situation,
    poll_task,
)

__all__ = ["LOST_RACE", "DecisionHandlers", "Polling", "Situation", "poll_task"]
