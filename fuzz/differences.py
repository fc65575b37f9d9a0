"""Behaviour compared between two targets (`fuzz --compare-target OTHER`): the same case played on
both, each answer reduced to the shape statelessness judges by (fuzz/properties/compare.py).

Two uses, one mechanism: another build of the same server (what changed since the last release),
and the same server over another transport. A transport defines framing and delivery, not
meaning, so only what a JSON-RPC answer means is compared: error or result, the error code,
resultType, isError, the questions an input_required asks, a result's members, and a list's
items. Steps that exist only as bytes or headers of one transport (raw malformed lines, HTTP
header probes) and the HTTP status are not compared; ids, handles, states and timestamps never
enter a shape.

A difference is filed as a finding of its own kind (rule `DIFF`, not a DIGEST rule): listed apart
from the protocol findings in every report and in findings.json `differences`, shrunk like any
finding (Hypothesis sees it as a failure), and replayed against both targets.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mcp_tempest.fuzz.oracle.model import Violation
from mcp_tempest.fuzz.properties.case import Case
from mcp_tempest.fuzz.properties.compare import describe_shape, list_diff, list_items, shape
from mcp_tempest.fuzz.properties.executor import Run
from mcp_tempest.fuzz.properties.lists import LISTS

RULE = "DIFF"
TITLE = "behaviour differs between targets"
#: The list methods, and the member that holds their items (compared exactly, `_meta` aside).
LIST_KEYS = {method: key for method, (key, _capability, _rule) in LISTS.items()}


@dataclass(frozen=True, slots=True)
class Difference:
    """One step answered differently: `a` by the target fuzzed, `b` by the one compared with."""

    step: int
    method: str
    probe: str | None
    a: str
    b: str

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "method": self.method, "probe": self.probe, "a": self.a, "b": self.b}


def is_difference(finding: Any) -> bool:
    """Whether a finding (or evidence) is a difference between targets, listed apart from the
    protocol findings in every report."""
    return getattr(finding, "rule", None) == RULE


def differences_json(findings: Iterable[Any]) -> list[dict[str, Any]]:
    """findings.json `differences`: each difference finding with both answers' shapes."""
    out: list[dict[str, Any]] = []
    for f in findings:
        if not is_difference(f):
            continue
        compare = f.evidence.case.get("compare") or {}
        first = (compare.get("differences") or [{}])[0]
        out.append({"id": f.id, "method": first.get("method", f.method), "probe": first.get("probe"),
                    "a": first.get("a"), "b": first.get("b"), "other": compare.get("target", ""),
                    "steps": compare.get("differences", []), "count": f.count, "repro": f.repro})
    return out


def comparable(case: Case, step: int) -> bool:
    """Whether a step means the same over every transport: a JSON-RPC request object with no
    headers of its own (raw bytes and header probes are one transport's framing)."""
    s = case.steps[step]
    return (s.wait == "response" and s.raw is None and not s.headers and isinstance(s.frame, dict)
            and isinstance(s.frame.get("method"), str))


def differences(run_a: Run, run_b: Run) -> list[Difference]:
    """The steps both runs sent and both got an answer to, answered with different shapes."""
    found: list[Difference] = []
    for step in sorted(set(run_a.sends) & set(run_b.sends)):
        if not comparable(run_a.case, step):
            continue
        msg_a, msg_b = run_a.response(step), run_b.response(step)
        if msg_a is None or msg_b is None:
            continue  # silence is judged by the oracle (RPC-01), on the target fuzzed
        frame = run_a.frames.get(step) or run_a.case.steps[step].frame or {}
        method = str(frame.get("method"))
        s = run_a.case.steps[step]
        shape_a, shape_b = shape(msg_a), shape(msg_b)
        if shape_a != shape_b:
            found.append(Difference(step, method, s.mutation, describe_shape(shape_a), describe_shape(shape_b)))
            continue
        key = LIST_KEYS.get(method)
        if key is not None and shape_a[0] == "result":
            items_a, items_b = list_items(msg_a, key), list_items(msg_b, key)
            if items_a != items_b:
                found.append(Difference(step, method, s.mutation, f"{key} listed", list_diff(items_a, items_b, key)))
    return found


def difference_violation(found: list[Difference], run_a: Run, other: str) -> Violation:
    """The first difference as the violation a finding is filed under (the others in its detail)."""
    first = found[0]
    detail = "; ".join(f"step {d.step} {d.method}{f' (probe {d.probe})' if d.probe else ''}: {d.a} here, "
                       f"{d.b} on {other}" for d in found[:5])
    if len(found) > 5:
        detail += f"; and {len(found) - 5} more"
    return Violation(RULE, "MUST", f"{TITLE}: {first.method} answered {first.a} here, {first.b} on the other target",
                     detail, first.method, run_a.sends.get(first.step), first.probe, None,
                     reaction=f"{first.method}: {first.a} vs {first.b}")
