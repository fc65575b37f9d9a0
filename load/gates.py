"""Release gates: `--fail-on` thresholds and the `--baseline` comparison, over a summary.json.

A gate reads `[NAME:]METRIC OP VALUE`, for example `p99_ms>50`, `failures>0`, `rps<1000` or
`MRTR create_event:p99_ms>50`. It is crossed, and the run fails, when the comparison holds.
Without a NAME the metric is the run's (overall percentiles over every request); with one, it is
that operation's. NAME may itself contain colons (`resources/read calendar://week:p99_ms>5`): the
metric is whatever follows the last colon.

A baseline is an earlier summary.json. Every operation present in both runs is compared; a p50
or p99 that grew, or a throughput that fell, by more than the margin is a regression. Tiny latencies
jitter by large percentages, so a latency change under an absolute floor is never a regression,
and a percentile read from too few samples (or a setup call's) is shown but never gated.
"""

from __future__ import annotations

import math
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
# `is_error` (isError results) is no failure and no gate by default; a user who expects none can
# say so (`is_error>0`, `'tools/call list_events:is_error>1%'`, `refused_handles>0`: isError
# answers refusing a handle the server had returned).
RUN_METRICS = frozenset(
    {"requests", "failures", "rps", "violations", "failure_rate", "mrtr_operations", "memory_growth_mb",
     "is_error", "is_error_rate", "refused_handles", *LATENCY_METRICS}
)
OPERATION_METRICS = frozenset({"count", "failures", "rps", "failure_rate", "is_error", "is_error_rate",
                               *LATENCY_METRICS})
_RATES = {"failures": "failure_rate", "failure_rate": "failure_rate", "is_error": "is_error_rate",
          "is_error_rate": "is_error_rate"}


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

    def why(self) -> str:
        """The gate with the value that crossed it, for the verdict's reasons: `p99_ms>2 (p99_ms = 3.1)`."""
        value = "no samples" if self.value is None else f"{self.gate.metric} = {_fmt(self.value)}"
        return f"{self.gate.text} ({value})"


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
        if metric not in _RATES:
            raise GateError(f"--fail-on {text!r}: only failures and is_error take a percentage "
                            "(e.g. 'failures>0.1%')")
        metric = _RATES[metric]
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
    if metric in LATENCY_METRICS and entry.get("count", 1) == 0:
        return None  # no sample, no latency: a p99 of 0 would pass any 'p99_ms>X' gate
    if metric in ("failure_rate", "is_error_rate"):
        count = entry.get("count", entry.get("requests", 0)) or 0
        part = entry.get("failures" if metric == "failure_rate" else "is_error", 0) or 0
        return 100.0 * part / count if count else None
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
    if metric in ("failure_rate", "is_error_rate"):
        requests = summary.get("requests", 0) or 0
        part = summary.get("failures" if metric == "failure_rate" else "is_error", 0) or 0
        return 100.0 * part / requests if requests else None
    if metric == "is_error":
        return float(summary.get("is_error") or 0)
    if metric == "refused_handles":
        return float(sum((summary.get("refused_handles") or {}).values()))
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


def _percentage(text: str, option: str, example: str) -> float:
    """A percentage option's value ('20%' or '20'), as a number of percent."""
    try:
        return float(text.strip().removesuffix("%").strip())
    except ValueError:
        raise GateError(f"{option} {text!r}: expected a percentage such as {example}") from None


def parse_margin(text: str, option: str = "--baseline-margin") -> float:
    """'20%' or '20' -> 0.20; the margin is always a percentage."""
    value = _percentage(text, option, "20%")
    if not math.isfinite(value) or value < 0:
        raise GateError(f"{option} {text!r}: must be a finite percentage, not negative")
    return value / 100.0


DEFAULT_MIN_SAMPLES = 1000


@dataclass(frozen=True, slots=True)
class Change:
    name: str
    metric: str
    before: float
    after: float
    regression: bool
    # why this change is shown but cannot regress (too few samples, a setup call); "" when gated
    not_gated: str = ""

    @property
    def percent(self) -> float | None:
        return None if self.before == 0 else 100.0 * (self.after - self.before) / self.before

    def describe(self) -> str:
        pct = self.percent
        delta = "n/a" if pct is None else f"{pct:+.1f}%"
        flag = "  REGRESSION" if self.regression else (f"  (not gated: {self.not_gated})" if self.not_gated else "")
        return f"{self.name}: {self.metric} {_fmt(self.before)} -> {_fmt(self.after)} ({delta}){flag}"


def describe_noise(margin: float, floor_ms: float, min_samples: int) -> str:
    """The noise a baseline comparison tolerates, in words, for the output and summary.json."""
    return (f"a p50 or p99 regresses when it grows by more than {margin * 100:g}% and by more than {floor_ms:g} ms, "
            f"on names with at least {min_samples} samples in both runs (so each p99 rests on at least "
            f"{max(1, min_samples // 100)} samples above it; fewer, or setup calls: shown, not gated); "
            f"the run's rps when it falls by more than {margin * 100:g}%")


def compare_baseline(
    summary: dict[str, Any],
    baseline: dict[str, Any],
    *,
    margin: float,
    floor_ms: float = 0.5,
    min_samples: int = DEFAULT_MIN_SAMPLES,
) -> list[Change]:
    """p50 and p99 per operation (and overall) and the run's rps, before -> after.

    A regression: p50 or p99 grew by more than `margin` (relative) and by more than `floor_ms`
    (absolute), or the run's rps fell by more than `margin`. Both percentiles are gated because
    on a busy machine the tail is scheduling noise of tens of ms: a server twice as slow doubled
    its p50 while its p99 grew 16%. Only statistically meaningful figures are gated: a name needs `min_samples` in both runs (a name seen ten times has a p99
    that is its slowest sample, and the first requests a fresh server serves are its slowest),
    and setup calls (discovery, the tool probe) are never gated; both are still shown.
    """
    changes: list[Change] = []

    def latency(name: str, before: dict[str, Any], after: dict[str, Any], why_not: str = "") -> None:
        counts = (int(before.get("count") or 0), int(after.get("count") or 0))
        if not why_not and min(counts) < min_samples:
            why_not = f"{counts[0]} -> {counts[1]} samples, fewer than {min_samples}"
        for metric in ("p50_ms", "p99_ms"):
            b, a = before.get(metric), after.get(metric)
            if not isinstance(b, int | float) or not isinstance(a, int | float):
                continue
            worse = not why_not and a > b * (1 + margin) and a - b > floor_ms
            changes.append(Change(name, metric, float(b), float(a), worse, why_not))

    latency("all requests", baseline.get("overall") or {}, summary.get("overall") or {})
    b_rps, a_rps = baseline.get("rps"), summary.get("rps")
    if isinstance(b_rps, int | float) and isinstance(a_rps, int | float):
        changes.append(Change("all requests", "rps", float(b_rps), float(a_rps), a_rps < b_rps * (1 - margin)))
    before_ops = baseline.get("operations") or {}
    for name, after in sorted((summary.get("operations") or {}).items()):
        before = before_ops.get(name)
        if isinstance(before, dict) and isinstance(after, dict):
            setup = after.get("kind") == "setup" or before.get("kind") == "setup" or name.startswith("probe ")
            latency(name, before, after, "a setup call" if setup else "")
    return changes


# --- the open model's delivered rate ---

DEFAULT_RATE_TOLERANCE = 0.01
# A load process using this share of one core (CPU time over wall time) was busy generating, not
# waiting for the server: the arrivals it did not send are the generator's shortfall.
GENERATOR_BUSY = 0.85


def parse_tolerance(text: str) -> float:
    """'1%' or '1' -> 0.01, at most 100%."""
    value = _percentage(text, "--rate-tolerance", "1%")
    if not 0 <= value <= 100:
        raise GateError(f"--rate-tolerance {text!r}: must be between 0% and 100%")
    return value / 100.0


def undelivered(summary: dict[str, Any], tolerance: float) -> str | None:
    """Why an open-model run did not deliver its rate, or None when it did (or ran closed).

    The schedule's own count is the reference: the arrivals due between its first arrival and the
    moment the run started stopping. An arrival is delivered when a slot took it in time and sent
    it; the shortfall is the rest (due but never taken: every slot busy or the generator behind;
    taken after waiting past --timeout: a backlog timeout). It may be `tolerance` of the arrivals
    due, and always one arrival (the one due at the instant of stopping).
    """
    model = summary.get("model") or {}
    if model.get("kind") != "open" or "arrivals_sent" not in model:
        return None
    due = int(model.get("arrivals_due") or 0)
    sent = int(model.get("arrivals_sent") or 0)
    missing = max(0, due - sent)
    if missing <= max(1.0, tolerance * due):
        return None
    not_started = int(model.get("not_started_at_stop") or 0)
    backlog = int(model.get("backlog_timeouts") or 0)
    parts = []
    if not_started:
        parts.append(f"{not_started} due but never begun by a slot")
    if backlog:
        parts.append(f"{backlog} taken after waiting past --timeout")
    cpu, wall = float(model.get("generator_cpu_s") or 0), float(model.get("generator_wall_s") or 0)
    processes = max(1, int((summary.get("config") or {}).get("processes") or 1))
    share = cpu / wall if wall > 0 else 0.0  # summed over the processes: per process, below
    cap = model.get("max_in_flight")
    if wall > 0 and share >= GENERATOR_BUSY:
        why = (f"the load generator was CPU-bound ({100 * share:.0f}% of a core per process over "
               f"{processes} process(es)): add --processes or lower --rate")
    elif cap and int(model.get("slots_busy_peak") or 0) >= int(cap):
        why = (f"all {cap} slots (--max-in-flight) were busy: the server answered slower than "
               f"{model.get('rate', 0):g}/s needs (at its capacity, or raise --max-in-flight)")
    else:
        why = "arrivals fell behind their schedule"
    detail = f" ({', '.join(parts)})" if parts else ""
    return (f"rate not delivered: {missing} of {due} arrivals due were not sent{detail}, "
            f"{100.0 * missing / due:.1f}% > the {100 * tolerance:g}% tolerated; {why}")
