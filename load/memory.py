"""Resident memory of the server processes the harness started, sampled through the run.

A stateless server must not pin memory per request or per abandoned MRTR operation (MRTR-17,
DERIVED): under steady load its resident set should level off once caches and allocator arenas
are warm. So growth is measured from a point after warm-up (a quarter of the run) to the end of
the run, per instance, and the largest growth is compared with a threshold. Only processes the
harness started are sampled: for an `http://` target we do not know which process serves it.

Runs in the `mcp-tempest load` process, outside Locust: a plain thread and psutil, no gevent.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

import psutil

MB = 1024 * 1024


def tree_rss(pid: int) -> int | None:
    """RSS of a process plus its descendants (servers that fork workers), in bytes."""
    try:
        proc = psutil.Process(pid)
        total = proc.memory_info().rss
        for child in proc.children(recursive=True):
            try:
                total += child.memory_info().rss
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        return total
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None


@dataclass(slots=True)
class MemorySampler:
    pids: list[int]
    interval: float = 0.25
    samples: list[list[tuple[float, int]]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> MemorySampler:
        self.samples = [[] for _ in self.pids]
        self._take()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._thread.start()
        return self

    def _take(self) -> None:
        now = time.time()  # wall clock, to line up with the load's start and stop in summary.json
        for i, pid in enumerate(self.pids):
            rss = tree_rss(pid)
            if rss is not None:
                self.samples[i].append((now, rss))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._take()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._take()


SERIES_POINTS = 300  # memory-over-time points kept per instance, whatever the run's length


def downsample(points: list[list[float]], limit: int = SERIES_POINTS) -> list[list[float]]:
    """At most `limit` points, evenly spaced, the first and last kept (for the report's chart)."""
    if len(points) <= limit:
        return points
    step = (len(points) - 1) / (limit - 1)
    return [points[round(i * step)] for i in range(limit)]


def analyse(
    samples: list[list[tuple[float, int]]],
    *,
    load_start: float,
    load_end: float,
    threshold_mb: float,
    requests: int = 0,
    timeline: list[dict[str, Any]] | None = None,
    timeline_origin: float | None = None,
) -> dict[str, Any]:
    """Growth per instance between the end of warm-up and the end of the load (epoch seconds);
    the verdict uses the largest growth.

    Bytes per request divide that growth by the requests completed in the same window (from the
    per-second timeline when there is one): dividing by the whole run's count, warm-up included,
    understated it by the warm-up's share, more so when a busy machine slowed the later seconds."""
    warm = load_start + max(1.0, 0.25 * (load_end - load_start))
    instances = []
    for i, series in enumerate(samples):
        during = [(t, rss) for t, rss in series if t <= load_end + 0.5]
        if not during:
            instances.append({"instance": i, "samples": 0})
            continue
        baseline = next((rss for t, rss in during if t >= warm), during[-1][1])
        end = during[-1][1]
        peak = max(rss for _, rss in during)
        instances.append({
            "instance": i,
            "samples": len(during),
            "start_mb": round(during[0][1] / MB, 1),
            "baseline_mb": round(baseline / MB, 1),
            "end_mb": round(end / MB, 1),
            "peak_mb": round(peak / MB, 1),
            "growth_mb": round((end - baseline) / MB, 1),
            "series": downsample([[round(t - load_start, 2), round(rss / MB, 2)] for t, rss in during]),
        })
    growths = [inst["growth_mb"] for inst in instances if "growth_mb" in inst]
    growth = max(growths) if growths else None
    report: dict[str, Any] = {
        "sampled": bool(growths),
        "threshold_mb": threshold_mb,
        "growth_mb": growth,
        "exceeded": growth is not None and growth > threshold_mb,
        "instances": instances,
    }
    if timeline and timeline_origin is not None:
        requests = sum(int(sec["requests"]) for sec in timeline
                       if warm <= timeline_origin + sec["t"] and timeline_origin + sec["t"] < load_end)
    if growth is not None and requests:
        total = sum(inst.get("growth_mb", 0.0) for inst in instances)
        report["bytes_per_request"] = round(max(total, 0.0) * MB / requests, 1)
        report["requests_measured"] = requests
    if report["exceeded"]:
        report["rule"] = "MRTR-17"  # DERIVED: abandoned or finished work must not pin memory
    return report


def describe(report: dict[str, Any]) -> str:
    if not report.get("sampled"):
        return "memory: not sampled (the harness did not start the server)"
    parts = [
        f"#{inst['instance']} {inst['baseline_mb']} -> {inst['end_mb']} MB ({inst['growth_mb']:+.1f})"
        for inst in report["instances"]
        if "growth_mb" in inst
    ]
    verdict = (
        f"GROWTH {report['growth_mb']:.1f} MB exceeds {report['threshold_mb']:g} MB (MRTR-17, heuristic)"
        if report["exceeded"]
        else f"within {report['threshold_mb']:g} MB"
    )
    return f"memory (server RSS after warm-up -> end): {', '.join(parts)}; {verdict}"
