"""The mrtr property plays the malformed catalogue's retry-level rows themselves (issue 10, item 6).

Each row at level "retry" (`state-*`, `responses-*`, `retry-reuses-id`) is a scenario the mrtr
property sends in its coverage phase and draws at random, under the row's own name; the three
judged by the row's expectation (`ROW_JUDGED`) fire on a server that completes any retry
(tests/hostile/any_state.py) and stay silent on the reference server.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import orjson
from fuzz_support import PYTHON, reference_stdio, run_cli

from mcp_tempest.fuzz.properties.mrtr import PROBES, ROW_JUDGED
from mcp_tempest.strategies import malformed as catalogue


def test_every_retry_level_row_is_a_scenario_of_the_mrtr_property_under_its_own_name() -> None:
    rows = {n: catalogue.get_mutation(n).rule for n in catalogue.mutation_names(level="retry")}
    played = dict(PROBES.values())
    assert len(rows) == 8
    assert {n: played.get(n) for n in rows} == rows


ANY_STATE = Path(__file__).parent / "hostile" / "any_state.py"


def _campaign(tmp_path: Path, name: str, target: str) -> tuple[int, list[dict]]:
    out = tmp_path / name
    proc = run_cli("fuzz", "--target", target, "--properties", "mrtr", "--max-examples", "40", "--seed", "3",
                   "--no-database", "--out", str(out), "--progress", "never")
    return proc.returncode, orjson.loads((out / "findings.json").read_bytes())["findings"]


def test_the_row_judged_scenarios_fire_on_a_server_that_ignores_the_state_and_stay_silent_on_ours(
        tmp_path: Path) -> None:
    code, findings = _campaign(tmp_path, "reference", reference_stdio(tmp_path / "s.sqlite3"))
    assert (code, findings) == (0, [])
    code, findings = _campaign(tmp_path, "any-state", "stdio:" + shlex.join([PYTHON, str(ANY_STATE)]))
    assert code == 1
    by_probe = {f.get("mutation"): (f["rule"], f["strength"]) for f in findings}
    assert by_probe["state-forged"] == ("MRTR-13", "HEURISTIC")  # UNSPEC reaction: an observation
    assert by_probe["responses-wrong-key"] == ("MRTR-16", "SHOULD")
    assert {PROBES[s][0] for s in ROW_JUDGED} == {"state-forged", "state-missing", "responses-wrong-key"}
