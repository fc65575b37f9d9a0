"""What a campaign covered, and what it already knew: the coverage and known sections of its report.

Why a report of its own: a campaign that never sent a probe cannot have found what the probe
looks for, and a clean summary says nothing about that. So every campaign counts the named
probes its coverage phases sent (mutations, header and method probes, MRTR tamperings) against
all there are, with the reason for each one it could not send, and the rules those probes
exercise. The known section says which findings a --known baseline or the example database
already had, which are new, and which known ones did not show up (fixed, or not reached).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from mcp_tempest.fuzz.safe_text import visible


class _Outcome(Protocol):
    property: str
    transport: str
    name: str
    rule: str
    tried: bool
    why_not: str


class _Finding(Protocol):
    id: str
    strength: str
    rule: str
    title: str


def coverage_report(outcomes: Iterable[_Outcome]) -> dict[str, Any]:
    """Probes tried N of N and rules exercised M of M; a probe counts as tried when it went out
    over at least one transport it applies to."""
    probes: dict[tuple[str, str], dict[str, Any]] = {}
    for o in outcomes:
        entry = probes.setdefault((o.property, o.name), {"rule": o.rule, "tried": [], "why_not": {}})
        if o.tried:
            entry["tried"].append(o.transport)
        else:
            entry["why_not"][o.transport] = o.why_not
    rules = {e["rule"] for e in probes.values()}
    exercised = {e["rule"] for e in probes.values() if e["tried"]}
    not_applied = [
        {"property": prop, "probe": name, "rule": e["rule"],
         "why": "; ".join(f"{t}: {why}" for t, why in sorted(e["why_not"].items()))}
        for (prop, name), e in probes.items() if not e["tried"]
    ]
    return {
        "probes": len(probes), "tried": sum(1 for e in probes.values() if e["tried"]),
        "rules": len(rules), "rules_exercised": len(exercised),
        "exercised": sorted(exercised), "rules_not_exercised": sorted(rules - exercised),
        "not_applied": not_applied,
    }


def print_coverage(report: Mapping[str, Any]) -> None:
    if not report.get("probes"):
        return
    print(f"coverage: {report['tried']} of {report['probes']} probes tried, "
          f"{report['rules_exercised']} of {report['rules']} rules exercised")
    by_why: dict[str, list[str]] = {}
    for item in report["not_applied"]:
        by_why.setdefault(item["why"], []).append(item["probe"])
    for why, names in by_why.items():
        print(f"  not tried ({visible(why)}): {', '.join(names)}")


def known_report(findings: Sequence[_Finding], baseline: Mapping[str, str], replayed: Iterable[str]) -> dict[str, Any]:
    """Which findings a baseline or the example database knew, which are new, which known are gone.
    A known group carries the baseline's reason, as a gone one does: the reports show it where they
    would have shown a failure (fuzz/report_status.py)."""
    seen = {f.id for f in findings}
    replayed = sorted(set(replayed))
    return {
        "baseline": len(baseline),
        "known": [{"id": gid, "reason": baseline[gid]} for gid in sorted(seen & set(baseline))],
        "new": sorted(seen - set(baseline)),
        "gone": [{"id": gid, "reason": reason} for gid, reason in sorted(baseline.items()) if gid not in seen],
        "replayed": replayed,
    }


def print_known(report: Mapping[str, Any]) -> None:
    if report["replayed"]:
        print(f"known: {len(report['replayed'])} failure group(s) replayed from the example database: "
              + ", ".join(report["replayed"]))
    if not report["baseline"]:
        return
    print(f"known: {len(report['known'])} of {report['baseline']} baseline groups seen again, "
          f"{len(report['new'])} new, {len(report['gone'])} gone")
    for gid in report["new"]:
        print(f"  new: {visible(gid)}")
    for item in report["gone"]:
        # The reason is a title from a --known file, which quotes the server: shown escaped.
        print(f"  gone: {visible(item['id'])} ({visible(item['reason'])})")
