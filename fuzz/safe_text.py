"""Text a server wrote, rendered so it cannot act on what shows it: a terminal, summary.md, report.html.

Why: tool names, descriptions, isError texts and error messages are written by the server's
author, and `catalogue`, `fuzz` and `load` run in CI against servers the user does not trust.
Printed raw, `ESC[2J` clears the screen, `ESC]0;...BEL` retitles the window, `\\r\\n` forges a
line of the summary, U+202E reverses what follows and a zero-width space hides in plain sight.
Every output of such text goes through one of these functions; what is stored (findings.json,
catalogue.json, `--json`) keeps the raw text, so the TEXT-* observations' offsets still point
into what the server sent.

A hidden character is shown the way Python writes it in a string literal (`\\x1b`, `\\r`,
`\\u202e`, `\\U000e0041`), which is also how the TEXT-* spans show it. Hidden means every
character `str.isprintable` refuses (C0 and C1 controls, DEL, format characters such as the bidi
controls and zero-width ones, line and paragraph separators, spaces other than ' ', surrogates,
private-use and unassigned code points) plus what `invisible` names: the few letters that draw
nothing (Hangul fillers) and the variation selectors used to smuggle bytes. `invisible` is also
the TEXT-01 observation's definition (fuzz/text_flags.py): one list of what hides, whether it is
flagged in a catalogue or escaped on a screen. A backslash the server wrote is left as it is:
it can make harmless text look escaped, never hide a character, and doubling every backslash
would garble every Windows path in an error message.
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata
from collections.abc import Callable
from typing import Final

#: Letters and marks that `isprintable` accepts but that draw nothing.
_DRAW_NOTHING: Final = frozenset("\u115f\u1160\u3164\uffa0")
#: The bidirectional controls: each reorders what follows it on screen (Trojan Source).
BIDI: Final = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_SOFT_HYPHEN: Final = "\u00ad"
_SHORT: Final = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
_ASCII_HIDDEN: Final = re.compile(r"[\x00-\x1f\x7f]")
CUT: Final = "..."
#: Characters of one name (a tool's, a resource's) shown in a table; findings.json and
#: catalogue.json keep all of it. Bounded so a name of a megabyte cannot fill a screen or a report.
NAME_WIDTH: Final = 80


def invisible(ch: str) -> bool:
    """Whether one character that is not a control draws nothing or reorders the text around it:
    format characters (bidi controls, zero-width ones, tags that smuggle ASCII), private-use and
    unassigned code points, the supplementary variation selectors (they smuggle bytes after any
    letter), the letters that draw nothing. Left out: the soft hyphen, a hyphenation hint in
    ordinary prose (`hidden` still escapes it: it is not printable), and U+FE00..FE0F, which pick
    a glyph's presentation in everyday text (the U+FE0F of "❤️")."""
    if "\U000e0100" <= ch <= "\U000e01ef" or ch in _DRAW_NOTHING:
        return True
    return unicodedata.category(ch) in ("Cf", "Co", "Cn") and ch != _SOFT_HYPHEN


def hidden(ch: str) -> bool:
    """Whether one character would act on a terminal or show nothing where it stands."""
    return not ch.isprintable() or invisible(ch)


def _bmp_class(test: Callable[[str], bool]) -> str:
    """Every character of the Basic Multilingual Plane `test` accepts, as the body of a regex class."""
    parts: list[str] = []
    code = 0
    while code < 0x10000:
        if not test(chr(code)):
            code += 1
            continue
        end = code
        while end + 1 < 0x10000 and test(chr(end + 1)):
            end += 1
        parts.append(f"\\u{code:04x}" + (f"-\\u{end:04x}" if end > code else ""))
        code = end + 1
    return "".join(parts)


@functools.cache
def _hidden_pattern() -> re.Pattern[str]:
    """Every hidden character of the Basic Multilingual Plane as one class, so text in any script
    is scanned at the regex engine's speed; an astral character (emoji, tags) is only a candidate,
    checked one by one. Built on the first text that is not ASCII (some milliseconds)."""
    return re.compile(f"[{_bmp_class(hidden)}]|[\\U00010000-\\U0010ffff]")


@functools.cache
def _invisible_pattern() -> re.Pattern[str]:
    """Every invisible character of the BMP as one class; an astral one is only a candidate."""
    return re.compile(f"[{_bmp_class(invisible)}]|[\\U00010000-\\U0010ffff]")


def invisible_run(text: str) -> tuple[int, int] | None:
    """(start, end) of the first run of `invisible` characters in `text`, or None: found at the
    regex engine's speed, so a description of 15 MB is scanned in milliseconds, not with a call
    per character."""
    if text.isascii():
        return None
    for m in _invisible_pattern().finditer(text):
        start = m.start()
        if invisible(text[start]):
            end = start + 1
            while end < len(text) and invisible(text[end]):
                end += 1
            return start, end
    return None


def _candidates(text: str) -> re.Pattern[str]:
    return _ASCII_HIDDEN if text.isascii() else _hidden_pattern()


def _escape(ch: str) -> str:
    code = ord(ch)
    if ch in _SHORT:
        return _SHORT[ch]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


_LONGEST_ESCAPE: Final = 10  # \U000e0041


def _shown(ch: str, multiline: bool, tag: str) -> str:
    """One candidate character as shown: itself when it hides nothing, else escaped (in <tag>)."""
    if (multiline and ch == "\n") or not hidden(ch):
        return ch
    return f"<{tag}>{_escape(ch)}</{tag}>" if tag else _escape(ch)


def _segments(text: str, limit: int | None, multiline: bool) -> list[tuple[str, bool]]:
    """(piece, is_an_escape) in order; with `limit`, cut after that many characters as shown
    (never inside an escape) and end with CUT."""
    out: list[tuple[str, bool]] = []
    shown = 0
    pos = 0

    def add(piece: str, escape: bool) -> bool:
        nonlocal shown
        if limit is not None and shown + len(piece) > limit:
            if not escape:
                out.append((piece[: max(0, limit - shown - len(CUT))], False))
            out.append((CUT, False))
            return False
        out.append((piece, escape))
        shown += len(piece)
        return True

    for m in _candidates(text).finditer(text):
        ch = m.group()
        if (multiline and ch == "\n") or not hidden(ch):
            continue
        if (m.start() > pos and not add(text[pos:m.start()], False)) or not add(_escape(ch), True):
            return out
        pos = m.end()
    if pos < len(text):
        add(text[pos:], False)
    return out


def visible(text: object, limit: int | None = None, *, multiline: bool = False) -> str:
    """Untrusted text for a terminal (or a plain-text report such as junit.xml): one line, every
    hidden character escaped; `limit` bounds the characters shown, `multiline` keeps `\\n`."""
    s = str(text)
    if limit is None or len(s) <= limit // _LONGEST_ESCAPE:  # nothing to cut, however much is escaped
        return _candidates(s).sub(lambda m: _shown(m.group(), multiline, ""), s)
    return "".join(piece for piece, _ in _segments(s, limit, multiline))


_MD_BACKSLASH: Final = re.compile(r"\\(?=[!-/:-@\[-`{-~])")  # a backslash that would escape what follows
_MD_META: Final = str.maketrans({"|": "\\|", "`": "\\`", "<": "\\<"})


def markdown_cell(text: object, limit: int | None = None) -> str:
    """Untrusted text for a Markdown table cell or a line of prose: `visible`, then what could
    forge structure neutralised: `|` (a new column), backticks (a code span swallowing the row),
    `<` (raw HTML, autolinks), `](` (a link or an image), and a backslash the server put before
    any punctuation (it would escape the escape)."""
    out: list[str] = []
    for piece, escape in _segments(str(text), limit, False):
        if escape:
            out.append(piece)  # `\x1b` and the like: a backslash before a letter renders as itself
        else:
            out.append(_MD_BACKSLASH.sub(r"\\\\", piece).translate(_MD_META).replace("](", "]\\("))
    return "".join(out)


def markdown_code(text: object, limit: int | None = None) -> str:
    """Untrusted text as an inline code span outside a table (a target, a command): `visible`
    inside a fence longer than any run of backticks in it."""
    s = visible(text, limit)
    fence = "`" * (max((len(run) for run in re.findall(r"`+", s)), default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def html_text(text: object, limit: int | None = None, *, multiline: bool = False, mark: bool = True) -> str:
    """Untrusted text for an HTML page: escaped as `html.escape` does, each hidden character shown
    as `visible` shows it inside a <mark> (highlighted with no stylesheet), so `\\x1b` the server
    sent stands apart from the four characters `\\x1b` it may have typed. `mark=False` for an
    attribute value or <title>, where no element may appear."""
    s = str(text)
    if limit is None or len(s) <= limit // _LONGEST_ESCAPE:  # html.escape leaves hidden characters alone
        out = _candidates(s).sub(lambda m: _shown(m.group(), multiline, "mark" if mark else ""), html.escape(s))
        return out.replace("</mark><mark>", "")
    out = "".join(f"<mark>{html.escape(piece)}</mark>" if escape and mark else html.escape(piece)
                  for piece, escape in _segments(s, limit, multiline))
    return out.replace("</mark><mark>", "")  # a run of hidden characters: one highlight
