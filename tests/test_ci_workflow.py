"""The README's GitHub Actions workflow parses, and every mcp-tempest command in it exists.

Each `run:` line is split like a shell would; every `mcp-tempest SUBCOMMAND --option` must be a
subcommand of the installed console script and an option its `--help` lists, and every
MCP_TEMPEST_* variable the workflow sets must name an option of a configurable command.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="PyYAML (the test extra) is not installed")
README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def _workflow() -> dict:
    block = README.split("<!-- ci-workflow:begin -->", 1)[1].split("<!-- ci-workflow:end -->", 1)[0]
    text = block.split("```yaml", 1)[1].split("```", 1)[0]
    return yaml.safe_load(text)


@cache
def _help(command: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "mcp_tempest.fuzz.cli", command, "--help"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, f"mcp-tempest {command} --help: {proc.stderr}"
    return proc.stdout


def _invocations(workflow: dict) -> list[list[str]]:
    found = []
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            for line in str(step.get("run", "")).splitlines():
                line = re.sub(r"\$\{\{[^}]*\}\}", "1", line)  # GitHub expressions: a value
                words = shlex.split(line)
                for i, word in enumerate(words):
                    if word == "mcp-tempest" and (i == 0 or words[i - 1] in ("&&", "||", ";", "|")):
                        found.append(words[i + 1:])
    return found


def test_the_workflow_is_valid_yaml_with_a_nightly_fuzz_and_a_release_comparison():
    wf = _workflow()
    assert set(wf["jobs"]) == {"nightly-fuzz", "release-comparison"}
    triggers = wf[True] if True in wf else wf["on"]  # YAML 1.1 reads a bare `on:` as True
    assert "schedule" in triggers and "release" in triggers
    steps = wf["jobs"]["nightly-fuzz"]["steps"]
    assert any(s.get("uses", "").startswith("actions/cache@") and s["with"]["path"] == ".tempest-db" for s in steps)


def test_every_command_and_option_in_the_workflow_exists():
    from mcp_tempest.fuzz.cli import COMMANDS

    calls = _invocations(_workflow())
    assert {c[0] for c in calls} == {"fuzz", "load", "catalogue"}
    compared = [c for c in calls if "--compare-target" in c or "--compare" in c]
    assert {c[0] for c in compared} == {"fuzz", "load", "catalogue"}  # the release job compares all three
    for call in calls:
        assert call[0] in COMMANDS, call
        listed = set(re.findall(r"--[a-z][a-z-]*", _help(call[0])))
        for word in call[1:]:
            if word.startswith("--"):
                assert word.split("=")[0] in listed, f"mcp-tempest {call[0]} has no option {word}"


def test_the_workflows_variables_name_real_options():
    from mcp_tempest.fuzz.cli import CONFIGURABLE

    wf = _workflow()
    for job in wf["jobs"].values():
        for name in (job.get("env") or {}):
            if name.startswith("MCP_TEMPEST_"):
                option = "--" + name.removeprefix("MCP_TEMPEST_").lower().replace("_", "-")
                assert any(option in _help(c) for c in CONFIGURABLE), f"{name}: no command has {option}"
