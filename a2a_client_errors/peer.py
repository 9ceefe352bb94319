"""Compatibility module: the embedded a2a-sdk peer moved to `a2a_client_errors.testing.peer`.

This module is kept so that ``from a2a_client_errors.peer import EmbeddedPeer``, the path the
documentation gave before the testing aids became a package, keeps working; new code imports
from the new home. The names are the same
objects, and importing either never needs the optional dependencies (a2a-sdk, uvicorn,
grpcio): they are imported when a peer starts or a capture is made.
"""

from __future__ import annotations

from a2a_client_errors.testing.peer import (
    BINDINGS,
    DEFAULT_REQUIRED_EXTENSION,
    DEFAULT_TIMEOUT,
    GRPC,
    HOLD,
    JSONRPC,
    REST,
    SCENARIOS,
    EmbeddedPeer,
    Scenario,
    capture,
    capture_grpc,
    capture_grpc_stream,
    capture_jsonrpc,
    capture_rest,
    capture_sdk,
    require_dependencies,
    scenario,
)

__all__ = [
    "BINDINGS",
    "DEFAULT_REQUIRED_EXTENSION",
    "DEFAULT_TIMEOUT",
    "GRPC",
    "HOLD",
    "JSONRPC",
    "REST",
    "SCENARIOS",
    "EmbeddedPeer",
    "Scenario",
    "capture",
    "capture_grpc",
    "capture_grpc_stream",
    "capture_jsonrpc",
    "capture_rest",
    "capture_sdk",
    "require_dependencies",
    "scenario",
]
