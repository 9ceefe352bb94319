"""The only place this package reads httpx's private attributes: two, on the classify hot path.

`classify` reads the body of every response it is given and scans the headers of every error
for a retry hint. Through httpx's public API (``Response.content``, a property that tests
``hasattr``; ``Headers.raw``, a copy of the list, whose names are then lower-cased) `classify`
takes 15 to 35 % longer on the error bodies of ``bench/bench_classify.py``, 4 to 5 % on its
success bodies. So these two read what those public members read, directly (the
calls cost 0.5 to 2.5 % over reading the attributes inline).

Checked against httpx 0.27.0, 0.27.2, 0.28.0, 0.28.1 and its master of 2025-12-10 (``ae1b9f66``):
``Response._content`` holds the body once read, and is absent before; ``Headers._list`` holds
``(raw name, lower-cased name, value)`` byte triples. Both are verified once, when this module
is imported, on a response and headers built here: with an httpx that keeps them otherwise,
both answer through the public API instead. A change in httpx costs speed, never a
wrong answer.
"""

from __future__ import annotations

from operator import attrgetter
from typing import TYPE_CHECKING, Final

import httpx

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["header_triples", "read_content"]


def _layout_known() -> bool:
    """Whether this httpx keeps a response's body and its headers where this module reads them."""
    try:
        response = httpx.Response(200, headers={"Retry-After": "1"}, content=b"{}")
        stream = httpx.Response(200, content=iter([b"{}"]))  # not read
        return (
            response._content == b"{}"
            and not hasattr(stream, "_content")
            and response.headers._list[0] == (b"Retry-After", b"retry-after", b"1")
        )
    except Exception:  # any other layout: the public API answers
        return False


_KNOWN: Final = _layout_known()


def read_content(response: httpx.Response) -> bytes | None:
    """The body httpx has read into ``response``: ``response.content``, or None if not read yet.

    None is a stream nobody has read (``response.content`` raises `httpx.ResponseNotRead`).
    """
    if _KNOWN:
        try:
            return response._content
        except AttributeError:  # not read: a stream
            return None
    try:
        return response.content
    except httpx.ResponseNotRead:
        return None


def _header_triples(headers: httpx.Headers) -> Sequence[tuple[bytes, bytes, bytes]]:
    """`header_triples` through httpx's public API: a list of its own, built from a copy."""
    return [(name, name.lower(), value) for name, value in headers.raw]


header_triples: Final[Callable[[httpx.Headers], Sequence[tuple[bytes, bytes, bytes]]]] = (
    attrgetter("_list") if _KNOWN else _header_triples
)
"""``headers`` as ``(raw name, lower-cased name, value)`` byte triples, in order.

With a known httpx this is httpx's own list, not a copy (read by ``operator.attrgetter``,
which spares a Python call per error): read it, never change it.
"""
