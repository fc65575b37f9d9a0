"""`--find-capacity`: the highest open-model arrival rate at which every objective still holds.

Why open model: in the closed model a saturated server slows its users down and they send less,
so latency barely rises and "capacity" is whatever the users happened to produce. At a fixed
arrival rate, a server past its knee builds a queue and the latency measured from each arrival's
intended start climbs without bound, so the objectives break clearly.

The search: run a step at `start` arrivals/s, multiply by `factor` while every objective holds,
then bisect between the highest rate that held and the lowest that broke, `refine` more steps.
Objectives are written like gates but read the other way round: `--slo 'p99_ms<50'` holds while
the run's p99 is under 50 ms; `--slo 'failures<0.1%'` while under 0.1% of requests fail. This
module is pure (plans steps and judges summaries); the runner runs each step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcp_tempest.load import gates as gates_mod
from mcp_tempest.load.summary import format_ms, wrap_lines


@dataclass(frozen=True, slots=True)
class Step:
    rate: float
    held: bool
    summary: dict[str, Any]
    results: list[gates_mod.GateResult]
    undelivered: str | None = None  # why the step's rate was not delivered (it then broke)

    def row(self) -> dict[str, Any]:
        s = self.summary
        overall = s.get("overall") or {}
        requests = s.get("requests", 0) or 0
        return {
            "rate": self.rate,
            "held": self.held,
            "rps": s.get("rps", 0.0),
            "requests": requests,
            "failures": s.get("failures", 0),
            "failure_rate": round(100.0 * (s.get("failures", 0) or 0) / requests, 4) if requests else None,
            "p50_ms": overall.get("p50_ms"),
            "p99_ms": overall.get("p99_ms"),
            "max_ms": overall.get("max_ms"),
            "objectives": {r.gate.text: r.value for r in self.results},
            "arrivals_due": (s.get("model") or {}).get("arrivals_due"),
            "arrivals_sent": (s.get("model") or {}).get("arrivals_sent"),
            "undelivered": self.undelivered,
        }


@dataclass(slots=True)
class Search:
    start: float
    factor: float
    max_rate: float
    refine: int
    steps: list[Step] = field(default_factory=list)

    @property
    def held(self) -> float | None:
        rates = [s.rate for s in self.steps if s.held]
        return max(rates) if rates else None

    @property
    def broke(self) -> float | None:
        rates = [s.rate for s in self.steps if not s.held and s.rate > (self.held or 0)]
        return min(rates) if rates else None


def parse_slos(texts: list[str]) -> list[gates_mod.Gate]:
    """Objectives in the gate syntax; each must say what holds (<, <=), e.g. 'p99_ms<50'."""
    slos = gates_mod.parse_gates(texts)
    for slo in slos:
        if slo.op not in ("<", "<="):
            raise gates_mod.GateError(f"--slo {slo.text!r}: an objective is an upper bound, e.g. 'p99_ms<50'")
    return slos


def judge(slos: list[gates_mod.Gate], summary: dict[str, Any]) -> tuple[bool, list[gates_mod.GateResult]]:
    """Whether every objective holds in this step (a metric without samples does not hold)."""
    results = gates_mod.evaluate(slos, summary)
    # for a gate "crossed" means its comparison is true, which for an objective means it holds
    return all(r.value is not None and r.crossed for r in results), results


def judge_step(slos: list[gates_mod.Gate], summary: dict[str, Any], tolerance: float,
               ) -> tuple[bool, list[gates_mod.GateResult], str | None]:
    """A step holds when its objectives hold and its rate was delivered: latency read from fewer
    arrivals than the rate asked for says nothing about that rate (a generator that fell behind,
    or a server that kept every slot busy, would look fast)."""
    held, results = judge(slos, summary)
    why = gates_mod.undelivered(summary, tolerance)
    return held and why is None, results, why


def search(run_step: Callable[[float], dict[str, Any] | None], slos: list[gates_mod.Gate], *, start: float,
           tolerance: float = gates_mod.DEFAULT_RATE_TOLERANCE, factor: float = 2.0, max_rate: float = 100_000.0, refine: int = 3,
           on_step: Callable[[Step], None] | None = None) -> Search:
    """Step the rate up until an objective breaks, then refine around the knee.

    `run_step(rate)` runs one step and returns its summary (None: the step could not run, which
    ends the search). Rates are rounded to whole arrivals per second once above 10.
    """
    found = Search(start, factor, max_rate, refine)

    def step(rate: float) -> Step | None:
        summary = run_step(rate)
        if summary is None:
            return None
        held, results, why = judge_step(slos, summary, tolerance)
        done = Step(rate, held, summary, results, why)
        found.steps.append(done)
        if on_step is not None:
            on_step(done)
        return done

    rate = start
    while True:
        done = step(rate)
        if done is None:
            return found
        if not done.held or rate >= max_rate:
            break
        rate = min(max_rate, _round(rate * factor))
    for _ in range(refine):
        low, high = found.held or 0.0, found.broke
        if high is None:
            break
        mid = _round((low + high) / 2)
        if mid <= low or mid >= high:
            break
        if step(mid) is None:
            break
    return found


def _round(rate: float) -> float:
    return float(round(rate)) if rate >= 10 else round(rate, 2)


HEADER = (f"{'step':>4} {'rate/s':>8} {'rps':>8} {'requests':>8} {'fail %':>7} {'p50 ms':>7} {'p99 ms':>7} "
          f"{'max ms':>7}  verdict")
_ROW_INDENT = " " * 6  # a verdict too long for the row goes on below it, within TABLE_WIDTH


def format_row(row: dict[str, Any], number: int | None = None) -> str:
    """One step as it finishes (the columns are fixed: the rows are printed one by one); the
    objectives' values (and why the rate was not delivered) wrapped within TABLE_WIDTH."""
    def ms(v: Any) -> str:
        return "-" if v is None else format_ms(v)

    rate = row["failure_rate"]
    broken = ", ".join(f"{k} = {'no samples' if v is None else f'{v:g}'}" for k, v in row["objectives"].items())
    if row.get("undelivered"):
        broken += f"; {row['undelivered']}"
    line = (f"{'' if number is None else number:>4} {row['rate']:>8g} {row['rps']:>8.1f} {row['requests']:>8} "
            f"{'-' if rate is None else f'{rate:.3f}':>7} {ms(row['p50_ms']):>7} {ms(row['p99_ms']):>7} "
            f"{ms(row['max_ms']):>7}  {'held' if row['held'] else 'BROKE'} ({broken})")
    return "\n".join(wrap_lines(line, "", _ROW_INDENT))


def report(found: Search, slos: list[gates_mod.Gate], *, urls: list[str], step_s: float,
           incomplete: bool = False) -> dict[str, Any]:
    """capacity.json: the objectives, every step in the order run, and the answer."""
    return {
        "objectives": [s.text for s in slos],
        "endpoints": urls,
        "step_s": step_s,
        "start_rate": found.start,
        "factor": found.factor,
        "max_rate": found.max_rate,
        "steps": [s.row() for s in found.steps],
        "capacity_rate": found.held,
        "first_broken_rate": found.broke,
        "reached_max_rate": found.broke is None and found.held is not None and found.held >= found.max_rate,
        "incomplete": incomplete,
    }


def conclusion(rep: dict[str, Any]) -> str:
    held, broke = rep["capacity_rate"], rep["first_broken_rate"]
    objectives = " and ".join(rep["objectives"])
    if held is None:
        return f"capacity: no step held {objectives} (even {rep['start_rate']:g} arrivals/s broke it)"
    if broke is None:
        return f"capacity: {objectives} held at every rate tried, up to {held:g} arrivals/s (raise --max-rate)"
    return f"capacity: {held:g} arrivals/s held {objectives}; {broke:g} arrivals/s broke it"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def html(rep: dict[str, Any]) -> str:
    """capacity.html: the answer, the per-step table and p99 / throughput against the rate."""
    from html import escape

    from mcp_tempest.load.charts import STYLE, Chart, Series, svg

    steps = sorted(rep["steps"], key=lambda r: r["rate"])
    bounds = [(f"objective {o}", float(o.split("<")[-1].strip("= ")))
              for o in rep["objectives"] if o.strip().startswith("p") and "_ms" in o]
    p99 = Chart("p99 latency against the arrival rate", "arrivals per second", "ms", log_y=True,
                series=[Series("p99 ms", [(r["rate"], r["p99_ms"]) for r in steps if r["p99_ms"]], dots=True),
                        Series("p50 ms", [(r["rate"], r["p50_ms"]) for r in steps if r["p50_ms"]], dots=True)],
                hlines=bounds)
    rps = Chart("throughput against the arrival rate", "arrivals per second", "requests per second",
                series=[Series("requests/s", [(r["rate"], r["rps"]) for r in steps], dots=True)])
    rows = "".join(
        f"<tr><td>{i + 1}</td><td>{r['rate']:g}</td><td>{r['rps']:.1f}</td><td>{r['requests']}</td>"
        f"<td>{_pct(r['failure_rate'])}</td>"
        f"<td>{r['p50_ms'] or 0:.2f}</td><td>{r['p99_ms'] or 0:.2f}</td><td>{r['max_ms'] or 0:.2f}</td>"
        f"<td class=\"{'ok' if r['held'] else 'bad'}\">{'held' if r['held'] else 'broke'}</td></tr>"
        for i, r in enumerate(rep["steps"]))
    return (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>mcp-tempest capacity</title>"
            f"<style>{STYLE}</style></head><body><h1>Capacity search</h1>"
            f"<p><b>{escape(conclusion(rep))}</b></p><p>endpoints: {escape(', '.join(rep['endpoints']))}; "
            f"steps of {rep['step_s']:g} s, open model</p>{svg(p99)}{svg(rps)}"
            "<h2>Steps, in the order run</h2><table><tr><th>step</th><th>rate/s</th><th>rps</th><th>requests</th>"
            f"<th>fail %</th><th>p50 ms</th><th>p99 ms</th><th>max ms</th><th>verdict</th></tr>{rows}</table>"
            "</body></html>\n")
