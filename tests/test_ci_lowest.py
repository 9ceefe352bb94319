"""`.ci/lowest.py`: the pins of the lowest-releases run are the package metadata's lower bounds."""

from __future__ import annotations

import importlib.util
import sys
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lowest", ROOT / ".ci" / "lowest.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


lowest = _load()


def test_each_lower_bound_is_pinned_and_the_extras_asked_for_only() -> None:
    """``>=X`` becomes ``==X``, whatever else the specifier says; other extras are left out."""
    requires = [
        "pydantic<3,>=2.7.3",
        "httpx >= 0.27",
        "no-bound",
        "psycopg[binary]>=3.1.4; extra == 'postgres'",
        "a2a-sdk[grpc]>=0.3.20; extra == 'a2a'",
        'redis>=5.0.1; extra == "redis"',
        "a2a-client-errors[grpc]; extra == 'all'",
    ]
    assert lowest.lowest(("postgres", "redis"), requires) == [
        "httpx==0.27",
        "psycopg==3.1.4",
        "pydantic==2.7.3",
        "redis==5.0.1",
    ]
    assert lowest.lowest((), requires) == ["httpx==0.27", "pydantic==2.7.3"]


def test_the_installed_metadata_pins_every_runtime_dependency_and_never_a2a_sdk() -> None:
    """Read from the metadata pip reads: each runtime dependency, no a2a-sdk, no package."""
    pins = dict(pin.split("==") for pin in lowest.lowest())
    runtime = {
        requirement.split(">=")[0].split("<")[0].strip().lower()
        for requirement in metadata.requires(lowest.PACKAGE) or []
        if "extra ==" not in requirement
    }
    assert runtime <= pins.keys()
    assert {"grpcio", "redis", "psycopg", "prometheus-client", "opentelemetry-api"} <= pins.keys()
    assert "a2a-sdk" not in pins
    assert lowest.PACKAGE not in pins
    assert pins["pydantic"] == "2.7.3"
