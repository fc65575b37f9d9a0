"""The open model's arrival schedule: intended start times at a fixed rate, wrk2-style.

Why a schedule and not a sleep per user: a closed-model user sends its next request only after
its answer arrives, so while a server stalls nothing is sent and nothing slow is measured
(coordinated omission). Here arrival i is intended at t0 + i/rate whatever happened before; a
free user takes the next arrival, waits for its time if it is early, and the sample is timed from
the intended time, so a stall delays every arrival behind it and shows in the percentiles. The
users are the cap on operations in flight. Pure arithmetic on perf_counter_ns, no gevent.
"""

from __future__ import annotations

import time


class Pacer:
    """Hands out intended start times (perf_counter_ns) at `rate` per second, from the first ask."""

    def __init__(self, rate: float) -> None:
        if not rate > 0:
            raise ValueError("rate must be positive")
        self.rate = rate
        self.interval_ns = 1e9 / rate
        self.t0: int | None = None
        self.issued = 0

    def next_slot(self) -> int:
        if self.t0 is None:
            self.t0 = time.perf_counter_ns()
        slot = self.t0 + round(self.issued * self.interval_ns)
        self.issued += 1
        return slot

    def due(self, now_ns: int | None = None) -> int:
        """Arrivals whose intended time has come by `now_ns`."""
        if self.t0 is None:
            return 0
        now = time.perf_counter_ns() if now_ns is None else now_ns
        return max(0, int((now - self.t0) // self.interval_ns) + 1)
