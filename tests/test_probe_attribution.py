"""Every probe the coverage line counts as tried is judged on its own (issue 32, item 9).

The coverage phase sends a property's named probes batched; a batch that fails is split and
each of its probes played alone, bounded by the campaign's time, not by --shrink-time (given 0
here, so it cannot be what attributes them). Against tests/hostile/mishandles_batch.py, which
mishandles three probes of one framing batch three different ways:
- each probe that fails alone is its own finding, under its own rule, naming only itself, on
  every seed, and the coverage report counts the three as tried;
- when the time runs out before the batch is split, its probes are reported "not judged alone",
  not counted as tried;
- --stop-on-first files the first probe failing alone and says the others were not judged alone;
and the reference server still draws nothing.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import orjson
import pytest
from fuzz_support import PYTHON, reference_stdio, run_cli

from mcp_tempest.fuzz.job import NOT_JUDGED_ALONE
from mcp_tempest.fuzz.properties.base import Context
from mcp_tempest.fuzz.properties.framing import PROPERTY as FRAMING
from mcp_tempest.fuzz.properties.framing import mutation_names

SERVER = Path(__file__).resolve().parent / "hostile" / "mishandles_batch.py"
# each mishandled probe and the rule of the server's duty it shows broken
EXPECTED = {"unknown-notification": "RPC-10", "cancelled-missing-request-id": "CAN-05", "blank-line": "RPC-01"}


def _target(*options: str) -> str:
    return "stdio:" + shlex.join([PYTHON, str(SERVER), *options])


def _fuzz(out: Path, target: str, *args: str, code: int) -> dict[str, Any]:
    proc = run_cli("fuzz", "--target", target, "--properties", "framing", "--no-database", "--out", str(out),
                   "--progress", "never", *args, timeout=120)
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return orjson.loads((out / "findings.json").read_bytes())


def _attributed(index: dict[str, Any]) -> dict[str, str]:
    """Each finding's probes, with its rule; a finding must name exactly one probe here."""
    out = {}
    for f in index["findings"]:
        names = [p["probe"] for p in f["probes"]]
        assert len(names) == 1, f
        out[names[0]] = f["rule"]
    return out


def _not_tried(index: dict[str, Any]) -> dict[str, str]:
    return {item["probe"]: item["why"] for item in index["coverage"]["not_applied"]}


def test_the_three_mishandled_probes_go_out_in_one_batch() -> None:
    """The premise of the tests below: one failing batch holds all three."""
    ready = [p.name for p in FRAMING.coverage(Context(transport="stdio")) if p.case is not None]
    size = FRAMING.coverage_batch
    batches = {ready.index(name) // size for name in EXPECTED}
    assert len(batches) == 1 and size == len(EXPECTED), (ready, size)


@pytest.mark.parametrize("seed", [1, 2])
def test_each_probe_of_a_failing_batch_is_its_own_finding(tmp_path: Path, seed: int) -> None:
    index = _fuzz(tmp_path / "out", _target(), "--max-examples", "20", "--seed", str(seed), "--shrink-time", "0",
                  code=1)
    assert _attributed(index) == EXPECTED
    for f in index["findings"]:
        assert f["probe"] == f["mutation"] and f["confirmed"], f
    coverage = index["coverage"]
    assert coverage["tried"] == len(mutation_names("stdio")), coverage
    assert not set(EXPECTED) & set(_not_tried(index))


def test_a_batch_the_time_ran_out_on_is_reported_not_judged_alone(tmp_path: Path) -> None:
    # The batch's blank line is served after 6 s, past the campaign's 5 s: no time to split it.
    index = _fuzz(tmp_path / "out", _target("--slow-blank", "6"), "--mutations", ",".join(EXPECTED),
                  "--duration", "5", "--timeout", "9", "--seed", "1", code=0)
    assert index["findings"] == []
    assert index["coverage"]["tried"] == 0
    why = _not_tried(index)
    assert {name: why[name] for name in EXPECTED} == {name: f"stdio: {NOT_JUDGED_ALONE}" for name in EXPECTED}


def test_stop_on_first_files_the_first_probe_failing_alone(tmp_path: Path) -> None:
    index = _fuzz(tmp_path / "out", _target(), "--mutations", ",".join(EXPECTED), "--max-examples", "10",
                  "--seed", "1", "--shrink-time", "0", "--stop-on-first", code=1)
    assert _attributed(index) == {"unknown-notification": "RPC-10"}
    assert index["coverage"]["tried"] == 1
    why = _not_tried(index)
    for name in ("cancelled-missing-request-id", "blank-line"):
        assert why[name] == "stdio: not judged alone: the property stopped at its first failure (--stop-on-first)"


def test_the_reference_server_draws_nothing_and_every_probe_counts(tmp_path: Path) -> None:
    index = _fuzz(tmp_path / "out", reference_stdio(tmp_path / "s.sqlite3"), "--max-examples", "20", "--seed", "1",
                  "--shrink-time", "0", code=0)
    assert index["findings"] == []
    assert index["coverage"]["tried"] == len(mutation_names("stdio"))
    assert not any("judged" in why for why in _not_tried(index).values())
