"""The embedded peer and the demo need a2a-sdk 1.x: under another line, one clear error.

The error names the installed a2a-sdk and what is needed, before anything of a2a-sdk is
imported (never an ImportError or AttributeError deep inside). Under a2a-sdk 1.x the other
version is pretended; under 0.3 it is the real one.
"""

from __future__ import annotations

import io
import sys
from importlib import metadata

import pytest

from a2a_client_errors.cli import main
from a2a_client_errors.integrations.a2a_sdk._compat import UnsupportedSdkError
from a2a_client_errors.testing import peer
from a2a_client_errors.testing.peer import PEER_SDK, EmbeddedPeer, PeerSdkError


def _assert_clear(error: PeerSdkError, version: str, what: str) -> None:
    assert isinstance(error, UnsupportedSdkError)
    assert error.version == version
    assert str(error) == (
        f"{what} is built on a2a-sdk 1.x servers and a2a-sdk {version} is installed: "
        f"pip install 'a2a-sdk[http-server,grpc]{PEER_SDK}'"
    )


def _demo_refused(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    """``a2a-errors demo``'s exit status 2 and what it said (the demo module imported anew)."""
    monkeypatch.delitem(sys.modules, "a2a_client_errors.demo", raising=False)
    out = io.StringIO()
    assert main(["demo"], out=out) == 2
    assert out.getvalue() == ""
    return capsys.readouterr().err


@pytest.mark.parametrize("version", ["0.3.26", "2.0.0"])
def test_another_a2a_sdk_is_named_by_the_peer_and_the_demo(
    version: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An a2a-sdk other than 1.x: the peer refuses to start, the demo exits 2, both say why."""
    monkeypatch.setattr(peer, "installed_version", lambda: version)
    with pytest.raises(PeerSdkError) as raised:
        EmbeddedPeer().start()
    _assert_clear(raised.value, version, "EmbeddedPeer")
    said = _demo_refused(capsys, monkeypatch)
    assert (
        said == f"a2a-errors demo: a2a-errors demo is built on a2a-sdk 1.x servers and "
        f"a2a-sdk {version} is installed: pip install 'a2a-sdk[http-server,grpc]{PEER_SDK}'\n"
    )


@pytest.mark.a2a_sdk("0.3")
def test_under_a2a_sdk_0_3_the_peer_and_the_demo_say_what_they_need(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The installed a2a-sdk 0.3: the same clear error, read from its distribution."""
    version = metadata.version("a2a-sdk")
    with pytest.raises(PeerSdkError) as raised:
        EmbeddedPeer().start()
    _assert_clear(raised.value, version, "EmbeddedPeer")
    assert f"a2a-sdk {version} is installed" in _demo_refused(capsys, monkeypatch)
