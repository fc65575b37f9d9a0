"""Release gates: `--fail-on` thresholds and the `--baseline` comparison, over a summary.json.

A gate reads `[NAME:]METRIC OP VALUE`, for example `p99_ms>50`, `failures>0`, `rps<1000` or
`MRTR create_event:p99_ms>50`. It is crossed, and the run fails, when the comparison holds.
Without a NAME the metric is the run's (overall percentiles over every request); with one, it is
that operation's. NAME may itself contain colons (`resources/read calendar://week:p99_ms>5`): the
metric is whatever follows the last colon.

A baseline is an earlier summary.json. Every operation present in both runs is compared; a p99
that grew, or a throughput that fell, by more than the margin is a regression. Tiny latencies
jitter by large percentages, so a latency change under an absolute floor is never a regression.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    "<": operator.lt,
}
_GATE = re.compile(
    r"^\s*(?:(?P<name>.+):)?\s*(?P<metric>[a-z][a-z0-9_]*)\s*(?P<op>>=|<=|==|!=|>|<)\s*"
    r"(?P<value>-?[0-9]+(?:\.[0-9]+)?)\s*(?P<pct>%?)\s*$"
)
LATENCY_METRICS = ("p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms", "mean_ms")
RUN_METRICS = frozenset(
    {"requests", "failures", "rps", "violations", "failure_rate", "mrtr_operations", "memory_growth_mb",
     *LATENCY_METRICS}
)
OPERATION_METRICS = frozenset({"count", "failures", "rps", "failure_rate", *LATENCY_METRICS})


class GateError(ValueError):
    """A gate or margin that does not parse; the message is one line for the user."""


@dataclass(frozen=True, slots=True)
class Gate:
    text: str
    name: str | None
    metric: str
    op: str
    threshold: float


@dataclass(frozen=True, slots=True)
class GateResult:
    gate: Gate
    value: float | None
    crossed: bool

    def describe(self) -> str:
        where = f"{self.gate.name}: " if self.gate.name else ""
        if self.value is None:
            return f"gate {self.gate.text!r}: CROSSED ({where}no samples)"
        verdict = "CROSSED" if self.crossed else "ok"
        return f"gate {self.gate.text!r}: {verdict} ({where}{self.gate.metric} = {_fmt(self.value)})"


def _fmt(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))


def parse_gate(text: str) -> Gate:
    match = _GATE.match(text)
    if match is None:
        raise GateError(f"--fail-on {text!r}: expected [NAME:]METRIC OP VALUE, e.g. 'p99_ms>50' or "
                        "'MRTR create_event:failures>0'")
    name = match["name"].strip() if match["name"] else None
    metric = match["metric"]
    if match["pct"]:
        # 'failures>0.1%' is a share of the requests, not a count
        if metric not in ("failures", "failure_rate"):
            raise GateError(f"--fail-on {text!r}: only failures take a percentage (e.g. 'failures>0.1%')")
        metric = "failure_rate"
    allowed = OPERATION_METRICS if name else RUN_METRICS
    if metric not in allowed:
        raise GateError(f"--fail-on {text!r}: unknown metric {metric!r} (one of {', '.join(sorted(allowed))})")
    return Gate(text.strip(), name, metric, match["op"], float(match["value"]))


def parse_gates(texts: list[str]) -> list[Gate]:
    """Each --fail-on may hold several gates separated by commas."""
    gates = []
    for text in texts:
        for part in text.split(","):
            if part.strip():
                gates.append(parse_gate(part))
    return gates


def _metric(entry: dict[str, Any], metric: str) -> float | None:
    if metric == "failure_rate":
        count = entry.get("count", entry.get("requests", 0)) or 0
        return 100.0 * (entry.get("failures", 0) or 0) / count if count else None
    value = entry.get(metric)
    return float(value) if isinstance(value, int | float) else None


def run_metric(summary: dict[str, Any], metric: str) -> float | None:
    if metric in LATENCY_METRICS:
        return _metric(summary.get("overall") or {}, metric)
    if metric == "mrtr_operations":
        return float((summary.get("mrtr") or {}).get("operations", 0))
    if metric == "memory_growth_mb":
        memory = summary.get("memory") or {}
        return float(memory["growth_mb"]) if isinstance(memory.get("growth_mb"), int | float) else None
    if metric == "failure_rate":
        requests = summary.get("requests", 0) or 0
        return 100.0 * (summary.get("failures", 0) or 0) / requests if requests else None
    return _metric(summary, metric)


def evaluate(gates: list[Gate], summary: dict[str, Any]) -> list[GateResult]:
    """Each gate against the summary; a gate whose operation has no samples counts as crossed."""
    results = []
    operations = summary.get("operations") or {}
    for gate in gates:
        if gate.name is not None:
            entry = operations.get(gate.name)
            value = _metric(entry, gate.metric) if entry else None
        else:
            value = run_metric(summary, gate.metric)
        crossed = True if value is None else _OPS[gate.op](value, gate.threshold)
        results.append(GateResult(gate, value, crossed))
    return results


# --- baseline ---


def parse_margin(text: str) -> float:
    """'20%' or '20' -> 0.20; the margin is always a percentage."""
    raw = text.strip().removesuffix("%").strip()
    try:
        value = float(raw)
    except ValueError:
        raise GateError(f"--baseline-margin {text!r}: expected a percentage such as 20%") from None
    if value < 0:
        raise GateError(f"--baseline-margin {text!r}: must not be negative")
    return value / 100.0


@dataclass(frozen=True, slots=True)
class Change:
    name: str
    metric: str
    before: float
    after: float
    regression: bool

    @property
    def percent(self) -> float | None:
        return None if self.before == 0 else 100.0 * (self.after - self.before) / self.before

    def describe(self) -> str:
        pct = self.percent
        delta = "n/a" if pct is None else f"{pct:+.1f}%"
        flag = "  REGRESSION" if self.regression else ""
        return f"{self.name}: {self.metric} {_fmt(self.before)} -> {_fmt(self.after)} ({delta}){flag}"


def compare_baseline(
    summary: dict[str, Any],
    baseline: dict[str, Any],
    *,
    margin: float,
    floor_ms: float = 0.5,
) -> list[Change]:
    """p50 and p99 per operation (and overall) and the run's rps, before -> after.

    A regression: p99 grew by more than `margin` (relative) and by more than `floor_ms`
    (absolute), or the run's rps fell by more than `margin`.
    """
    changes: list[Change] = []

    def latency(name: str, before: dict[str, Any], after: dict[str, Any]) -> None:
        for metric in ("p50_ms", "p99_ms"):
            b, a = before.get(metric), after.get(metric)
            if not isinstance(b, int | float) or not isinstance(a, int | float):
                continue
            worse = metric == "p99_ms" and a > b * (1 + margin) and a - b > floor_ms
            changes.append(Change(name, metric, float(b), float(a), worse))

    latency("all requests", baseline.get("overall") or {}, summary.get("overall") or {})
    b_rps, a_rps = baseline.get("rps"), summary.get("rps")
    if isinstance(b_rps, int | float) and isinstance(a_rps, int | float):
        changes.append(Change("all requests", "rps", float(b_rps), float(a_rps), a_rps < b_rps * (1 - margin)))
    before_ops = baseline.get("operations") or {}
    for name, after in sorted((summary.get("operations") or {}).items()):
        before = before_ops.get(name)
        if isinstance(before, dict) and isinstance(after, dict) and not name.startswith("probe "):
            latency(name, before, after)
    return changes
