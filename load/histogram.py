"""Exact latency histograms: every sample kept at microsecond resolution, nothing bucketed.

Why not Locust's own statistics: Locust rounds response times into coarse buckets (to 10 ms
above 100 ms, to 100 ms above 1 s), so its p99 can be off by several percent, which is more than
the regressions a release gate is meant to catch. Here a sample is an integer number of
microseconds and the histogram maps each distinct value to how many times it was seen. That is
lossless at the resolution we measure, small (a run has a few thousand distinct values, not
millions of samples), and two histograms merge exactly by adding counts, which is what lets the
samples of many Locust workers be combined on the master without losing anything.

Percentiles use the nearest-rank definition: the p-th percentile is the smallest recorded value
such that at least p% of the samples are less than or equal to it. It is always a value that was
actually observed, so it can be checked against a sort of the raw samples.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

PERCENTILES: tuple[tuple[str, float], ...] = (
    ("p50_ms", 50.0),
    ("p90_ms", 90.0),
    ("p95_ms", 95.0),
    ("p99_ms", 99.0),
    ("p999_ms", 99.9),
)


def nearest_rank(count: int, percent: float) -> int:
    """1-based rank of the p-th percentile among `count` sorted samples (nearest-rank method)."""
    if count <= 0:
        raise ValueError("no samples")
    # The small epsilon keeps 99.9% of 1000 at rank 999 despite binary floating point.
    return min(count, max(1, math.ceil(count * percent / 100.0 - 1e-9)))


class ExactHistogram:
    """Counts per integer microsecond value; merge, percentiles and wire form are all exact."""

    __slots__ = ("_counts", "count", "total_us", "max_us", "min_us")

    def __init__(self) -> None:
        self._counts: dict[int, int] = {}
        self.count = 0
        self.total_us = 0
        self.max_us = 0
        self.min_us = 0

    def add(self, value_us: int, times: int = 1) -> None:
        if value_us < 0:
            value_us = 0
        counts = self._counts
        counts[value_us] = counts.get(value_us, 0) + times
        if self.count == 0 or value_us < self.min_us:
            self.min_us = value_us
        if value_us > self.max_us:
            self.max_us = value_us
        self.count += times
        self.total_us += value_us * times

    def merge(self, other: ExactHistogram) -> None:
        for value, times in other._counts.items():
            self.add(value, times)

    def __len__(self) -> int:
        return self.count

    def items(self) -> list[tuple[int, int]]:
        """(value_us, count) pairs in increasing value order."""
        return sorted(self._counts.items())

    def percentile_us(self, percent: float) -> int:
        """The nearest-rank percentile in microseconds; 0 for an empty histogram."""
        if self.count == 0:
            return 0
        rank = nearest_rank(self.count, percent)
        seen = 0
        for value, times in self.items():
            seen += times
            if seen >= rank:
                return value
        return self.max_us  # not reached: the counts sum to self.count

    def percentiles_us(self, percents: Iterable[float]) -> list[int]:
        """Several percentiles in one pass over the sorted values."""
        wanted = list(percents)
        if self.count == 0:
            return [0 for _ in wanted]
        ranks = [nearest_rank(self.count, p) for p in wanted]
        order = sorted(range(len(ranks)), key=ranks.__getitem__)
        out = [0] * len(ranks)
        pending = iter(order)
        index = next(pending, None)
        seen = 0
        for value, times in self.items():
            seen += times
            while index is not None and seen >= ranks[index]:
                out[index] = value
                index = next(pending, None)
            if index is None:
                break
        return out

    def summary_ms(self) -> dict[str, float]:
        """p50 .. p99.9, max and mean in milliseconds, rounded to the microsecond we measured."""
        values = self.percentiles_us(p for _, p in PERCENTILES)
        out = {name: value / 1000.0 for (name, _), value in zip(PERCENTILES, values, strict=True)}
        out["max_ms"] = self.max_us / 1000.0
        out["mean_ms"] = round(self.total_us / self.count / 1000.0, 3) if self.count else 0.0
        return out

    # --- wire form: plain lists, so msgpack (Locust's worker reports) and JSON both carry it ---

    def to_wire(self) -> list[list[int]]:
        return [[value, times] for value, times in self.items()]

    @classmethod
    def from_wire(cls, data: Iterable[Any]) -> ExactHistogram:
        hist = cls()
        for value, times in data:
            hist.add(int(value), int(times))
        return hist

    @classmethod
    def from_samples(cls, samples_us: Iterable[int]) -> ExactHistogram:
        hist = cls()
        for value in samples_us:
            hist.add(int(value))
        return hist

    def as_mapping(self) -> Mapping[int, int]:
        return dict(self._counts)
