"""The last line of every command: its counts, then the verdict its exit status carries.

Why: a CI log is read from the bottom. `load --fail-on 'p99_ms>2'` used to exit 1 under a line
of zeros, `catalogue --max-tokens 500` exit 1 under "0 findings", and an unusable target exit 2
under "0 examples, 0 findings": the words said pass where the status said fail. Every command
ends with `final_line`, so the word after the counts is always the status in words (PASS, FAIL,
ERROR, INTERRUPTED) and the parenthesis says why, in the same terms as the lines above it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final, NamedTuple

from mcp_tempest.fuzz.terminal_style import colour_on, verdict_word

# exit status -> the verdict word; any other status reads ERROR. 3 is replay's "the recorded bug
# did not recur, a different violation did": the server still breaks a rule.
VERDICTS: Final = {0: "PASS", 1: "FAIL", 2: "ERROR", 3: "FAIL", 130: "INTERRUPTED", 143: "INTERRUPTED"}
REASON_WIDTH: Final = 200  # characters of a server's own words quoted in a reason
# `command: counts: WORD (why)`; the counts are the harness's own, so the first `: WORD` ends them.
_LINE: Final = re.compile(r"(?P<command>[a-z][a-z-]*): (?P<counts>.*?): (?P<word>PASS|FAIL|ERROR|INTERRUPTED)"
                          r"(?: \((?P<why>.*)\))?")


class FinalLine(NamedTuple):
    """A last line taken apart: what a CI script (or a test) reads of it."""

    command: str
    counts: str
    word: str
    why: str


def plural(count: int, noun: str, many: str | None = None) -> str:
    """`1 finding`, `2 findings`, `0 findings` (`many` for nouns that do not take an s)."""
    return f"{count} {noun if count == 1 else (many or noun + 's')}"


def verdict(status: int, reasons: Iterable[str] = (), *, colour: bool = False) -> str:
    """The verdict word for an exit status, with the reasons (if any) in one parenthesis; with
    `colour`, the word in its colour (fuzz/terminal_style.py), the rest as it is."""
    word = VERDICTS.get(status, "ERROR")
    shown = verdict_word(word, colour)
    why = "; ".join(r for r in reasons if r)
    return f"{shown} ({why})" if why else shown


def final_line(command: str, counts: str, status: int, reasons: Iterable[str] = (), *,
               colour: bool | None = None) -> str:
    """`fuzz: 20 examples, 7 properties, 1 finding: FAIL (1 new finding: RT-01)`. The word is
    coloured when colour is on for sys.stdout (`colour=None`, where this line is printed); pass
    `colour=False` for a line that goes anywhere else (a file), `colour_on(sys.stderr)` for stderr."""
    on = colour_on(sys.stdout) if colour is None else colour
    return f"{command}: {counts}: {verdict(status, reasons, colour=on)}"


def parse_final_line(line: str) -> FinalLine | None:
    """The parts of a `final_line`, or None when `line` is not one."""
    m = _LINE.fullmatch(line.strip())
    return FinalLine(m["command"], m["counts"], m["word"], m["why"] or "") if m else None


def rule_ids(findings: Iterable[Any]) -> str:
    """`RT-01, RPC-04`: the distinct rules of these findings (objects with `.rule`), first seen first."""
    return ", ".join(dict.fromkeys(str(f.rule) for f in findings))


def findings_reason(findings: Iterable[Any], *, new: bool = False) -> str:
    """`1 new finding: RT-01`, `2 findings: RT-01, RPC-04`: why a run failed, naming the rules."""
    found = list(findings)
    return f"{plural(len(found), 'new finding' if new else 'finding')}: {rule_ids(found)}"


def unusable(why: str) -> str:
    """The reason of every command whose target could not be used (`why` already escaped)."""
    return f"unusable target: {why}"


def verdict_json(command: str, counts: str, status: int, reasons: Iterable[str] = ()) -> dict[str, Any]:
    """The verdict for a file or a `--json` object: the same words as the last line, in fields."""
    why = [r for r in reasons if r]
    return {"status": status, "verdict": VERDICTS.get(status, "ERROR"), "reasons": why,
            "summary": final_line(command, counts, status, why, colour=False)}


def end_without_campaign(command: str, counts: str, status: int, reason: str, *, out_dir: Path, target: str,
                         seed: int | None, fail_on: str | None = None, store: Any = None) -> int:
    """The end of a run that never reached (or could not go on with) its campaign: an unusable or
    refused target, a stop before the first case. `--out` still gets what a CI job reads, the
    reason in each (findings.json's `verdict` and `error`, junit.xml's one case in error,
    summary.md, an empty results.sarif), and the last line says it. `reason` is already escaped;
    `store` is the run's FindingStore when it has one. Returns `status`."""
    from mcp_tempest.fuzz.findings import DEFAULT_FAIL_ON, FindingStore
    from mcp_tempest.fuzz.reports import write_error_reports
    from mcp_tempest.fuzz.safe_text import visible

    reasons = [reason]
    try:
        if store is None:
            store = FindingStore(out_dir, target=target, seed=seed, fail_on=fail_on or DEFAULT_FAIL_ON)
            store.interrupted = status == 130
        store.extra.update(verdict=verdict_json(command, counts, status, reasons), error=reason)
        store.write_index()
        write_error_reports(out_dir, command=command, target=target, seed=seed, status=status, reason=reason)
    except OSError as exc:
        reasons.append(f"cannot write the reports in {out_dir}: {exc.strerror or exc}")
    if store is not None and store.write_error:
        reasons.append(visible(store.write_error))
    print(final_line(command, counts, status, reasons))
    return status
