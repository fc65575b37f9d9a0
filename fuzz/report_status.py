"""The exit status a campaign's report files state, decided once for all of them.

Why: junit.xml, results.sarif, summary.md and report.html are written before the command exits,
and each used to judge findings on its own: under `--known` the run exited 0 while junit.xml
still had a <failure>, SARIF an unsuppressed error and summary.md no verdict at all. Every writer
now asks `report_status` which findings are new, which a baseline knew (and why), and what exit
status that makes, by the rules of fuzz/campaign_command.py's exit path: a new finding at or
above --fail-on is 1, else an interrupted run 130, else a harness error 2, else 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp_tempest.fuzz.findings import DEFAULT_FAIL_ON, Finding, PropertyRun
from mcp_tempest.fuzz.safe_text import visible
from mcp_tempest.fuzz.verdict_line import REASON_WIDTH, findings_reason, plural, verdict


@dataclass(frozen=True, slots=True)
class ReportStatus:
    """What the reports say of the run as a whole, and of each finding against the baseline."""

    status: int
    known: Mapping[str, str] = field(default_factory=dict)  # group id -> the baseline's reason
    new: tuple[Finding, ...] = ()  # failing findings the baseline did not know: what makes status 1
    reasons: tuple[str, ...] = ()

    def reason(self, f: Finding) -> str | None:
        """The baseline's reason when it knew this finding's group, else None (a new one)."""
        return self.known.get(f.id)

    @property
    def verdict(self) -> str:
        """`FAIL (1 new finding: RT-01)`, worded by fuzz/verdict_line.py."""
        return verdict(self.status, self.reasons)


def known_groups(extra: Mapping[str, Any] | None) -> dict[str, str]:
    """The groups a --known baseline knew that this run saw again, each with the baseline's
    reason: findings.json's `known.known` (fuzz/coverage.py known_report), not recomputed."""
    section = (extra or {}).get("known") or {}
    return {str(k["id"]): str(k.get("reason") or "known") for k in section.get("known", []) if isinstance(k, dict)}


def report_status(runs: Sequence[PropertyRun], findings: Sequence[Finding], *, fail_on: str = DEFAULT_FAIL_ON,
                  interrupted: bool = False, known: Mapping[str, str] | None = None) -> ReportStatus:
    known = dict(known or {})
    new = tuple(f for f in findings if f.fails(fail_on) and f.id not in known)
    old = [f for f in findings if f.fails(fail_on) and f.id in known]
    errors = [r for r in runs if r.error]
    if new:
        status = 1
    elif interrupted:
        status = 130
    elif errors:
        status = 2
    else:
        status = 0
    return ReportStatus(status=status, known=known, new=new,
                        reasons=tuple(_reasons(status, new, errors, bool(known) or bool(old), interrupted, bool(old))))


def _reasons(status: int, new: Sequence[Finding], errors: Sequence[PropertyRun], baseline: bool,
             interrupted: bool, known_seen: bool) -> list[str]:
    """Why the run ends with `status`, in the words of the terminal's lines above it: the new
    findings' rules (new against --known when one was given), the property runs that could not
    run, a stop; the same words on the last line and in every report file."""
    reasons = [findings_reason(new, new=baseline)] if new else []
    if errors:
        first = errors[0]
        reasons.append(f"{first.property}[{first.transport}] could not run: {visible(first.error, REASON_WIDTH)}"
                       + (f" (and {plural(len(errors) - 1, 'more run')})" if len(errors) > 1 else ""))
    if interrupted:
        reasons.append("interrupted before the budget was spent")
    if status == 0 and known_seen:
        reasons.append("every finding is in --known")
    return reasons
