"""Incremental parser for streamed tool-call arguments: a partial JSON object kept current after every
delta, at a total cost linear in the length of the arguments.

Why not a library: ``../shared/MEASURED.md`` compares the options on 1 MB of arguments in 8-byte deltas.
Re-parsing the whole text per delta (``partial-json-parser``, ``jiter`` partial mode) is quadratic;
ijson's C backend is quadratic on one long string; ijson's pure-Python backend is linear on many short
values but its lexer re-searches an open string from its opening quote on every piece
(``buf.index('"', start)`` with a fixed ``start``): measured here, one 1 MB string value in 8-byte
pieces costs 45x the 100 KB run instead of 10x. Tool calls that write a file are exactly that shape.
ijson also reports a string only once its closing quote arrives. This module is a small JSON state
machine that never looks at a byte twice: inside a string it jumps over plain runs with one regular
expression match, and it keeps the open string as one decoded string grown in place, so a UI can show
a file while it is being written and the string is held once (a list of fragments costs an object
header of about 50 bytes per fragment, several times the text when escapes cut it into short runs,
and a second copy when joined at the closing quote).

Grammar: RFC 8259 JSON text (one value, surrounding whitespace allowed). Numbers are parsed with
:func:`json.loads` once their token ends; ``true``/``false``/``null`` likewise.

Thread safety: one parser per tool call, fed by one thread (the stream processor holds its lock).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, NoReturn

from .._errors import PartialJSONError

__all__ = ["PartialJSONError", "PartialJSONParser"]


_RUN = re.compile(r'[^"\\]+')
_SPACE = re.compile(r"[ \t\r\n]+")
_SCALAR = re.compile(r"[-+0-9.eEa-z]+")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")

# Modes: what the parser expects next. The structural modes come first, numbered from 0: they index
# _STRUCTURAL, the table of their one-character handlers.
_VALUE = 0  # a value
_VALUE_OR_CLOSE = 1  # right after '[': a value or ']'
_KEY_OR_CLOSE = 2  # right after '{': a key or '}'
_KEY = 3  # after ',' in an object
_COLON = 4
_AFTER_VALUE = 5  # ',' or the container's closing bracket
_DONE = 6
_STRING = 7
_SCALAR_TOKEN = 8


class PartialJSONParser:
    """Feed text with :meth:`feed`; read :attr:`value` at any time.

    ``value`` is the root value as far as it is known: objects and arrays appear as soon as they open
    and are filled in place as members complete (the same container objects throughout, so holding a
    reference is enough to see later members). A string or number still being streamed is not in
    ``value`` yet; its decoded text so far is :meth:`open_text` (which only grows while that string is
    open), to go at :attr:`open_path`. After :meth:`close`, :attr:`complete` tells
    whether the text was one whole JSON value.

    Every method costs time proportional to the text it is given, never to what came before.
    """

    __slots__ = (
        "_carry",
        "_is_key",
        "_keys",
        "_mode",
        "_offset",
        "_stack",
        "_string",
        "_token",
        "complete",
        "error",
        "value",
    )

    def __init__(self) -> None:
        self.value: Any = None
        self.complete = False
        self.error: PartialJSONError | None = None
        self._string = ""  # the open string's decoded text; see _add
        self._stack: list[dict[str, Any] | list[Any]] = []
        self._keys: list[str | None] = []
        self._mode = _VALUE
        self._is_key = False
        self._token: list[str] = []
        self._carry = ""
        self._offset = 0  # characters consumed before the current piece, for error positions

    # -- public ----------------------------------------------------------------------------------
    @property
    def in_string(self) -> bool:
        """True while a string value (not a key) is open."""
        return self._mode == _STRING and not self._is_key

    @property
    def open_path(self) -> tuple[str | int, ...] | None:
        """Where the open string will go: keys and list indexes from the root; ``()`` for a root
        string; ``None`` when no string value is open."""
        if not self.in_string:
            return None
        path: list[str | int] = []
        last = len(self._stack) - 1
        for depth, container in enumerate(self._stack):
            if isinstance(container, dict):
                key = self._keys[depth]
                path.append(key if key is not None else "")
            else:
                path.append(len(container) if depth == last else len(container) - 1)
        return tuple(path)

    def open_text(self) -> str:
        """The open string's decoded text so far (``""`` when none is open)."""
        return self._string

    def feed(self, text: str) -> None:
        """Parse ``text``, the next piece of the JSON text.

        Raises :class:`PartialJSONError` on text that cannot be JSON; the parser then stays failed
        (:attr:`error`) and ignores further pieces.
        """
        if self.error is not None:
            return
        try:
            self._feed(text)
        except PartialJSONError as exc:
            self.error = exc
            raise

    def close(self) -> bool:
        """End of text: finish a root number or literal. Returns :attr:`complete`.

        Raises :class:`PartialJSONError` if the last token is not a valid literal or number.
        """
        # Only a root number or literal can end with the text; inside a container it was cut off.
        if self.error is None and self._mode == _SCALAR_TOKEN and not self._stack:
            try:
                self._end_scalar()
            except PartialJSONError as exc:
                self.error = exc
                raise
        self.complete = self.error is None and self._mode == _DONE and not self._carry
        return self.complete

    # -- machine ---------------------------------------------------------------------------------
    def _fail(self, message: str, i: int) -> NoReturn:
        raise PartialJSONError(message, self._offset + i - len(self._carry))

    def _feed(self, text: str) -> None:
        if self._carry:
            text = self._carry + text  # at most 11 characters: a split escape sequence
            self._offset -= len(self._carry)
            self._carry = ""
        n = len(text)
        i = 0
        structural = _STRUCTURAL
        while i < n:
            mode = self._mode
            if mode == _STRING:  # inline, with its own loop: most of the text is in strings
                while i < n:
                    m = _RUN.match(text, i)
                    if m is not None:
                        self._add(m.group())
                        i = m.end()
                    elif text[i] == '"':
                        self._end_string()
                        i += 1
                        break
                    else:
                        j = self._escape(text, i)
                        if j < 0:
                            self._carry = text[i:]  # an escape cut off: decoded with the next piece
                            self._offset += n
                            return
                        i = j
            elif mode == _SCALAR_TOKEN:
                i = self._scalar_part(text, i, n)
            else:
                c = text[i]
                if c in " \t\r\n":
                    m = _SPACE.match(text, i)
                    i = m.end() if m is not None else i + 1
                else:
                    i = structural[mode](self, c, i)
        self._offset += n

    def _scalar_part(self, text: str, i: int, n: int) -> int:
        """Take the open number or literal's characters from ``text[i]`` on; end it at the first other
        character, which is left (the index returned) for the next mode."""
        m = _SCALAR.match(text, i)
        if m is not None:
            self._token.append(m.group())
            i = m.end()
        if i < n:
            self._end_scalar(i)
        return i

    # Structural handlers, one per mode (see _STRUCTURAL): take the character ``c`` at ``i`` (never
    # whitespace), return the index to go on from.
    def _at_value(self, c: str, i: int) -> int:
        if c == "{":
            self._open({})
            self._mode = _KEY_OR_CLOSE
        elif c == "[":
            self._open([])
            self._mode = _VALUE_OR_CLOSE
        elif c == '"':
            self._mode = _STRING
            self._is_key = False
            self._string = ""
        elif c in "-0123456789tfn":
            self._mode = _SCALAR_TOKEN
            self._token = []
            return i  # the token regex takes this character
        else:
            self._fail(f"unexpected {c!r} where a value was expected", i)
        return i + 1

    def _at_value_or_close(self, c: str, i: int) -> int:
        if c == "]":
            self._close_container()
            return i + 1
        return self._at_value(c, i)

    def _at_key(self, c: str, i: int) -> int:
        if c != '"':
            self._fail(f"unexpected {c!r} where an object key was expected", i)
        self._mode = _STRING
        self._is_key = True
        self._string = ""
        return i + 1

    def _at_key_or_close(self, c: str, i: int) -> int:
        if c == "}":
            self._close_container()
            return i + 1
        return self._at_key(c, i)

    def _at_colon(self, c: str, i: int) -> int:
        if c != ":":
            self._fail(f"unexpected {c!r} where ':' was expected", i)
        self._mode = _VALUE
        return i + 1

    def _after_value(self, c: str, i: int) -> int:
        top = self._stack[-1]
        if c == ",":
            self._mode = _KEY if isinstance(top, dict) else _VALUE
        elif c == "}" and isinstance(top, dict):
            self._close_container()
        elif c == "]" and isinstance(top, list):
            self._close_container()
        else:
            self._fail(f"unexpected {c!r} after a value", i)
        return i + 1

    def _at_done(self, c: str, i: int) -> int:
        self._fail(f"unexpected {c!r} after the end of the JSON value", i)

    def _escape(self, text: str, i: int) -> int:
        """Decode the escape at ``text[i]`` (a backslash). Returns the index after it, or -1 when the
        sequence is cut off at the end of ``text`` (the caller keeps the tail for the next piece)."""
        n = len(text)
        if i + 1 >= n:
            return -1
        c = text[i + 1]
        simple = _ESCAPES.get(c)
        if simple is not None:
            self._add(simple)
            return i + 2
        if c != "u":
            self._fail(f"invalid escape \\{c}", i)
        if i + 6 > n:
            return -1
        if _HEX4.fullmatch(text, i + 2, i + 6) is None:
            self._fail("invalid \\u escape", i)
        code = int(text[i + 2 : i + 6], 16)
        if 0xD800 <= code <= 0xDBFF:
            # A high surrogate pairs with a following \uDC00-\uDFFF escape into one character.
            rest = text[i + 6 : i + 12]
            if len(rest) < 6 and "\\u".startswith(rest[:2]):
                return -1  # the low half may still come
            if rest.startswith("\\u") and _HEX4.fullmatch(rest, 2, 6):
                low = int(rest[2:6], 16)
                if 0xDC00 <= low <= 0xDFFF:
                    self._add(chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)))
                    return i + 12
        self._add(chr(code))
        return i + 6

    def _add(self, piece: str) -> None:
        # With the attribute cleared this frame holds the only reference, so CPython resizes the string
        # in place instead of copying it: linear in the string's length.
        text = self._string
        self._string = ""
        text += piece
        self._string = text

    def _put(self, value: Any) -> None:
        if not self._stack:
            self.value = value
            self._mode = _DONE
            return
        top = self._stack[-1]
        if isinstance(top, dict):
            key = self._keys[-1]
            top[key if key is not None else ""] = value
        else:
            top.append(value)
        self._mode = _AFTER_VALUE

    def _open(self, container: dict[str, Any] | list[Any]) -> None:
        self._put(container)  # visible at once, filled in place
        self._stack.append(container)
        self._keys.append(None)

    def _close_container(self) -> None:
        self._stack.pop()
        self._keys.pop()
        self._mode = _AFTER_VALUE if self._stack else _DONE

    def _end_string(self) -> None:
        text = self._string
        self._string = ""
        if self._is_key:
            self._keys[-1] = text
            self._mode = _COLON
            self._is_key = False
        else:
            self._put(text)

    def _end_scalar(self, i: int = 0) -> None:
        token = "".join(self._token)
        self._token = []
        try:
            value = json.loads(token)
        except ValueError:
            self._mode = _VALUE
            self._fail(f"invalid literal or number {token!r}", i)
        self._put(value)


# The structural modes' handlers, indexed by mode (a tuple index is the cheapest dispatch per character).
_STRUCTURAL: tuple[Callable[[PartialJSONParser, str, int], int], ...] = (
    PartialJSONParser._at_value,  # _VALUE
    PartialJSONParser._at_value_or_close,  # _VALUE_OR_CLOSE
    PartialJSONParser._at_key_or_close,  # _KEY_OR_CLOSE
    PartialJSONParser._at_key,  # _KEY
    PartialJSONParser._at_colon,  # _COLON
    PartialJSONParser._after_value,  # _AFTER_VALUE
    PartialJSONParser._at_done,  # _DONE
)
