"""Drawing N values from a strategy, the same N values for the same seed, in any process.

Why not `strategy.example()`: it is meant for the REPL, is not seedable and warns. Running a
real `@given` with `@seed(S)`, no example database and only the generate phase is the
supported way to get reproducible draws; when Hypothesis stops early (a small search space)
we run again with the next seed, and as a last resort cycle what we have.
"""

from __future__ import annotations

from typing import Any, TypeVar

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

T = TypeVar("T")

_MAX_ROUNDS = 8


def draw_examples(strategy: st.SearchStrategy[T], count: int, seed: int = 0) -> list[T]:
    """`count` values drawn from `strategy`, deterministic in `seed`."""
    if count <= 0:
        return []
    out: list[T] = []
    for round_index in range(_MAX_ROUNDS):
        need = count - len(out)
        if need <= 0:
            break
        got: list[T] = []
        _collector(strategy, got, need, seed * 1_000_003 + round_index)()
        out.extend(got[:need])
        if not got:
            break
    if out and len(out) < count:
        out = [out[i % len(out)] for i in range(count)]
    return out[:count]


def _collector(strategy: st.SearchStrategy[T], sink: list[T], count: int, run_seed: int) -> Any:
    @settings(
        database=None,
        max_examples=count,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        print_blob=False,
    )
    @hypothesis_seed(run_seed)
    @given(strategy)
    def collect(value: Any) -> None:
        sink.append(value)

    return collect
