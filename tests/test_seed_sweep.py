"""The short seed sweep: every property over both transports on the reference server, for ten
seeds at a small budget, must report 0 findings (the long sweep is
tests/benchmarks/bench_seed_sweep.py). Seed 11 is in: it once gave 11 false findings (an id-less
-32700 was attributed to a blank line sent before the malformed frame)."""

from __future__ import annotations

import pytest
from seed_sweep import describe, sweep_seed

SEEDS = (1, 2, 3, 5, 7, 11, 13, 17, 19, 23)


@pytest.mark.slow
def test_short_seed_sweep_reports_nothing_on_the_reference_server() -> None:
    results = [sweep_seed(seed, 70, timeout=300) for seed in SEEDS]
    dirty = [describe(r) for r in results if r.exit_code != 0 or r.findings]
    assert not dirty, "\n".join(dirty)
    assert all(r.examples >= 60 for r in results), [describe(r) for r in results]


def test_framing_seed_11_is_clean_on_stdio(tmp_path) -> None:  # noqa: ANN001 - pytest fixture
    from fuzz_support import run_cli

    out = tmp_path / "out"
    proc = run_cli("fuzz", "--properties", "framing", "--transports", "stdio", "--max-examples", "150",
                   "--seed", "11", "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1].endswith(" 0 findings: PASS"), proc.stdout
