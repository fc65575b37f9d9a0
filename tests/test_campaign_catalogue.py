"""What a fuzz campaign's own reading of the catalogue (the era probe, before any case) files:
a tools/list whose cursor loops is a finding of the campaign, on disk before the first case,
and its repro replays by reading the catalogue again."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from fuzz_support import run_cli

HOSTILE = Path(__file__).parent / "hostile" / "hostile_list.py"


def _target(*options: str) -> str:
    return "stdio:" + shlex.join([sys.executable, str(HOSTILE), "--tools", "4", "--page", "2", *options])


def _loops(out: Path) -> list[dict[str, object]]:
    findings = json.loads((out / "findings.json").read_text())["findings"]
    return [f for f in findings if "pagination loops" in str(f["title"])]


def test_a_looping_cursor_is_a_campaign_finding_that_replays(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_cli("fuzz", "--target", _target("--cursor", "repeat"), "--max-examples", "10", "--seed", "1",
                   "--out", str(out), "--progress", "never", "--no-coverage")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    loops = _loops(out)
    assert [f["rule"] for f in loops] == ["TOOL-02"], loops
    assert "cut short" in proc.stdout and "lower bound" in proc.stdout
    repro = next((out / "repro").glob(f"{loops[0]['id']}*.json"))
    replay = run_cli("replay", str(repro))
    assert replay.returncode == 1 and "still fails" in replay.stdout, replay.stdout + replay.stderr


def test_a_list_that_ends_is_no_such_finding(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_cli("fuzz", "--target", _target(), "--max-examples", "10", "--seed", "1",
                   "--out", str(out), "--progress", "never", "--no-coverage")
    assert "Traceback" not in proc.stderr
    assert _loops(out) == [] and "cut short" not in proc.stdout
