"""Reading an httpx response's body within a size and a deadline: the one bounded read.

`read_within` (and `aread_within`) read a body chunk by chunk, counting the bytes as they come
out of httpx's decoding (a gzip body that inflates past the size is caught by what it
inflates to, not by what came over the wire):

* a body of at most ``limit`` bytes is read, as ``response.read()`` would read it;
* a larger one is not: the response is handed on unread, the bytes already pulled first and
  the rest behind them, untouched (its own encoding, its own headers), so that it is judged by
  its status and whoever reads it next reads all of it;
* a deadline is checked between chunks, so a peer that trickles a byte at a time cannot make
  the read outlast it (a peer that sends nothing is stopped by the read timeout):
  `AttemptCutShortError` when it passes.

What is held while reading is at most ``limit`` bytes and one chunk, whatever the peer sends.

An event stream is read only as far as its head tells what it is (``enough``): a stream whose
first event is a result is handed on unread from there (the chunks pulled replayed first); one
that ends before (no event at all) or whose first event is an error is read whole, within
``limit``, to be judged as any body.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import httpx

from a2a_client_errors._engine import AttemptCutShortError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator

__all__ = ["aread_within", "read_within"]

_LATE = "the call's deadline came while the body was read"


class _Replay(httpx.SyncByteStream):
    """The chunks already pulled from a stream, then the rest of it; closing closes it."""

    def __init__(
        self, head: list[bytes], rest: Iterator[bytes], source: httpx.SyncByteStream
    ) -> None:
        self._head = head
        self._rest = rest
        self._source = source

    def __iter__(self) -> Iterator[bytes]:
        head, self._head = self._head, []
        yield from head
        yield from self._rest

    def close(self) -> None:
        self._source.close()


class _AsyncReplay(httpx.AsyncByteStream):
    """The async twin of `_Replay`."""

    def __init__(
        self, head: list[bytes], rest: AsyncIterator[bytes], source: httpx.AsyncByteStream
    ) -> None:
        self._head = head
        self._rest = rest
        self._source = source

    async def __aiter__(self) -> AsyncIterator[bytes]:
        head, self._head = self._head, []
        for chunk in head:
            yield chunk
        async for chunk in self._rest:
            yield chunk

    async def aclose(self) -> None:
        await self._source.aclose()


class _Tee(httpx.SyncByteStream):
    """A stream's chunks, each kept in ``kept`` as it passes."""

    def __init__(self, chunks: Iterator[bytes], kept: list[bytes]) -> None:
        self._chunks = chunks
        self._kept = kept

    def __iter__(self) -> Iterator[bytes]:
        return _kept(self._chunks, self._kept)


class _AsyncTee(httpx.AsyncByteStream):
    """The async twin of `_Tee`."""

    def __init__(self, chunks: AsyncIterator[bytes], kept: list[bytes]) -> None:
        self._chunks = chunks
        self._kept = kept

    def __aiter__(self) -> AsyncIterator[bytes]:
        return _akept(self._chunks, self._kept)


def _kept(chunks: Iterator[bytes], kept: list[bytes]) -> Iterator[bytes]:
    """``chunks`` but the empty ones, each kept in ``kept`` as it passes.

    With no content coding these are the body's bytes, as ``iter_bytes`` would give them (it
    gives no empty chunk either).
    """
    for chunk in chunks:
        if chunk:
            kept.append(chunk)
            yield chunk


async def _akept(chunks: AsyncIterator[bytes], kept: list[bytes]) -> AsyncIterator[bytes]:
    """The async twin of `_kept`."""
    async for chunk in chunks:
        if chunk:
            kept.append(chunk)
            yield chunk


def _late(deadline_at: float | None, clock: Callable[[], float]) -> bool:
    return deadline_at is not None and clock() > deadline_at


def _decoded(
    response: httpx.Response, pulled: Iterator[bytes], raw: list[bytes]
) -> Iterator[bytes]:
    """The body's chunks as read from ``pulled``, each chunk pulled kept in ``raw`` too."""
    # With no content coding the bytes read are the body; with one, they are counted decoded.
    if "content-encoding" in response.headers:
        stream = _Tee(pulled, raw)
        return httpx.Response(
            response.status_code, headers=response.headers, stream=stream
        ).iter_bytes()
    return _kept(pulled, raw)


def read_within(
    response: httpx.Response,
    limit: int,
    *,
    deadline_at: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    enough: Callable[[bytes], bool] | None = None,
) -> bool:
    """Read ``response``'s body if it is at most ``limit`` bytes; say whether it was read.

    Args:
        response: a response whose body has not been read.
        limit: bytes of the (decoded) body that may be read.
        deadline_at: when reading must stop (on ``clock``); None: no deadline.
        clock: the clock of ``deadline_at``.
        enough: given each decoded chunk in turn, True once the chunks so far tell that the
            rest need not be read (the head of an event stream): the response is then handed
            on unread, as for a body past ``limit``. None: the whole body is read.

    Returns:
        True when the body was read (``response.content`` holds it); False when it is larger
        than ``limit``, or ``enough`` said so: the response is then unread, and streams its
        whole body to whoever reads it.

    Raises:
        AttemptCutShortError: the deadline passed while the body was read (the response is
            closed).
        httpx.HTTPError: the body broke off, or cannot be decoded (the response is closed).

    """
    source = response.stream
    if not isinstance(source, httpx.SyncByteStream):
        raise TypeError("read_within() needs a sync response; use aread_within()")
    raw: list[bytes] = []
    pulled = iter(source)
    decoded = _decoded(response, pulled, raw)
    size = 0
    try:
        for chunk in decoded:
            size += len(chunk)
            if size > limit or (enough is not None and enough(chunk)):
                response.stream = _Replay(raw, pulled, source)
                return False
            if _late(deadline_at, clock):
                raise AttemptCutShortError(_LATE)
    except BaseException:
        response.close()
        raise
    source.close()
    body = b"".join(raw)
    raw.clear()
    response.stream = httpx.ByteStream(body)
    response.read()
    return True


async def aread_within(
    response: httpx.Response,
    limit: int,
    *,
    deadline_at: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    enough: Callable[[bytes], bool] | None = None,
) -> bool:
    """The async twin of `read_within`."""
    source = response.stream
    if not isinstance(source, httpx.AsyncByteStream):
        raise TypeError("aread_within() needs an async response; use read_within()")
    raw: list[bytes] = []
    pulled = aiter(source)
    decoded = (
        httpx.Response(
            response.status_code, headers=response.headers, stream=_AsyncTee(pulled, raw)
        ).aiter_bytes()
        if "content-encoding" in response.headers
        else _akept(pulled, raw)
    )
    size = 0
    try:
        async for chunk in decoded:
            size += len(chunk)
            if size > limit or (enough is not None and enough(chunk)):
                response.stream = _AsyncReplay(raw, pulled, source)
                return False
            if _late(deadline_at, clock):
                raise AttemptCutShortError(_LATE)
    except BaseException:
        await response.aclose()
        raise
    await source.aclose()
    body = b"".join(raw)
    raw.clear()
    response.stream = httpx.ByteStream(body)
    await response.aread()
    return True
