r"""One parse per body: the JSON a peer sent, read by the one parser that can read it.

pydantic-core's parser (jiter) is the fast one, and it reads the same JSON as the standard
library's ``json`` module, to the value, with three exceptions it refuses and ``json`` reads:

* nesting deeper than 200 levels;
* a lone surrogate escape (``"\ud800"``, a high half with no low half after it, or a low half
  alone);
* a number whose integer part has more than 4300 digits and a fraction or an exponent
  (``json`` reads it as ``inf``).

Parsing with jiter, and again with ``json`` when it refuses, would read a large body twice: a
30 MB body with one stray byte at its end is refused only at its end. So the parser is chosen
before parsing, by a scan that can only err towards ``json`` and costs a fraction of a parse:

* depth: a body of fewer than 402 bytes cannot nest 201 levels (each level takes an opening
  and a closing byte); a longer one is read by jiter only if it holds at most 200 ``[`` and
  ``{`` bytes in all;
* surrogates: a body with no backslash holds no escape at all; a body with a backslash in
  every 64 bytes or more goes to ``json`` (which reads escapes faster than jiter); otherwise
  each ``\uD800``-``\uDFFF`` escape is looked at, and its pairing checked;
* long numbers: a run of 4301 digits holds an aligned block of 2048 digits, looked for one
  block in 2048.

Under 64 KiB the brackets and the backslashes are counted in one ``bytes.translate`` pass.
From 64 KiB on, where a pass costs as much as a parse of a string-heavy body, only ``memchr``
runs over the body: the brackets are found one by one up to the 201st, and a body with any
backslash goes to ``json``, which reads it at the speed of the reference.

Either way the body is parsed once, and the value is the one the two-step parse gave.
"""

from __future__ import annotations

import json
import re
from typing import Final

from pydantic_core import from_json

__all__ = ["INVALID", "parse_json"]


class _Invalid:
    """The type of `INVALID`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "INVALID"


INVALID: Final = _Invalid()
"""What `parse_json` returns for bytes that are not JSON (UTF-8) to either parser."""

_JITER_DEPTH: Final = 200
"""The deepest nesting jiter reads (its recursion limit; objects refuse the 201st level)."""
_SHALLOW: Final = 2 * (_JITER_DEPTH + 1)
"""A body shorter than this cannot nest past `_JITER_DEPTH`."""
_MAX_DIGITS: Final = 4300
"""The longest integer part jiter reads (Python's ``int`` string conversion limit)."""
_DIGIT_BLOCK: Final = 2048
"""A run of more than `_MAX_DIGITS` digits holds an aligned block of this many digits."""
_MAX_SURROGATES: Final = 64
"""Surrogate escapes looked at one by one; a body with more goes to ``json`` unexamined."""
_MAX_RUN: Final = 64
"""Backslashes counted before an escape; a longer run goes to ``json`` unexamined."""

_SURROGATE: Final = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LOW_SURROGATE: Final = re.compile(rb"\\u[dD][c-fC-F][0-9a-fA-F]{2}")
_HIGH_DIGITS: Final = frozenset(b"89abAB")
_NOT_SCANNED: Final = bytes(byte for byte in range(256) if byte not in b"[{\\")
"""Every byte but ``[``, ``{`` and the backslash: deleting them leaves the bytes counted."""
_LARGE: Final = 64 * 1024
"""From this size on, the scan uses memchr alone (``bytes.find``), never a pass of its own."""
_DENSE_ESCAPES: Final = 64
"""A body with a backslash in every 64 bytes or more goes to ``json``, unscanned: ``json``
reads escapes faster than jiter, and the scan would look at each one."""
_BACKSLASH: Final = 0x5C
_DIGITS: Final = frozenset(b"0123456789")


def parse_json(raw: bytes) -> object:
    """``raw`` parsed as JSON (strictly UTF-8), or `INVALID`; one parser, one parse.

    The value is the one jiter gives when it reads ``raw``, else the one ``json.loads`` gives,
    else `INVALID`: what parsing with the one and then the other gave, without the second
    parse.
    """
    size = len(raw)
    if size < _SHALLOW:
        jiter = raw.find(b"\\") == -1 or not _may_hold_lone_surrogate(raw)
    elif size < _LARGE:
        # One pass keeps the opening brackets and the backslashes; counting them is cheap.
        kept = raw.translate(None, _NOT_SCANNED)
        escapes = kept.count(b"\\")
        jiter = (
            len(kept) - escapes <= _JITER_DEPTH
            and (
                not escapes
                or (escapes <= size // _DENSE_ESCAPES and not _may_hold_lone_surrogate(raw))
            )
            and (size <= _MAX_DIGITS or not _may_hold_long_number(raw))
        )
    else:
        # A pass over a large body costs as much as parsing it (strings, escapes): only
        # memchr runs over it here, and a large body with any escape goes to json.
        jiter = (
            _at_most_opening(raw, _JITER_DEPTH)
            and raw.find(b"\\") == -1
            and not _may_hold_long_number(raw)
        )
    if jiter:
        try:
            return from_json(raw, cache_strings="keys")
        except ValueError:
            return INVALID
    try:
        return json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):
        return INVALID


def _at_most_opening(raw: bytes, limit: int) -> bool:
    """Whether ``raw`` holds at most ``limit`` ``[`` and ``{`` bytes, found one by one.

    Each is found with ``bytes.find`` (memchr), and the search stops past ``limit``: a large
    body with few brackets costs two memchr runs, one with many costs ``limit`` calls.
    """
    left = limit
    for byte in (b"{", b"["):
        at = raw.find(byte)
        while at != -1:
            left -= 1
            if left < 0:
                return False
            at = raw.find(byte, at + 1)
    return True


def _may_hold_lone_surrogate(raw: bytes) -> bool:
    r"""Whether a ``\uD800``-``\uDFFF`` escape in ``raw`` may stand without its other half.

    An escape is one when an odd run of backslashes ends at it (``\\ud800`` is an escaped
    backslash, then text). A high half followed at once by a low half is a pair; any other
    surrogate escape is lone. Past `_MAX_SURROGATES` escapes, or a run of more than `_MAX_RUN`
    backslashes, the answer is yes: the scan stays short, and ``json`` reads the body.
    """
    paired_at = -1
    looked = 0
    for match in _SURROGATE.finditer(raw):
        start = match.start()
        if start == paired_at:
            continue  # the low half of the pair just read
        looked += 1
        if looked > _MAX_SURROGATES:
            return True
        run = 1
        while start - run >= 0 and raw[start - run] == _BACKSLASH:
            run += 1
            if run > _MAX_RUN:
                return True
        if not run % 2:
            continue  # an escaped backslash, then the text "ud8..": no escape
        end = match.end()
        if raw[start + 3] in _HIGH_DIGITS and _LOW_SURROGATE.match(raw, end):
            paired_at = end
            continue
        return True
    return False


def _may_hold_long_number(raw: bytes) -> bool:
    """Whether ``raw`` may hold a run of more than `_MAX_DIGITS` digits.

    Such a run covers an aligned block of `_DIGIT_BLOCK` bytes, digits all: one block in
    `_DIGIT_BLOCK` is looked at, by its first and last byte first.
    """
    block = _DIGIT_BLOCK
    digits = _DIGITS
    for start in range(0, len(raw) - block + 1, block):
        end = start + block - 1
        if raw[start] in digits and raw[end] in digits and raw[start : end + 1].isdigit():
            return True
    return False
