r"""One parse per body: the JSON a peer sent, read by the one parser that reads it best.

pydantic-core's parser (jiter) is the fast one, and it reads the same JSON as the standard
library's ``json`` module, to the value, with three exceptions it refuses and ``json`` reads:

* nesting deeper than `MAX_DEPTH` (200) levels;
* a lone surrogate escape (``"\ud800"``, a high half with no low half after it, or a low half
  alone);
* a number whose integer part has more than 4300 digits and a fraction or an exponent
  (``json`` reads it as ``inf``).

A body nested deeper than 200 levels is refused: it is read as a body that is not JSON.
That is the cap every JSON reader has (the standard library's is the interpreter's recursion
limit, serde_json's 128, protobuf's ``json_format`` 100, which a2a-sdk reads every message
through), and it is what lets a body be parsed once without being scanned first: no scan
short of a parse tells how deep a body nests, and parsing with jiter and again with ``json``
when jiter refuses would read a large body twice.

The other two are found before parsing, at the speed of ``memchr``, and such a body goes to
``json``:

* surrogates: a body with no backslash holds no escape at all; otherwise its escapes are read
  one by one from the first, as the parsers read them, up to `_MAX_ESCAPES` (and one more per
  `_BYTES_PER_ESCAPE` bytes), and a surrogate escape among them sends the body to ``json``
  unless its other half follows. A body with more escapes, or more than `_MAX_ESCAPES` in
  the 64 bytes from the first, goes there unexamined (``json`` reads ``\u`` escapes twice as
  fast as jiter);
* long numbers: a run of 4301 digits holds an aligned block of 2048 digits, looked for one
  block in 2048.

``json`` reads what it is given to the interpreter's recursion limit, so a body it reads for
one of those reasons is not held to the 200 levels. Either way the body is parsed once.

Where only a body's envelope matters (a 2xx answer classified, none of it kept), `envelope`
reads it in the parse's place: the same parser, the same rules, every member validated, but
only the envelope's members built as Python objects. A success's task is never built, which
is most of what parsing it costs. A body it cannot settle (JSON that is not an object) is
then parsed whole: read twice, the first time building nothing.
"""

from __future__ import annotations

import json
import json.scanner
from typing import Any, Final, cast

from pydantic_core import SchemaValidator, ValidationError, from_json
from pydantic_core import core_schema as cs

__all__ = ["ENVELOPE_MEMBERS", "INVALID", "MAX_DEPTH", "envelope", "parse_json", "request_json"]


class _Invalid:
    """The type of `INVALID`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "INVALID"


INVALID: Final = _Invalid()
"""What `parse_json` returns for bytes it does not read: not JSON, not UTF-8, or too deep."""

MAX_DEPTH: Final = 200
"""The deepest nesting of arrays and objects read (jiter's own limit)."""

_MAX_DIGITS: Final = 4300
"""The longest integer part jiter reads (Python's ``int`` string conversion limit)."""
_DIGIT_BLOCK: Final = 2048
"""A run of more than `_MAX_DIGITS` digits holds an aligned block of this many digits."""
_MAX_ESCAPES: Final = 4
_BYTES_PER_ESCAPE: Final = 4096
"""Escapes read one by one: 4, and one more per 4096 bytes; a body with more goes to ``json``
unexamined."""
_DENSE_SPAN: Final = 64
"""More than `_MAX_ESCAPES` backslashes in the 64 bytes from the first: ``json``, unread."""

_U: Final = ord("u")
_D: Final = frozenset(b"dD")
_SURROGATE_DIGITS: Final = frozenset(b"89abcdefABCDEF")
r"""The third digit of a surrogate escape, ``\uD800`` to ``\uDFFF``."""
_HIGH_DIGITS: Final = frozenset(b"89abAB")
_LOW_DIGITS: Final = frozenset(b"cdefCDEF")
_BACKSLASH: Final = ord("\\")
"""An int, not a byte string: ``in`` tries a bytes operand as an index first (and raises)."""
_DIGITS: Final = frozenset(b"0123456789")

_scan_once: Final = json.scanner.make_scanner(cast("Any", json.JSONDecoder()))
"""The standard library's scanner, as ``json.loads`` builds it (its C one, where there is)."""
_SPACE: Final = " \t\n\r"
"""What ``json`` skips before and after the value (``json.decoder.WHITESPACE``)."""


def parse_json(raw: bytes) -> object:
    r"""``raw`` parsed as JSON (strictly UTF-8), or `INVALID`; one parser, one parse.

    The value is the one jiter gives, else (for a lone surrogate escape or a 4300-digit number,
    which jiter refuses, or more escapes than are worth looking at one by one) the one
    ``json.loads(raw.decode("utf-8"))`` gives, else `INVALID`. A body nested deeper than
    `MAX_DEPTH` levels that jiter is given is `INVALID`.
    """
    if (_BACKSLASH in raw and _escapes_for_json(raw)) or (
        len(raw) > _MAX_DIGITS and _may_hold_long_number(raw)
    ):
        return _json_loads(raw)
    try:
        return from_json(raw, cache_strings="keys")
    except ValueError:
        return INVALID


def request_json(raw: bytes) -> object:
    """A request's body read as the most lenient JSON server reads it, or `INVALID`.

    What a request carries decides how it is guarded (a send is never resent blind), so a
    body an agent may read as JSON is read as JSON here too: `parse_json`'s reading, else
    ``json.loads`` of the bytes (whitespace and a byte order mark before the value, UTF-16
    and UTF-32, ``NaN``, any depth Python's recursion allows), else the same with invalid
    UTF-8 read as replacement characters (as Go's ``encoding/json`` reads it).
    """
    parsed = parse_json(raw)
    if parsed is not INVALID:
        return parsed
    try:
        return json.loads(raw)
    except UnicodeDecodeError:
        pass
    except (ValueError, RecursionError):
        return INVALID
    try:
        return json.loads(raw.decode("utf-8", "replace").removeprefix("\ufeff"))
    except (ValueError, RecursionError):
        return INVALID


ENVELOPE_MEMBERS: Final = ("error", "jsonrpc", "id", "message", "result")
"""The members `envelope` keeps (``result`` as ``{}`` when it is an object)."""

_NO_MEMBERS: Final = cs.typed_dict_schema({}, extra_behavior="ignore")
"""Any JSON object, its members read (validated) and kept as none."""
_ANY: Final = cs.any_schema()
_ENVELOPE: Final = SchemaValidator(
    cs.typed_dict_schema(
        {
            **{
                name: cs.typed_dict_field(_ANY, required=False)
                for name in ENVELOPE_MEMBERS
                if name != "result"
            },
            "result": cs.typed_dict_field(
                cs.union_schema([_NO_MEMBERS, _ANY], mode="left_to_right"), required=False
            ),
        },
        extra_behavior="ignore",
    )
)
"""A JSON object's envelope: `ENVELOPE_MEMBERS`, an object ``result`` kept as ``{}``, every
other member read and dropped."""


def envelope(raw: bytes) -> dict[str, Any] | _Invalid | None:
    """``raw``'s envelope, read as `parse_json` reads it, without building the rest of it.

    ``raw`` is read by the same parser (jiter), with the same rules and to the same depth,
    but only `ENVELOPE_MEMBERS` are kept: the others are validated and dropped before any
    Python object is built for them, and an object ``result`` is kept as ``{}`` (a success's
    task is most of its cost). `INVALID` when ``raw`` is not JSON to that parser, so not to
    `parse_json` either. None when it is JSON but not an object, or one `parse_json` gives to
    ``json`` (a lone surrogate escape, many escapes, a long number): then it is to be parsed
    whole.
    """
    if (_BACKSLASH in raw and _escapes_for_json(raw)) or (
        len(raw) > _MAX_DIGITS and _may_hold_long_number(raw)
    ):
        return None
    try:
        return _ENVELOPE.validate_json(raw)  # type: ignore[no-any-return]
    except ValidationError as exc:  # not JSON (too deep included), or not an object
        return INVALID if exc.errors()[0]["type"] == "json_invalid" else None


def _json_loads(raw: bytes) -> object:
    """``json.loads(raw.decode("utf-8"))``, or `INVALID`: its steps, without its wrappers.

    The same decoding, the same refusal of a byte order mark, the same scanner and the same
    whitespace rules before and after the value; what it spares is the calls around them
    (about a microsecond, the most of a small body's cost).
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return INVALID
    if text.startswith("\ufeff"):
        return INVALID  # json.loads refuses a BOM in text ("decode using utf-8-sig")
    try:
        # lstrip() gives the text itself back when it starts with no whitespace: no copy.
        value, end = _scan_once(text, len(text) - len(text.lstrip(_SPACE)))
    except (StopIteration, ValueError, RecursionError):
        return INVALID
    if end != len(text) and text[end:].strip(_SPACE):
        return INVALID  # "Extra data"
    return value


def _escapes_for_json(raw: bytes) -> bool:
    r"""Whether ``raw``'s escapes send it to ``json``: a lone surrogate among them, or many.

    The backslashes are found one by one (``memchr``) and read as the parsers read them, left
    to right: ``\\`` is one escape, of a backslash (so ``\\ud800`` is text), and any other
    escape is a backslash and the character after it. (A backslash outside a string is not
    JSON to either parser, so the reading may start at the first.) A ``\uD800``-``\uDBFF``
    escape followed at once by a ``\uDC00``-``\uDFFF`` one is a pair; any other surrogate
    escape is lone.

    Past `_MAX_ESCAPES` escapes and one more per `_BYTES_PER_ESCAPE` bytes, the answer is yes:
    ``json`` reads escapes at the reference's speed (jiter reads ``\u`` escapes at half of it),
    and reading them one by one here would cost more than that.
    """
    at = raw.find(b"\\")
    if raw.count(b"\\", at, at + _DENSE_SPAN) > _MAX_ESCAPES:
        return True  # escapes packed together from the first: more than are worth reading
    left = _MAX_ESCAPES + len(raw) // _BYTES_PER_ESCAPE
    try:
        while at != -1:
            left -= 1
            if left < 0:
                return True
            if raw[at + 1] == _U and raw[at + 2] in _D and raw[at + 3] in _SURROGATE_DIGITS:
                # A surrogate escape (its last two digits are the parsers' to check: with bad
                # ones, the body is not JSON to either), and a low half after a high one?
                if not (
                    raw[at + 3] in _HIGH_DIGITS
                    and raw[at + 6] == _BACKSLASH
                    and raw[at + 7] == _U
                    and raw[at + 8] in _D
                    and raw[at + 9] in _LOW_DIGITS
                ):
                    return True
                at += 6  # the low half of the pair, read with it
            at = raw.find(b"\\", at + 2)
    except IndexError:
        return True  # a backslash at the very end: not JSON, which json says as fast
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
