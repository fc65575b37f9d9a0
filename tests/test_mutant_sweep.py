"""Every mutant is found by a plain default-budget campaign (issue 10, item 3).

The CI version of tests/benchmarks/bench_mutant_sweep.py (which runs 5 seeds, nightly): for
each bug `mcp-tempest serve --list-bugs` names that a campaign is to find (Mutant.found_by),
`mcp-tempest fuzz --max-examples 200 --seed S --stop-on-rule <its rules>` against the reference
server with that bug switched on must report one of the bug's rule ids. No property is singled out
and no mutation is named: the default split of the budget must be enough. `--stop-on-rule` ends a
campaign at that finding (up to it, the campaign is the default one, seed for seed), and the
campaigns run in-process two at a time (the benchmark says why). The default run sweeps seed 1,
the nightly profile (`-m nightly`) seed 2 as well; the mutants' aimed campaigns in
tests/test_mutants_found.py use a third seed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "benchmarks"))
from bench_mutant_sweep import sweep  # noqa: E402 - the benchmark is a script

from mcp_tempest.targets.mutants import MUTANTS, found_by  # noqa: E402


@pytest.mark.slow  # every mutant, each campaign up to its finding, two at a time
@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.nightly)])
def test_default_campaigns_find_every_mutant(seed: int, tmp_path: Path) -> None:
    """Seed 1 in the default run, seed 2 nightly (`-m nightly`); the benchmark runs five."""
    bugs = sorted(found_by("fuzz"))
    missed = []
    for bug, s, found, rules, _took, last in sweep(bugs, [seed], 200, tmp_path, jobs=2):
        if not found:
            missed.append(f"{bug}@{s} (rules {MUTANTS[bug].rules}; reported {rules}; {last})")
    assert missed == []


def test_stop_on_rule_ends_the_campaign_at_the_finding_and_the_same_seed_finds_the_same(tmp_path: Path) -> None:
    """The option the sweep relies on: the campaign halts at the first finding of the named rule
    (the properties after it do not run), filed under that rule."""
    import orjson
    from bench_mutant_sweep import campaign_argv

    from mcp_tempest.fuzz.campaign_command import fuzz_main

    argv = campaign_argv("null-id-accepted", 1, 200, tmp_path)
    assert fuzz_main(argv) == 1
    index = orjson.loads((tmp_path / "null-id-accepted-1" / "findings.json").read_bytes())
    assert {f["rule"] for f in index["findings"]} == {"RPC-01"}
    assert index["examples"] < 200  # halted early: the properties after the finding did not run


def test_stop_on_rule_rejects_what_is_not_a_rule_id(capsys: pytest.CaptureFixture[str]) -> None:
    from mcp_tempest.fuzz.campaign_command import fuzz_main

    assert fuzz_main(["--stop-on-rule", "rpc 4"]) == 2
    err = capsys.readouterr().err
    assert "--stop-on-rule: RPC 4 is not a rule id" in err and "Traceback" not in err
    assert fuzz_main(["--stop-on-rule", "RPC-04", "--workers", "2"]) == 2
    assert "--stop-on-rule needs --workers 1" in capsys.readouterr().err
