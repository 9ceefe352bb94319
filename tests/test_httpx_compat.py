"""The two reads of httpx's private attributes agree with its public API, fallback included."""

from __future__ import annotations

import types

import httpx
import pytest

from a2a_client_errors import _httpx, normalize


def test_this_httpx_keeps_what_the_fast_reads_read() -> None:
    """The installed httpx is one the module was checked against: the fast path is taken.

    A failure here is no wrong answer (the public API answers), but classify got slower: check
    the new httpx's ``Response._content`` and ``Headers._list`` and update ``_httpx.py``.
    """
    assert _httpx._layout_known()


def test_an_httpx_of_another_shape_is_read_through_its_public_api(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A layout check that cannot even build a response says: not known."""
    monkeypatch.setattr(_httpx, "httpx", types.SimpleNamespace())
    assert not _httpx._layout_known()


@pytest.mark.parametrize("known", [True, False], ids=["private", "public"])
def test_both_ways_read_the_same(known: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast reads and the public API give the same body, headers and classification."""
    monkeypatch.setattr(_httpx, "_KNOWN", known)
    headers = [("Retry-After", "2"), ("X-Served-By", "edge"), ("retry-after-ms", "2500")]
    read = httpx.Response(503, headers=headers, content=b"{}")
    stream = httpx.Response(503, content=iter([b"{}"]))

    assert _httpx.read_content(read) == b"{}"
    assert _httpx.read_content(stream) is None
    assert list(_httpx.header_triples(read.headers)) == [
        (name, name.lower(), value) for name, value in read.headers.raw
    ]
    error = normalize(read)
    assert error is not None
    assert error.http_status == 503
    assert error.retry_after == 2.5
    assert normalize(stream) is not None  # an error status, its body unread: a bare status
