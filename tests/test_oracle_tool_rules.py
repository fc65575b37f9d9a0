"""TOOL-03, TOOL-06 and TOOL-12 (fuzz/oracle/tool_rules.py): a firing and a silence test each.

Against real servers through the command a user runs: each rule fires on the mutant built to
break it (`serve --bug ...`) and stays silent on the reference server, which lists its tools in
one order, names them by the rule and sends structuredContent's JSON as text.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from fuzz_support import reference_stdio, run_cli

CASES = [("tools-list-reordered", "TOOL-03", "lists"), ("tool-name-invalid", "TOOL-06", "lists"),
         ("structured-without-text", "TOOL-12", "lists")]


def _rules(tmp_path: Path, prop: str, *bugs: str) -> tuple[int, set[str]]:
    out = tmp_path / "out"
    proc = run_cli("fuzz", "--target", reference_stdio(tmp_path / "s.sqlite3", *bugs), "--properties", prop,
                   "--max-examples", "30", "--seed", "8", "--shrink-time", "5", "--out", str(out),
                   "--progress", "never")
    return proc.returncode, {f["rule"] for f in orjson.loads((out / "findings.json").read_bytes())["findings"]}


@pytest.mark.parametrize(("bug", "rule", "prop"), CASES)
def test_tool_rule_fires_on_its_mutant(bug: str, rule: str, prop: str, tmp_path: Path) -> None:
    status, rules = _rules(tmp_path, prop, bug)
    assert status == 1 and rule in rules, rules


def test_tool_rules_are_silent_on_the_reference_server(tmp_path: Path) -> None:
    status, rules = _rules(tmp_path, "valid,lists")
    assert status == 0 and rules == set()
