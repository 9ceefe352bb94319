"""The one reader of server-sent events: bytes in, ``(event name, data)`` pairs out, capped.

Every SSE reader of the package goes through `EventReader`: `normalize` on a whole
``text/event-stream`` body, `iter_events` / `aiter_events` on a live stream, and the probe.

Lines end at CR, LF or CRLF, and only there (the WHATWG event-stream grammar). A message that
holds U+2028, U+2029, U+0085, a form feed or any other character `str.splitlines` breaks at is
one line, as a2a-sdk writes it. A CR at the end of one chunk and an LF at the start of the next
are one line end. One leading byte-order mark is skipped; the stream must be UTF-8.

Comments (``: keep-alive``), ``id:`` and ``retry:`` lines are skipped; multi-line data is joined
with newlines; a ``data:`` value prefixed by the RFC 7464 record separator (U+001E), as some
peers send JSON text sequences, is read without it. An event still open when the stream ends is
delivered (a lenient reading: a peer that closes right after its last ``data:`` line loses
nothing).

Memory is bounded whatever a peer streams: a line longer than ``max_line`` characters, an event
whose lines add up to more than ``max_event`` characters, or a stream longer than
``max_stream`` bytes stops the reading with `SSEError` (the caller turns it into
INVALID_AGENT_RESPONSE). Nothing larger than one event and one line is ever held.
"""

from __future__ import annotations

import codecs
import re
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator

__all__ = [
    "DEFAULT_MAX_EVENT",
    "DEFAULT_MAX_LINE",
    "EventReader",
    "SSEError",
    "SSEParser",
    "aread_events",
    "read_events",
]

DEFAULT_MAX_LINE: Final = 16 * 1024 * 1024
"""Characters of one line of an event stream, by default."""

DEFAULT_MAX_EVENT: Final = 32 * 1024 * 1024
"""Characters of one event (its lines together), by default."""

_LINE_END: Final = re.compile(r"\r\n|\r|\n")
_BOM: Final = "\ufeff"
_RECORD_SEPARATOR: Final = "\x1e"


class SSEError(ValueError):
    """An event stream the reader will not read on: not UTF-8, or past one of its caps."""


class SSEParser:
    """The fields of server-sent events, line by line: `feed` each line, `end` at the close.

    Args:
        max_event: characters the lines of one event may add up to (None: no cap).

    """

    __slots__ = ("_data", "_max", "_name", "_size")

    def __init__(self, max_event: int | None = None) -> None:
        self._data: list[str] = []
        self._name = ""
        self._size = 0
        self._max = max_event

    def feed(self, line: str) -> tuple[str, str] | None:
        """Take one line (without its line end); return ``(name, data)`` when it ends an event.

        Raises:
            SSEError: the event grew past ``max_event`` characters.

        """
        if not line:
            return self.end()
        if self._max is not None:
            self._size += len(line)
            if self._size > self._max:
                msg = f"an event of the stream is longer than {self._max} characters"
                raise SSEError(msg)
        field, _, value = line.partition(":")
        if field == "data":
            value = value.removeprefix(" ")
            self._data.append(value.removeprefix(_RECORD_SEPARATOR))
        elif field == "event":
            self._name = value.removeprefix(" ")
        return None

    def end(self) -> tuple[str, str] | None:
        """The event in progress, if any (the stream closed, or a blank line came)."""
        data, name = self._data, self._name
        self._data, self._name, self._size = [], "", 0
        return (name, "\n".join(data)) if data else None


class EventReader:
    """Server-sent events from chunks of bytes: `feed` each chunk, `end` when the stream ends.

    Args:
        max_line: characters of one line.
        max_event: characters of one event (its lines together).
        max_stream: bytes of the whole stream (None: as long as it runs).

    Both methods return the events the bytes completed, in order, and raise `SSEError` for a
    stream that is not UTF-8 or breaks a cap.
    """

    __slots__ = (
        "_cr",
        "_decoder",
        "_max_line",
        "_max_stream",
        "_parser",
        "_pending",
        "_read",
        "_size",
        "_started",
    )

    def __init__(
        self,
        *,
        max_line: int = DEFAULT_MAX_LINE,
        max_event: int = DEFAULT_MAX_EVENT,
        max_stream: int | None = None,
    ) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self._parser = SSEParser(max_event)
        self._pending: list[str] = []  # the line in progress, in pieces
        self._size = 0  # characters in _pending
        self._cr = False  # the last chunk ended with CR: an LF next is part of that line end
        self._max_line = max_line
        self._max_stream = max_stream
        self._started = False  # a first character came (a byte-order mark before it is skipped)
        self._read = 0

    @property
    def bytes_read(self) -> int:
        """Bytes fed so far."""
        return self._read

    def feed(self, chunk: bytes) -> list[tuple[str, str]]:
        """The events completed by ``chunk``."""
        self._count(len(chunk))
        try:
            text = self._decoder.decode(chunk)
        except UnicodeDecodeError:
            raise SSEError("the event stream is not UTF-8") from None
        return self._text(text)

    def end(self) -> list[tuple[str, str]]:
        """The events completed by the end of the stream (an open line, an open event)."""
        try:
            text = self._decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            raise SSEError("the event stream is not UTF-8") from None
        events = self._text(text)
        if self._pending:
            event = self._line("".join(self._pending))
            self._pending, self._size = [], 0
            if event is not None:
                events.append(event)
        event = self._parser.end()
        if event is not None:
            events.append(event)
        return events

    def _count(self, size: int) -> None:
        self._read += size
        if self._max_stream is not None and self._read > self._max_stream:
            msg = f"the event stream is longer than {self._max_stream} bytes"
            raise SSEError(msg)

    def _text(self, text: str) -> list[tuple[str, str]]:
        if not text:
            return []
        if not self._started:
            self._started = True
            text = text.removeprefix(_BOM)
        if self._cr:
            self._cr = False
            text = text.removeprefix("\n")
        if "\r" in text:
            parts = _LINE_END.split(text)
            self._cr = text.endswith("\r")
        else:
            parts = text.split("\n")
        rest = parts.pop()  # the line still open (empty when the text ended a line)
        events: list[tuple[str, str]] = []
        if parts:
            if self._pending:
                self._pending.append(parts[0])
                parts[0] = "".join(self._pending)
                self._pending, self._size = [], 0
            for line in parts:
                event = self._line(line)
                if event is not None:
                    events.append(event)
        if rest:
            self._size += len(rest)
            if self._size > self._max_line:
                msg = f"a line of the event stream is longer than {self._max_line} characters"
                raise SSEError(msg)
            self._pending.append(rest)
        return events

    def _line(self, line: str) -> tuple[str, str] | None:
        if len(line) > self._max_line:
            msg = f"a line of the event stream is longer than {self._max_line} characters"
            raise SSEError(msg)
        return self._parser.feed(line)


def read_events(chunks: Iterable[bytes], reader: EventReader) -> Iterator[tuple[str, str]]:
    """Every event of a stream of byte chunks, as each completes (`SSEError` past a cap)."""
    for chunk in chunks:
        yield from reader.feed(chunk)
    yield from reader.end()


async def aread_events(
    chunks: AsyncIterable[bytes], reader: EventReader
) -> AsyncIterator[tuple[str, str]]:
    """The async twin of `read_events`."""
    async for chunk in chunks:
        for event in reader.feed(chunk):
            yield event
    for event in reader.end():
        yield event
