"""How busy the machine was while a load run measured: other processes' CPU, and CPU steal.

Why: a latency measured on a machine shared with other work measures that work too. A
`--baseline` comparison (two runs at different times) cannot tell a slower build from a busier
machine, so the run says when the machine was busy and points to `--compare-target`, which
measures both builds in the same run. The numbers are the whole machine's CPU time (psutil)
minus this process tree's own (the harness, Locust, the servers it started), over the run.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

import psutil

# Other processes using this many cores on average (or this share of the machine, if larger),
# or this share of CPU time stolen by the hypervisor, make the machine "busy".
BUSY_CORES = 0.5
BUSY_SHARE = 0.25
BUSY_STEAL = 0.05


def _tree_cpu_s() -> float:
    """CPU seconds of this process, its reaped children, and its live descendants (with theirs)."""
    total = 0.0
    me = psutil.Process()
    procs = [me]
    try:
        procs += me.children(recursive=True)
    except psutil.Error:
        pass
    for proc in procs:
        try:
            t = proc.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + getattr(t, "children_user", 0.0) + getattr(t, "children_system", 0.0)
    return total


def _machine() -> tuple[float, float, float]:
    """(busy CPU s without steal, steal s, all CPU s) of the whole machine since boot."""
    t = psutil.cpu_times()
    steal = getattr(t, "steal", 0.0)
    idle = t.idle + getattr(t, "iowait", 0.0)
    total = sum(t)
    # guest time is already inside user on Linux; count it once
    total -= getattr(t, "guest", 0.0) + getattr(t, "guest_nice", 0.0)
    return total - idle - steal, steal, total


@dataclass(slots=True)
class MachineWatch:
    """Start before the load begins, stop when it ends; `report()` is summary.json's `machine`."""

    start_wall: float = 0.0
    start_machine: tuple[float, float, float] = (0.0, 0.0, 0.0)
    start_ours: float = 0.0
    load_before: float | None = None
    result: dict[str, Any] | None = None

    def start(self) -> MachineWatch:
        self.load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        self.start_wall = time.monotonic()
        self.start_machine = _machine()
        self.start_ours = _tree_cpu_s()
        return self

    def stop(self) -> dict[str, Any]:
        if self.result is not None:
            return self.result
        wall = max(time.monotonic() - self.start_wall, 1e-9)
        busy, steal, total = (b - a for a, b in zip(self.start_machine, _machine(), strict=True))
        ours = _tree_cpu_s() - self.start_ours
        cores = psutil.cpu_count() or 1
        others = max(0.0, (busy - ours) / wall)
        steal_share = steal / total if total > 0 else 0.0
        reasons = []
        if others >= max(BUSY_CORES, BUSY_SHARE * cores):
            reasons.append(f"other processes used {others:.1f} of {cores} cores")
        if steal_share >= BUSY_STEAL:
            reasons.append(f"the hypervisor took {100 * steal_share:.0f}% of the CPU time (steal)")
        text = (f"{cores} cores; other processes used {others:.1f} cores on average, CPU steal "
                f"{100 * steal_share:.0f}%" + (f", load average {self.load_before:.1f} before the run"
                                               if self.load_before is not None else ""))
        self.result = {"cores": cores, "others_cores": round(others, 2), "steal": round(steal_share, 4),
                       "load_before": None if self.load_before is None else round(self.load_before, 2),
                       "busy": bool(reasons), "why": "; ".join(reasons), "text": text}
        return self.result
