"""When a fresh-process property plays an example on the warm process (fuzz.job.JobState.
reuse_warm): a warm failure is confirmed on fresh processes, so after a failure warm play pays
only while failures stay rare; shrink candidates start fresh-only."""

from __future__ import annotations

import math

from mcp_tempest.fuzz.job import RECENT_EXAMPLES, JobState


def state(failures: int = 0, generated: list[bool] | None = None, aside: list[bool] | None = None) -> JobState:
    s = JobState(cap=100, hard_deadline=math.inf, shrink_reserve=0.0, shrink_budget=10.0, failures=failures)
    s.recent_generated.extend(generated or [])
    s.recent_aside.extend(aside or [])
    return s


def test_a_property_that_spawns_nothing_or_has_not_failed_always_plays_warm() -> None:
    assert state(failures=3, generated=[True] * 20).reuse_warm(0, aside=False)
    assert state(failures=0, generated=[True] * 20).reuse_warm(1, aside=False)
    assert state(failures=0).reuse_warm(1, aside=True)


def test_after_a_failure_generated_examples_stay_warm_while_fewer_than_half_failed() -> None:
    assert state(failures=1, generated=[False] * 9 + [True]).reuse_warm(1, aside=False)
    assert state(failures=1, generated=[False] * 6 + [True] * 4).reuse_warm(1, aside=False)
    assert not state(failures=1, generated=[False] * 5 + [True] * 5).reuse_warm(1, aside=False)
    assert not state(failures=1, generated=[True]).reuse_warm(1, aside=False)


def test_shrink_candidates_start_fresh_only_and_go_warm_once_most_pass() -> None:
    few = RECENT_EXAMPLES // 4 - 1
    assert not state(failures=1, aside=[False] * few).reuse_warm(1, aside=True)
    assert state(failures=1, aside=[False] * (few + 1)).reuse_warm(1, aside=True)
    assert not state(failures=1, aside=[True, False] * RECENT_EXAMPLES).reuse_warm(1, aside=True)


def test_only_the_latest_examples_count() -> None:
    s = state(failures=1, generated=[True] * RECENT_EXAMPLES)
    s.recent_generated.extend([False] * RECENT_EXAMPLES)
    assert len(s.recent_generated) == RECENT_EXAMPLES and s.reuse_warm(1, aside=False)
