"""The last line of every command: its counts, then the verdict its exit status carries.

Why: a CI log is read from the bottom. `load --fail-on 'p99_ms>2'` used to exit 1 under a line
of zeros, `catalogue --max-tokens 500` exit 1 under "0 findings", and an unusable target exit 2
under "0 examples, 0 findings": the words said pass where the status said fail. Every command
ends with `final_line`, so the word after the counts is always the status in words (PASS, FAIL,
ERROR, INTERRUPTED) and the parenthesis says why, in the same terms as the lines above it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

# exit status -> the verdict word; any other status reads ERROR
VERDICTS: Final = {0: "PASS", 1: "FAIL", 2: "ERROR", 130: "INTERRUPTED"}


def plural(count: int, noun: str, many: str | None = None) -> str:
    """`1 finding`, `2 findings`, `0 findings` (`many` for nouns that do not take an s)."""
    return f"{count} {noun if count == 1 else (many or noun + 's')}"


def verdict(status: int, reasons: Iterable[str] = ()) -> str:
    """The verdict word for an exit status, with the reasons (if any) in one parenthesis."""
    word = VERDICTS.get(status, "ERROR")
    why = "; ".join(r for r in reasons if r)
    return f"{word} ({why})" if why else word


def final_line(command: str, counts: str, status: int, reasons: Iterable[str] = ()) -> str:
    """`fuzz: 20 examples, 7 properties, 1 finding: FAIL (1 new finding: RT-01)`."""
    return f"{command}: {counts}: {verdict(status, reasons)}"
