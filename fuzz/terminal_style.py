"""Colour and column widths for what a command prints to a person at a terminal.

Why: the verdict word and a finding's strength are what a reader looks for first, so on a terminal
they are coloured (MUST and FAIL red, SHOULD and observations yellow, PASS green, ERROR bold red,
asides dim). Colour is for a person only: a stream that is not a terminal (a pipe, a CI log file,
pytest's capture), `NO_COLOR` set to anything (no-color.org), `TERM=dumb` or `--no-color` (any
command; `no-color = true` in the configuration, MCP_TEMPEST_NO_COLOR=true) get the plain text,
byte for byte. `FORCE_COLOR` set to anything colours a stream that is not a terminal (tests, CI
viewers that render colour); `NO_COLOR` and `--no-color` still win, as the user's own choice.
Files (findings.json, summary.md, reports) are never coloured: nothing here is called for them.

Colour never carries the server's text raw: `paint` shows what it is given through
fuzz/safe_text.py `visible` first (which leaves text already shown that way as it is), so the
only escape sequences on the screen are the SGR codes written here.

Tables fit in COLUMNS: a name or an answer is cut to its column by display width (a CJK
character takes two columns), and a status too long for its row goes on lines of its own.
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
from typing import Final, TextIO

from mcp_tempest.fuzz.safe_text import CUT, visible

#: The widest line of a table `fuzz` and `catalogue` print: a CI log viewer, a split terminal.
COLUMNS: Final = 100
#: Characters of a row's status (a note, a harness error) shown under it; a whole error has its own line.
STATUS_WIDTH: Final = 600
#: The command-line switch every command takes (fuzz/cli.py removes it before the command's parser).
NO_COLOR_FLAG: Final = "--no-color"

RED: Final = "31"
YELLOW: Final = "33"
GREEN: Final = "32"
BOLD_RED: Final = "1;31"
DIM: Final = "2"
_RESET: Final = "\x1b[0m"
_SGR: Final = re.compile(r"\x1b\[[0-9;]*m")

#: The verdict words of fuzz/verdict_line.py, each in its colour.
VERDICT_STYLE: Final = {"PASS": GREEN, "FAIL": RED, "ERROR": BOLD_RED, "INTERRUPTED": YELLOW}
#: A finding's strength (fuzz/findings.py `label`: `MUST`, `unconfirmed SHOULD`, ...) in its colour.
STRENGTH_STYLE: Final = {"MUST": RED, "SHOULD": YELLOW, "HEURISTIC": YELLOW}

_switched_off = False


def switch_off() -> None:
    """`--no-color` was given: no colour for the rest of this process, whatever the streams are."""
    global _switched_off
    _switched_off = True


def switched_off() -> bool:
    """Whether the user refused colour: `--no-color`, or `NO_COLOR` set to anything."""
    return _switched_off or bool(os.environ.get("NO_COLOR"))


def escapes_allowed(stream: TextIO | None) -> bool:
    """Whether `stream` is a terminal that wants escape sequences at all (the live progress bar
    redraws its line with them): a terminal, not `TERM=dumb`, colour not refused."""
    is_tty = bool(getattr(stream, "isatty", lambda: False)())
    return is_tty and not switched_off() and os.environ.get("TERM") != "dumb"


def colour_on(stream: TextIO | None = None) -> bool:
    """Whether text for `stream` (default: sys.stdout as it is now) is coloured."""
    stream = sys.stdout if stream is None else stream
    if switched_off():
        return False
    return bool(os.environ.get("FORCE_COLOR")) or escapes_allowed(stream)


def paint(text: str, style: str, on: bool) -> str:
    """`text` in `style` when `on`; else `text` unchanged. Either way shown through `visible`, so
    a server's escape sequence is text, never a code."""
    shown = visible(text)
    return f"\x1b[{style}m{shown}{_RESET}" if on and shown else shown


def verdict_word(word: str, on: bool) -> str:
    """PASS, FAIL, ERROR, INTERRUPTED in their colours (another word in none)."""
    style = VERDICT_STYLE.get(word)
    return paint(word, style, on) if style else word


def severity(label: str, on: bool) -> str:
    """A finding's label coloured by its strength, its last word (`unconfirmed MUST` is a MUST)."""
    style = STRENGTH_STYLE.get(label.rsplit(" ", 1)[-1])
    return paint(label, style, on) if style else label


def aside(text: str, on: bool) -> str:
    """Text beside the point (timings, counts of replays): dim."""
    return paint(text, DIM, on)


# --- widths ---


def _char_columns(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def columns(text: str) -> int:
    """How many terminal columns `text` (already `visible`: one line, no controls but the SGR
    codes `paint` wrote, which take none) takes."""
    if "\x1b" in text:
        text = _SGR.sub("", text)
    return len(text) if text.isascii() else sum(_char_columns(ch) for ch in text)


def _prefix(text: str, room: int) -> str:
    """The longest start of `text` within `room` columns (at least one character)."""
    used = 0
    for i, ch in enumerate(text):
        used += _char_columns(ch)
        if used > room:
            return text[: max(i, 1)]
    return text


def fit(text: str, width: int) -> str:
    """`text` cut to at most `width` columns, ending in `...` when cut."""
    if columns(text) <= width:
        return text
    return _prefix(text, width - len(CUT)) + CUT


def cell(text: str, width: int) -> str:
    """`fit`, padded with spaces to exactly `width` columns: one column of a table."""
    shown = fit(text, width)
    return shown + " " * max(0, width - columns(shown))


def with_status(row: str, status: list[str], indent: str = "      ") -> list[str]:
    """A table row and the notes after it (`visible` already), joined by `; ` on the row when
    that fits in COLUMNS, else each note on lines of its own under the row, so the columns stay
    aligned, nothing is lost and one note is never split across another's line."""
    parts = [part for part in status if part]
    joined = "; ".join(parts)
    if not parts:
        return [row]
    if columns(row) + 2 + columns(joined) <= COLUMNS:
        return [f"{row}  {joined}"]
    return [row, *(line for part in parts for line in wrap(part, COLUMNS, indent))]


def wrap(text: str, width: int = COLUMNS, indent: str = "") -> list[str]:
    """`text` (already `visible`) as lines of at most `width` columns, each starting with
    `indent`; a word longer than a line is cut across lines."""
    room = max(2, width - columns(indent))
    lines: list[str] = []
    current = ""
    for word in text.split():
        while columns(word) > room:
            if current:
                lines.append(current)
                current = ""
            head = _prefix(word, room)
            lines.append(head)
            word = word[len(head):]
        if not word:
            continue
        if not current:
            current = word
        elif columns(current) + 1 + columns(word) <= room:
            current += " " + word
        else:
            lines.append(current)
            current = word
    if current:
        lines.append(current)
    return [indent + line for line in lines]
