"""SL-11 (DIGEST 7.4): GET and DELETE on the endpoint SHOULD get 405; a firing and a silence test.

Both against real servers through the command a user runs: the reference server answers 405
(silence), the `http-get-200` mutant answers 200 (firing), and the coverage phase sends both
probes in every HTTP campaign, so no `--mutations` is needed to reach them.
"""

from __future__ import annotations

from pathlib import Path

import orjson
from fuzz_support import reference_http, run_cli


def _campaign(tmp_path: Path, *bugs: str) -> tuple[int, dict]:
    out = tmp_path / "out"
    proc = run_cli("fuzz", "--target", reference_http(tmp_path / "s.sqlite3", *bugs), "--properties", "framing",
                   "--max-examples", "25", "--seed", "6", "--out", str(out), "--progress", "never")
    return proc.returncode, orjson.loads((out / "findings.json").read_bytes())


def test_sl_11_fires_on_a_server_that_answers_get_and_delete(tmp_path: Path) -> None:
    status, index = _campaign(tmp_path, "http-get-200")
    assert status == 1
    found = {(f["rule"], f["strength"], f["mutation"]) for f in index["findings"]}
    assert found == {("SL-11", "SHOULD", "http-get"), ("SL-11", "SHOULD", "http-delete")}, found


def test_sl_11_is_silent_on_the_reference_server(tmp_path: Path) -> None:
    status, index = _campaign(tmp_path)
    assert status == 0 and index["findings"] == []
    tried = {(o["probe"]) for o in index["coverage"]["not_applied"]}
    assert not tried & {"http-get", "http-delete"}  # both were sent
