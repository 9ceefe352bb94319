"""The one SSE reader: lines end at CR, LF or CRLF only, any chunking reads the same, caps hold."""

from __future__ import annotations

import asyncio
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from a2a_client_errors._sse import EventReader, SSEError, SSEParser, aread_events, read_events

# Characters str.splitlines() breaks at that are not SSE line ends.
NOT_LINE_ENDS = "\u2028\u2029\x85\x0b\x0c\x1c\x1d\x1e"


def _events(*chunks: bytes, reader: EventReader | None = None) -> list[tuple[str, str]]:
    return list(read_events(chunks, reader or EventReader()))


def _reference(text: str) -> list[tuple[str, str]]:
    """A plain reading of the WHATWG grammar over the whole text (and the open event at the end)."""
    events: list[tuple[str, str]] = []
    data: list[str] = []
    name = ""
    for line in re.split(r"\r\n|\r|\n", text.removeprefix("\ufeff")):
        if not line:
            if data:
                events.append((name, "\n".join(data)))
            data, name = [], ""
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "data":
            data.append(value[1:] if value.startswith("\x1e") else value)
        elif field == "event":
            name = value
    if data:
        events.append((name, "\n".join(data)))
    return events


def test_a_message_holding_unicode_line_separators_stays_one_line() -> None:
    """U+2028, U+2029, U+0085 and the other splitlines() breaks are text, not line ends."""
    data = f'{{"text": "a{NOT_LINE_ENDS}b"}}'
    assert _events(f"data: {data}\n\n".encode()) == [("", data)]


@pytest.mark.parametrize("end", ["\n", "\r", "\r\n"])
def test_lines_end_at_cr_lf_and_crlf(end: str) -> None:
    """Each of the three line ends ends a line, and two of them end an event."""
    body = f"event: e{end}data: 1{end}data: 2{end}{end}data: 3{end}{end}".encode()
    assert _events(body) == [("e", "1\n2"), ("", "3")]


def test_a_crlf_split_across_two_chunks_is_one_line_end() -> None:
    """A CR ending one chunk and an LF starting the next make one line end, not two."""
    assert _events(b"data: 1\r", b"\ndata: 2\r", b"\n\r\n") == [("", "1\n2")]


def test_a_character_split_across_chunks_is_read_whole() -> None:
    """A multi-byte character cut between chunks is decoded whole."""
    raw = "data: é\u2028😀\n\n".encode()
    chunks = [raw[i : i + 1] for i in range(len(raw))]
    assert _events(*chunks) == [("", "é\u2028😀")]


def test_the_record_separator_before_a_payload_is_dropped() -> None:
    """``data: <RS>{...}`` (RFC 7464 JSON text sequences) reads as the JSON alone."""
    assert _events(b'data: \x1e{"a": 1}\n\n') == [("", '{"a": 1}')]


def test_one_byte_order_mark_at_the_start_is_skipped() -> None:
    """A leading U+FEFF is not part of the first field name."""
    assert _events("\ufeffdata: 1\n\n".encode()) == [("", "1")]


def test_an_open_event_and_an_open_line_are_delivered_at_the_end() -> None:
    """A stream that closes right after its last data line loses nothing."""
    assert _events(b"data: 1\n\ndata: 2") == [("", "1"), ("", "2")]


def test_comments_ids_and_retries_are_skipped() -> None:
    """Only data and event fields make an event."""
    body = b": keep-alive\nid: 7\nretry: 100\nevent: update\ndata: a\ndata:b\n\n\n\n"
    assert _events(body) == [("update", "a\nb")]


def test_a_stream_that_is_not_utf8_is_refused() -> None:
    """Bytes that are not UTF-8 stop the reading."""
    with pytest.raises(SSEError, match="not UTF-8"):
        _events(b"data: \xff\n\n")
    with pytest.raises(SSEError, match="not UTF-8"):
        _events(b"data: \xc3")


def test_a_line_past_its_cap_stops_the_reading() -> None:
    """A line that never ends is cut at max_line, whether it came in one chunk or many."""
    with pytest.raises(SSEError, match="line"):
        _events(b"data: " + b"x" * 100, reader=EventReader(max_line=50))
    reader = EventReader(max_line=50)
    chunks = [b"xxxxx"] * 20
    with pytest.raises(SSEError, match="line"):
        list(read_events(chunks, reader))
    with pytest.raises(SSEError, match="line"):
        _events(b"data: " + b"x" * 100 + b"\n", reader=EventReader(max_line=50))


def test_an_event_past_its_cap_stops_the_reading() -> None:
    """Short lines that never end their event are cut at max_event."""
    with pytest.raises(SSEError, match="event"):
        _events(*[b"data: x\n"] * 100, reader=EventReader(max_event=100))
    assert _events(b"data: x\n\n" * 100, reader=EventReader(max_event=100)) == [("", "x")] * 100


def test_a_stream_past_its_cap_stops_the_reading() -> None:
    """max_stream bounds the bytes of the whole stream; they are counted as they come."""
    reader = EventReader(max_stream=30)
    assert reader.feed(b"data: 1\n\n" * 3) == [("", "1")] * 3
    assert reader.bytes_read == 27
    with pytest.raises(SSEError, match="stream"):
        reader.feed(b"data: 1\n\n")


def test_the_field_parser_joins_lines_and_caps_events() -> None:
    """SSEParser (line by line) joins data lines, ends events, and caps their size."""
    parser = SSEParser(max_event=10)
    assert parser.feed("data: a") is None
    assert parser.feed("") == ("", "a")
    with pytest.raises(SSEError):
        parser.feed("data: 0123456789")


def test_the_async_reader_reads_the_same_events() -> None:
    """aread_events is read_events over an async iterable."""

    async def chunks() -> object:
        for chunk in (b"data: 1\r", b"\n\r\ndata: \xe2\x80", b"\xa8\n\n"):
            yield chunk

    async def run() -> list[tuple[str, str]]:
        return [event async for event in aread_events(chunks(), EventReader())]  # type: ignore[arg-type]

    assert asyncio.run(run()) == [("", "1"), ("", "\u2028")]


TOKENS = st.sampled_from(
    [
        "data",
        "data:",
        "data: ",
        "event:",
        "id: 1",
        ":",
        " ",
        "\r",
        "\n",
        "\r\n",
        "\x1e",
        "\ufeff",
        "x",
        "{}",
        "é",
        "😀",
        *NOT_LINE_ENDS,
    ]
)
TEXT = st.lists(st.one_of(TOKENS, st.text(max_size=5)), max_size=60).map("".join)


@settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXT, cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12))
def test_any_text_in_any_chunking_reads_as_the_reference_parser(text: str, cuts: list[int]) -> None:
    """Any text, cut anywhere (mid-CRLF, mid-character), reads as the reference parser reads it."""
    raw = text.encode("utf-8", "surrogatepass")
    points = sorted({min(cut, len(raw)) for cut in cuts})
    chunks = [raw[a:b] for a, b in zip([0, *points], [*points, len(raw)], strict=True)]
    try:
        expected = _reference(raw.decode("utf-8"))
    except UnicodeDecodeError:
        with pytest.raises(SSEError):
            _events(*chunks)
        return
    assert _events(*chunks) == expected
