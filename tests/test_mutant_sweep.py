"""Every mutant is found by a plain default-budget campaign (issue 10, item 3), for 2 seeds.

The CI version of tests/benchmarks/bench_mutant_sweep.py (which runs 5 seeds, nightly): for
each bug `mcp-gauntlet serve --list-bugs` names, except the load-test-only slow leak,
`mcp-gauntlet fuzz --max-examples 200 --seed S` against the reference server with that bug
switched on must report one of the bug's rule ids. No property is singled out and no mutation
is named: the default split of the budget must be enough.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "benchmarks"))
from bench_mutant_sweep import LOAD_ONLY, sweep_one  # noqa: E402 - the benchmark is a script

from targets.mutants import MUTANTS  # noqa: E402

SEEDS = (1, 2)


@pytest.mark.nightly  # 22 mutants x 2 seeds x a full default campaign: ~40 min on 2 cores
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("bug", sorted(set(MUTANTS) - LOAD_ONLY))
def test_default_campaign_finds_the_mutant(bug: str, seed: int, tmp_path: Path) -> None:
    found, rules, took, last = sweep_one(bug, seed, 200, tmp_path)
    assert found, f"{bug} (rules {MUTANTS[bug].rules}) not found with seed {seed}: reported {sorted(rules)}; {last}"
