"""`read_within` / `aread_within`: a body read up to a limit and a deadline, or handed on unread."""

from __future__ import annotations

import gzip
from typing import TYPE_CHECKING

import httpx
import pytest

from a2a_client_errors._engine import AttemptCutShortError
from a2a_client_errors._reading import aread_within, read_within
from a2a_client_errors.testing import FakeClock

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

BODY = b'{"result": "' + b"x" * 10_000 + b'"}'


class Chunks(httpx.SyncByteStream):
    """``body`` in chunks of ``size`` (empty ones between), counting how often it is pulled."""

    def __init__(self, body: bytes, size: int = 1000) -> None:
        self.body = body
        self.size = size
        self.pulls = 0
        self.closed = False

    def __iter__(self) -> Iterator[bytes]:
        self.pulls += 1
        for start in range(0, len(self.body), self.size):
            yield b""
            yield self.body[start : start + self.size]

    def close(self) -> None:
        """Note that the reader closed the stream."""
        self.closed = True


class AsyncChunks(httpx.AsyncByteStream):
    """The async twin of `Chunks`."""

    def __init__(self, body: bytes, size: int = 1000) -> None:
        self.body = body
        self.size = size
        self.pulls = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        self.pulls += 1
        for start in range(0, len(self.body), self.size):
            yield b""
            yield self.body[start : start + self.size]


def _response(
    stream: httpx.SyncByteStream | httpx.AsyncByteStream, *, coded: bool
) -> httpx.Response:
    headers = {"content-encoding": "gzip"} if coded else {}
    return httpx.Response(200, headers=headers, stream=stream)


@pytest.mark.parametrize("coded", [False, True])
def test_a_body_within_the_limit_is_read_once(coded: bool) -> None:
    """With or without a content coding: read, decoded, the source pulled once and closed."""
    stream = Chunks(gzip.compress(BODY) if coded else BODY)
    response = _response(stream, coded=coded)
    assert read_within(response, len(BODY))
    assert response.content == BODY
    assert stream.pulls == 1
    assert stream.closed


@pytest.mark.parametrize("coded", [False, True])
def test_a_body_past_the_limit_is_handed_on_whole_and_unread(coded: bool) -> None:
    """Past the limit (decoded bytes, for a coded body): the reader gets every byte, as sent."""
    sent = gzip.compress(BODY) if coded else BODY
    stream = Chunks(sent, size=7)
    response = _response(stream, coded=coded)
    assert not read_within(response, len(BODY) - 1)
    assert not response.is_stream_consumed
    assert b"".join(response.iter_raw()) == sent
    assert stream.pulls == 1


def test_a_compressed_body_is_judged_by_its_decoded_size() -> None:
    """A small gzip that inflates past the limit is not read, however small it came."""
    bomb = gzip.compress(b"\0" * 1_000_000)
    assert len(bomb) < 10_000
    assert not read_within(_response(Chunks(bomb), coded=True), 100_000)


def test_the_deadline_is_watched_chunk_by_chunk_and_not_on_empty_ones() -> None:
    """A deadline passed cuts the reading; an empty body is read whatever the clock says."""
    clock = FakeClock()
    clock.advance(10.0)
    with pytest.raises(AttemptCutShortError):
        read_within(_response(Chunks(BODY), coded=False), 1 << 20, deadline_at=5.0, clock=clock.now)
    empty = httpx.Response(503, stream=httpx.ByteStream(b""))  # one empty chunk
    assert read_within(empty, 1 << 20, deadline_at=5.0, clock=clock.now)
    assert empty.content == b""


async def test_the_async_reader_reads_as_the_sync_one() -> None:
    """Within the limit: read once; past it: handed on whole; coded or not."""
    for coded in (False, True):
        sent = gzip.compress(BODY) if coded else BODY
        stream = AsyncChunks(sent)
        response = _response(stream, coded=coded)
        assert await aread_within(response, len(BODY))
        assert response.content == BODY
        assert stream.pulls == 1
        past = _response(AsyncChunks(sent, size=7), coded=coded)
        assert not await aread_within(past, len(BODY) - 1)
        assert b"".join([chunk async for chunk in past.aiter_raw()]) == sent


def test_the_readers_refuse_the_other_kind_of_stream() -> None:
    """A sync reader given an async stream (and the reverse) says which to use."""
    with pytest.raises(TypeError, match="aread_within"):
        read_within(_response(AsyncChunks(BODY), coded=False), 10)
