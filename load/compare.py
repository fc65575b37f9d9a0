"""`load --compare-target OLD`: the candidate against the baseline build in one run, and a verdict.

Why not two runs: a run made now and one made an hour ago on a shared machine differ by whatever
else the machine was doing. Here both builds are up for the whole run and take turns, in rounds
of `--round-time` each, in the order B C C B B C C B ... (B baseline, C candidate): neighbouring
rounds see nearly the same machine, and the ABBA order cancels a steady drift (a store that
grows, a neighbour that warms up) instead of handing it to one side.

Statistics, per name and overall, for p50, p99 and throughput: rounds 2k and 2k+1 are a pair
(one of each build, alternately first), and each pair gives one log ratio ln(C/B). The ratio
reported is exp(mean) of those (a geometric mean of the paired ratios) with a Student t
interval on the mean. Why not a bootstrap over rounds: with the handful of pairs a run of
minutes has, a percentile bootstrap never reaches past the most extreme pair, so its 95%
interval covers the truth far less than 95% of the time (at 4 pairs, all four land on one side
of it one time in eight); the t interval is exact for normal log ratios and widens by itself
when a round was disturbed (one burst of other work makes the spread, not the verdict).

A metric's verdict against `--compare-margin` m, from its interval [low, high] of C/B:
latency regressed when low > 1+m (it is slower by more than m at the stated confidence),
improved when high < 1-m, did not regress when high <= 1+m, and is inconclusive otherwise;
throughput mirrors it (regressed when high < 1-m). The run's verdict: regression if any gated
metric regressed, else inconclusive if any is, else improvement if one improved, else no
regression. An inconclusive interval narrows as 1/sqrt(pairs): the report says how many more
rounds would probably settle it.

Pure functions over per-round summary.json dicts: the Locust side writes those
(load/users.py, `--mcp-rounds`), `mcp-tempest load` judges them here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist, fmean, median, stdev
from typing import Any

from mcp_tempest.fuzz.safe_text import NAME_WIDTH, visible
from mcp_tempest.load.recorder import SETUP
from mcp_tempest.load.summary import fit_table, wrap_lines
from mcp_tempest.load.summary import format_ms as _ms

BASELINE = "baseline"
CANDIDATE = "candidate"
OVERALL = "all requests"
METRICS = ("p50_ms", "p99_ms", "rps")
# A name's per-round percentile is gated only when every round it is paired in has this many
# samples: a p50 of a dozen samples is mostly the draw of the mix, and a p99 needs a hundred
# or more to be more than the round's slowest sample.
MIN_ROUND_SAMPLES = {"p50_ms": 30, "p99_ms": 200}
MIN_PAIRS = 4
# A round that served fewer requests than this is too short to be steady (said in the report).
MIN_ROUND_REQUESTS = 200
# Inconclusive metrics whose settling would take more than this many times the pairs run so far
# are "about the margin": more time will not settle them, a wider margin or a longer round may.
SETTLE_LIMIT = 25

REGRESSION = "regression"
NO_REGRESSION = "no regression"
IMPROVEMENT = "improvement"
INCONCLUSIVE = "inconclusive"
NOT_GATED = "not gated"


def round_order(rounds: int) -> list[str]:
    """B C C B B C C B ...: every pair holds one round of each build, alternately first."""
    pattern = (BASELINE, CANDIDATE, CANDIDATE, BASELINE)
    return [pattern[i % 4] for i in range(rounds)]


def round_values(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per name (and OVERALL): count, p50_ms, p99_ms and rps of one round's summary.json.

    Throughput is the name's completed samples over the measured part of the round; overall it
    is every request (the setup calls of the round's discovery are not in it)."""
    duration = max(float(summary.get("duration_s") or 0.0), 1e-9)
    out: dict[str, dict[str, Any]] = {}
    overall = summary.get("overall") or {}
    out[OVERALL] = {"count": float(overall.get("count") or 0), "p50_ms": float(overall.get("p50_ms") or 0.0),
                    "p99_ms": float(overall.get("p99_ms") or 0.0),
                    "rps": float(overall.get("count") or 0) / duration, "kind": "overall"}
    for name, entry in (summary.get("operations") or {}).items():
        if entry.get("kind") == SETUP:
            continue
        count = float(entry.get("count") or 0)
        out[name] = {"count": count, "p50_ms": float(entry.get("p50_ms") or 0.0),
                     "p99_ms": float(entry.get("p99_ms") or 0.0), "rps": count / duration,
                     "kind": entry.get("kind") or "request"}
    return out


# --- Student t quantiles (no SciPy here): the t CDF through the regularized incomplete beta ---


def _beta_cf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((a + m2 - 1) * (a + m2)), -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-14:
            break
    return h


def _beta_inc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_cf(a, b, x) / a
    return 1.0 - front * _beta_cf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: int) -> float:
    tail = 0.5 * _beta_inc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: int) -> float:
    """The t value below which a share p of Student's t with df degrees of freedom lies (p > 0.5)."""
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        high *= 2.0
    for _ in range(100):
        mid = (low + high) / 2.0
        if t_cdf(mid, df) < p:
            low = mid
        else:
            high = mid
    return (low + high) / 2.0


# --- one metric ---


@dataclass(frozen=True, slots=True)
class Estimate:
    """C/B of one metric: the geometric mean of the paired ratios and its confidence interval."""

    metric: str
    baseline: float  # median of the baseline's per-round values (for display)
    candidate: float
    pairs: int
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    verdict: str = NOT_GATED
    why_not: str = ""  # why the metric is shown but not gated
    more_pairs: int | None = None  # inconclusive: pairs still needed, about (None: more time will not do)
    mean_log: float = 0.0
    sd_log: float = 0.0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ratio": _r(self.ratio), "low": _r(self.low), "high": _r(self.high),
                               "verdict": self.verdict, "baseline": round(self.baseline, 3),
                               "candidate": round(self.candidate, 3), "pairs": self.pairs}
        if self.why_not:
            out["not_gated"] = self.why_not
        if self.verdict == INCONCLUSIVE:
            out["more_pairs"] = self.more_pairs
        return out


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def judge(metric: str, low: float, high: float, margin: float) -> str:
    """A metric's verdict from its interval of C/B (latency: higher is worse; rps: lower is)."""
    if metric == "rps":
        if high < 1.0 - margin:
            return REGRESSION
        if low > 1.0 + margin:
            return IMPROVEMENT
        return NO_REGRESSION if low >= 1.0 - margin else INCONCLUSIVE
    if low > 1.0 + margin:
        return REGRESSION
    if high < 1.0 - margin:
        return IMPROVEMENT
    return NO_REGRESSION if high <= 1.0 + margin else INCONCLUSIVE


def _fit(logs: Sequence[float], signs: Sequence[int]) -> tuple[float, float, float, int]:
    """Least squares of ln(C/B) = delta + sign * gamma over the pairs: delta is the builds'
    difference, gamma the order's (sign +1 when the baseline ran first): whatever the second
    round of a pair gets from the first (a drift of the machine, a warmer cache) cancels between
    B-first and C-first pairs instead of widening the interval. Returns (delta, its standard
    error, the residual sd, residual degrees of freedom)."""
    n = len(logs)
    s1, s2 = float(sum(signs)), float(sum(x * x for x in signs))
    det = n * s2 - s1 * s1
    if det <= 0 or n < 3:  # every pair in one order: the order's effect cannot be told apart
        mean = fmean(logs)
        sd = stdev(logs) if n > 1 else 0.0
        return mean, sd / math.sqrt(n), sd, n - 1
    y1 = sum(logs)
    y2 = sum(x * y for x, y in zip(signs, logs, strict=True))
    delta = (s2 * y1 - s1 * y2) / det
    gamma = (n * y2 - s1 * y1) / det
    df = n - 2
    rss = sum((y - delta - gamma * x) ** 2 for x, y in zip(signs, logs, strict=True))
    sd = math.sqrt(rss / df)
    return delta, sd * math.sqrt(s2 / det), sd, df


def estimate(metric: str, pairs: Sequence[tuple[float, float, int]], *, margin: float, confidence: float,
             why_not: str = "") -> Estimate:
    """The paired (baseline, candidate, order sign) values of one metric -> its ratio, interval and verdict."""
    usable = [(b, c, s) for b, c, s in pairs if b > 0 and c > 0]
    base = median([b for b, _, _ in usable]) if usable else 0.0
    cand = median([c for _, c, _ in usable]) if usable else 0.0
    n = len(usable)
    if n < 2:
        return Estimate(metric, base, cand, n, why_not=why_not or f"{n} usable pair(s)")
    mean, se, sd, df = _fit([math.log(c / b) for b, c, _ in usable], [s for _, _, s in usable])
    half = t_quantile(0.5 + confidence / 2.0, df) * se
    low, high = math.exp(mean - half), math.exp(mean + half)
    if why_not or n < MIN_PAIRS:
        return Estimate(metric, base, cand, n, math.exp(mean), low, high, NOT_GATED,
                        why_not or f"{n} pairs, fewer than {MIN_PAIRS}", mean_log=mean, sd_log=sd)
    verdict = judge(metric, low, high, margin)
    more = _more_pairs(metric, mean, se * math.sqrt(n), n, margin, confidence) if verdict == INCONCLUSIVE else None
    return Estimate(metric, base, cand, n, math.exp(mean), low, high, verdict, "", more, mean, sd)


def _more_pairs(metric: str, mean: float, sd: float, n: int, margin: float, confidence: float) -> int | None:
    """Pairs beyond the n run so far after which the interval would probably clear the margin
    (its half-width shrinks as 1/sqrt(pairs)); None when that is more than SETTLE_LIMIT times n."""
    bound = math.log(1.0 - margin) if metric == "rps" else math.log(1.0 + margin)
    distance = abs(mean - bound)
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    if distance <= 0.0:
        return None
    needed = math.ceil((z * sd / distance) ** 2)
    if needed > SETTLE_LIMIT * n:
        return None
    return max(1, needed - n)


# --- the whole comparison ---


def _pairs(order: Sequence[str], rounds: Sequence[dict[str, dict[str, Any]]]) -> list[tuple[int, int, int]]:
    """(baseline round, candidate round, +1 if the baseline ran first else -1) of each pair:
    rounds 2k and 2k+1."""
    out = []
    for k in range(0, len(rounds) - 1, 2):
        a, b = k, k + 1
        if order[a] == order[b]:
            continue
        out.append((a, b, 1) if order[a] == BASELINE else (b, a, -1))
    return out


def compare(order: Sequence[str], rounds: Sequence[dict[str, Any]], *, margin: float,
            confidence: float) -> dict[str, Any]:
    """Every metric of every name, overall first, from the rounds' summaries (in run order)."""
    values = [round_values(r) for r in rounds]
    pairs = _pairs(order, values)
    names = sorted({n for v in values for n in v if n != OVERALL})
    out_names: dict[str, dict[str, Any]] = {}
    estimates: dict[str, dict[str, Estimate]] = {}
    for name in (OVERALL, *names):
        per_metric: dict[str, Estimate] = {}
        kinds = {str(v[name].get("kind")) for v in values if name in v}
        for metric in METRICS:
            got: list[tuple[float, float, int]] = []
            fewest = math.inf
            for b, c, sign in pairs:
                vb, vc = values[b].get(name), values[c].get(name)
                if vb is None or vc is None:
                    fewest = 0
                    continue
                fewest = min(fewest, vb["count"], vc["count"])
                got.append((vb[metric], vc[metric], sign))
            why_not = ""
            if name != OVERALL:
                if metric == "rps":
                    why_not = "follows the run's throughput and the mix's draw"
                elif fewest < MIN_ROUND_SAMPLES[metric]:
                    shown = 0 if fewest is math.inf else int(fewest)
                    why_not = f"{shown} samples in a round, fewer than {MIN_ROUND_SAMPLES[metric]}"
            per_metric[metric] = estimate(metric, got, margin=margin, confidence=confidence, why_not=why_not)
        estimates[name] = per_metric
        out_names[name] = {"kind": sorted(kinds)[0] if kinds else "request",
                           **{m: e.to_json() for m, e in per_metric.items()}}
    gated = [e for per in estimates.values() for e in per.values() if e.verdict != NOT_GATED]
    verdict = overall_verdict([e.verdict for e in gated])
    needs = [e.more_pairs for e in gated if e.verdict == INCONCLUSIVE]
    more = max((n for n in needs if n is not None), default=None)
    return {
        "verdict": verdict,
        "margin": margin,
        "confidence": confidence,
        "pairs": len(pairs),
        "metrics": {m: e.to_json() for m, e in estimates[OVERALL].items()},
        "names": {n: v for n, v in out_names.items() if n != OVERALL},
        "more_pairs": more,  # pairs that would probably settle every unsettled figure that more time can
        "about_margin": [f"{n} {m}" for n, per in estimates.items() for m, e in per.items()
                         if e.verdict == INCONCLUSIVE and e.more_pairs is None],
        "per_round": [{"round": i + 1, "build": order[i], "requests": int(v[OVERALL]["count"]),
                       "rps": round(v[OVERALL]["rps"], 1), "p50_ms": v[OVERALL]["p50_ms"],
                       "p99_ms": v[OVERALL]["p99_ms"]} for i, v in enumerate(values)],
        "regressions": [f"{n} {m}" for n, per in estimates.items() for m, e in per.items() if e.verdict == REGRESSION],
        "improvements": [f"{n} {m}" for n, per in estimates.items() for m, e in per.items()
                         if e.verdict == IMPROVEMENT],
        "unsettled": [f"{n} {m}" for n, per in estimates.items() for m, e in per.items() if e.verdict == INCONCLUSIVE],
    }


def overall_verdict(verdicts: Iterable[str]) -> str:
    seen = set(verdicts)
    for verdict in (REGRESSION, INCONCLUSIVE, IMPROVEMENT):
        if verdict in seen:
            return verdict
    return NO_REGRESSION


# --- words ---


def _value(metric: str, value: float) -> str:
    return f"{value:.1f}/s" if metric == "rps" else f"{_ms(value)} ms"


def _interval(e: dict[str, Any]) -> str:
    if e.get("ratio") is None:
        return "-"
    if e.get("low") is None:
        return f"x{e['ratio']:.3f}"
    return f"x{e['ratio']:.3f} [{e['low']:.3f}, {e['high']:.3f}]"


_COUNTED = re.compile(r"(\d+) (samples|pairs|usable pair\(s\))(.*)")


def not_gated_cell(why: str) -> tuple[str, str]:
    """A figure shown but not gated: its table cell, with its own count (`not gated (68 samples)`),
    and the note said once below the table for every such figure."""
    counted = _COUNTED.fullmatch(why)
    if counted is None:
        return NOT_GATED, f"{NOT_GATED}: {why}"
    number, unit, rest = counted.groups()
    return f"{NOT_GATED} ({number} {unit})", f"{NOT_GATED} (N {unit}): N {unit}{rest}"


def _listed(items: Sequence[str], limit: int = 3) -> str:
    return ", ".join(items[:limit]) + (f" and {len(items) - limit} more" if len(items) > limit else "")


def settle_text(comparison: dict[str, Any]) -> str:
    """What more time would settle an inconclusive comparison, in words."""
    more = comparison.get("more_pairs")
    rounds = comparison.get("rounds") or {}
    per_round = float(rounds.get("round_s") or 0) + float(rounds.get("warmup_s") or 0)
    stuck = comparison.get("about_margin") or []
    parts = []
    if more is not None:
        seconds = 2 * more * per_round
        total = float(rounds.get("run_s") or 0) + seconds
        which = "it" if not stuck else "the rest"
        parts.append(f"about {2 * more} more rounds ({seconds:.0f} s more, --run-time {math.ceil(total)}s) "
                     f"would probably settle {which}")
    if stuck:
        parts.append(f"{_listed(stuck)} sit about the margin: more time will probably not settle "
                     f"{'it' if len(stuck) == 1 else 'them'} (a change of about {comparison['margin'] * 100:g}%)")
    return "; ".join(parts)


def verdict_line(comparison: dict[str, Any]) -> str:
    """The one line a maintainer reads: the verdict and why."""
    verdict = comparison["verdict"]
    margin = comparison["margin"] * 100
    conf = comparison["confidence"] * 100
    if verdict == REGRESSION:
        return (f"verdict: REGRESSION beyond {margin:g}% at {conf:g}% confidence: "
                + ", ".join(comparison["regressions"]))
    if verdict == INCONCLUSIVE:
        unsettled = comparison["unsettled"]
        return (f"verdict: INCONCLUSIVE at {margin:g}% and {conf:g}% confidence: {len(unsettled)} figure(s) not "
                f"settled ({_listed(unsettled)}); nothing regressed beyond the margin; {settle_text(comparison)}")
    if verdict == IMPROVEMENT:
        return (f"verdict: IMPROVEMENT beyond {margin:g}% at {conf:g}% confidence: "
                + ", ".join(comparison["improvements"]) + "; nothing regressed")
    return f"verdict: NO REGRESSION beyond {margin:g}% at {conf:g}% confidence (every gated figure settled)"


def format_comparison(comparison: dict[str, Any]) -> str:
    """One screen: the overall figures, the names that changed or are unsettled, the verdict."""
    rounds = comparison.get("rounds") or {}
    def wrapped(text: str) -> list[str]:  # prose lines within the table's width too
        return wrap_lines(text, "  ", "    ")

    lines = [
        f"compare: candidate {visible(comparison.get('candidate', {}).get('target', ''))} against baseline "
        f"{visible(comparison.get('baseline', {}).get('target', ''))}",
        *wrapped(f"{rounds.get('count', 0)} rounds of {rounds.get('round_s', 0):g}s (+{rounds.get('warmup_s', 0):g}s "
                 f"warm-up each, not measured) in the order B C C B ..., {comparison['pairs']} pairs; ratios are "
                 f"candidate/baseline, geometric mean of the pairs with its {comparison['confidence'] * 100:g}% "
                 "interval"),
    ]
    machine = comparison.get("machine") or {}
    if machine.get("text"):
        lines += wrapped(f"machine: {machine['text']}")
    not_gated: dict[str, None] = {}  # why a figure is not gated, each said once below the table

    def rows(name: str, entry: dict[str, Any]) -> list[tuple[str, list[str] | None]]:
        out: list[tuple[str, list[str] | None]] = []
        for metric in METRICS:
            e = entry[metric]
            verdict = e["verdict"]
            if e.get("not_gated"):
                verdict, note = not_gated_cell(e["not_gated"])
                not_gated[note] = None
            out.append(("" if out else visible(name, NAME_WIDTH),
                        [metric, _value(metric, e["baseline"]), _value(metric, e["candidate"]), _interval(e),
                         verdict]))
        return out

    table = rows(OVERALL, comparison["metrics"])
    quiet = 0
    for name, entry in (comparison.get("names") or {}).items():
        verdicts = {entry[m]["verdict"] for m in METRICS}
        if verdicts & {REGRESSION, IMPROVEMENT, INCONCLUSIVE}:
            table += rows(name, entry)
        else:
            quiet += 1
    lines += fit_table(["name", "metric", "baseline", "candidate", "ratio [interval]", "verdict"], table,
                       indent="  ", align="<>><<")
    for note in not_gated:
        lines += wrapped(note)
    if quiet:
        lines += wrapped(f"{quiet} other names: no change beyond the margin (or too few samples to gate; every "
                         "row is in summary.json and report.html)")
    for side in (BASELINE, CANDIDATE):
        info = comparison.get(side) or {}
        if info.get("failures") or info.get("violations"):
            lines.append(f"  {side}: {info.get('failures', 0)} failures, {info.get('violations', 0)} violations "
                         f"in {info.get('requests', 0)} requests")
    for note in comparison.get("notes") or []:
        lines += wrapped(f"note: {note}")
    lines += wrap_lines(verdict_line(comparison))
    return "\n".join(lines)


# --- report.html ---


def html_section(comparison: dict[str, Any], baseline: dict[str, Any] | None, candidate: dict[str, Any]) -> str:
    """Both builds side by side: the verdict, every name's figures and ratios, per-round p50."""
    from mcp_tempest.fuzz.safe_text import html_text as e
    from mcp_tempest.load.charts import Chart, Series, svg

    bad = {REGRESSION: "bad", IMPROVEMENT: "ok", NO_REGRESSION: "ok"}
    rows = []
    for name, entry in (("all requests", comparison["metrics"]), *(comparison.get("names") or {}).items()):
        for metric in METRICS:
            m = entry[metric]
            verdict = m["verdict"] + (f" ({m['not_gated']})" if m.get("not_gated") else "")
            rows.append(f"<tr><td>{e(name)}</td><td>{metric}</td><td>{e(_value(metric, m['baseline']))}</td>"
                        f"<td>{e(_value(metric, m['candidate']))}</td><td>{e(_interval(m))}</td>"
                        f"<td class=\"{bad.get(m['verdict'], '')}\">{e(verdict)}</td></tr>")
    per_round = comparison.get("per_round") or []
    chart = Chart("p50 of every request, per round (the builds alternate B C C B ...)", "round", "ms", series=[
        Series(f"{side} ({(comparison.get(side) or {}).get('target', '')})",
               [(float(r["round"]), float(r["p50_ms"])) for r in per_round if r["build"] == side], dots=True)
        for side in (BASELINE, CANDIDATE)])
    sides = []
    for label, summary in (("baseline", baseline), ("candidate", candidate)):
        if summary:
            overall = summary.get("overall") or {}
            sides.append(f"<td><b>{label}</b>: {e(summary.get('target', ''))}<br>{summary.get('requests', 0)} requests, "
                         f"{summary.get('failures', 0)} failures, {summary.get('violations', 0)} violations; "
                         f"p50 {e(_ms(float(overall.get('p50_ms') or 0)))} ms, p99 "
                         f"{e(_ms(float(overall.get('p99_ms') or 0)))} ms (all its rounds)</td>")
    verdict = comparison["verdict"]
    return "".join([
        "<h2>Candidate against baseline, in alternating rounds</h2>",
        f"<p class=\"{bad.get(verdict, '')}\">{e(verdict_line(comparison))}</p>",
        f"<table><tr>{''.join(sides)}</tr></table>",
        f"<p>{e(comparison.get('method', ''))}</p>",
        "<table><tr><th>name</th><th>metric</th><th>baseline</th><th>candidate</th>"
        f"<th>candidate/baseline [{comparison['confidence'] * 100:g}% interval]</th><th>verdict</th></tr>",
        "".join(rows), "</table>", svg(chart),
    ])


METHOD = ("Both builds run in the same run, in alternating rounds (B C C B ...), with the same mix, load and seed; "
          "each round's first seconds are not measured. Rounds 2k and 2k+1 form a pair; a figure's ratio is the "
          "geometric mean of its paired candidate/baseline ratios, with a Student t interval over the pairs. "
          "A latency regresses when the whole interval lies above 1 + margin, throughput when it lies below "
          "1 - margin.")
