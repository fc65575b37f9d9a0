"""Options from MCP_GAUNTLET_* and [tool.mcp-gauntlet]: precedence, errors, and a real campaign.

Precedence (README "Configuration"): command line > MCP_GAUNTLET_<COMMAND>_<KEY> > MCP_GAUNTLET_<KEY>
> [tool.mcp-gauntlet.<command>] > [tool.mcp-gauntlet] > default.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fuzz.campaign_command import build_parser
from fuzz.config import ConfigError, apply_config
from tests.fuzz_support import CLI

PYPROJECT = """
[project]
name = "users-server"

[tool.mcp-gauntlet]
seed = 5
target = "stdio:python server.py"
max-examples = 300
out = "from-shared-table"

[tool.mcp-gauntlet.fuzz]
out = "from-fuzz-table"
no-database = true
"""


def _apply(argv: list[str], env: dict[str, str], tmp_path: Path, pyproject: str = PYPROJECT) -> list[str]:
    (tmp_path / "pyproject.toml").write_text(pyproject)
    return apply_config("fuzz", argv, build_parser(), environ=env, cwd=tmp_path)


def _parsed(argv: list[str], env: dict[str, str], tmp_path: Path, pyproject: str = PYPROJECT):
    return build_parser().parse_args(_apply(argv, env, tmp_path, pyproject))


def test_each_layer_wins_over_the_ones_below(tmp_path: Path):
    args = _parsed([], {}, tmp_path)
    assert (args.seed, args.target, args.max_examples, args.out, args.no_database) == (
        5, "stdio:python server.py", 300, "from-fuzz-table", True)
    args = _parsed([], {"MCP_GAUNTLET_SEED": "6", "MCP_GAUNTLET_OUT": "env"}, tmp_path)
    assert (args.seed, args.out) == (6, "env")
    args = _parsed([], {"MCP_GAUNTLET_SEED": "6", "MCP_GAUNTLET_FUZZ_SEED": "7"}, tmp_path)
    assert args.seed == 7
    args = _parsed(["--seed", "8", "--out=cli"], {"MCP_GAUNTLET_FUZZ_SEED": "7"}, tmp_path)
    assert (args.seed, args.out) == (8, "cli")


def test_a_budget_set_higher_up_replaces_the_other_kind_of_budget_below(tmp_path: Path):
    args = _parsed(["--duration", "60"], {}, tmp_path)
    assert (args.duration, args.max_examples) == (60.0, None)
    args = _parsed([], {"MCP_GAUNTLET_DURATION": "900"}, tmp_path)
    assert (args.duration, args.max_examples) == (900.0, None)
    args = _parsed(["--database", "db"], {}, tmp_path)
    assert (args.database, args.no_database) == ("db", False)


def test_no_configuration_changes_nothing(tmp_path: Path):
    assert _apply(["--seed", "1"], {"PATH": "/bin", "MCP_GAUNTLET_TEST_THING": "x"}, tmp_path, "[project]\n") == [
        "--seed", "1"]


def test_shared_keys_serve_only_commands_that_have_them_but_own_typos_are_errors(tmp_path: Path):
    shared = '[tool.mcp-gauntlet]\nusers = 10\n'  # a load option: fuzz ignores it
    assert _apply([], {}, tmp_path, shared) == []
    with pytest.raises(ConfigError, match="MCP_GAUNTLET_FUZZ_MAX_EXAMPLE: mcp-gauntlet fuzz has no option --max-example"):
        _apply([], {"MCP_GAUNTLET_FUZZ_MAX_EXAMPLE": "3"}, tmp_path)
    with pytest.raises(ConfigError, match=r"\[tool.mcp-gauntlet.fuzz\].*--sede"):
        _apply([], {}, tmp_path, "[tool.mcp-gauntlet.fuzz]\nsede = 1\n")
    with pytest.raises(ConfigError, match="cannot read"):
        _apply([], {}, tmp_path, "[tool.mcp-gauntlet\n")


def _run(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    clean = {k: v for k, v in os.environ.items() if not k.startswith("MCP_GAUNTLET_")}
    return subprocess.run([*CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**clean, **(env or {})})


def test_a_campaign_takes_its_options_from_pyproject_and_the_environment(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.mcp-gauntlet]\nseed = 41\nmax-examples = 4\nout = "gauntlet-report"\nno-database = true\n'
        '[tool.mcp-gauntlet.fuzz]\nproperties = "ids"\ntransports = "stdio"\n')
    proc = _run(tmp_path, "fuzz", "--progress", "never", env={"MCP_GAUNTLET_SEED": "42"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "seed 42, output in gauntlet-report" in proc.stdout
    assert (tmp_path / "gauntlet-report" / "findings.json").is_file()
    assert proc.stdout.splitlines()[-1].startswith("fuzz: ") and " 1 properties, 0 findings" in proc.stdout


def test_bad_configuration_is_one_line_and_exit_2(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.mcp-gauntlet.fuzz]\nbudget = 3\n")
    proc = _run(tmp_path, "fuzz")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "has no option --budget" in proc.stderr


def test_version_on_every_command(tmp_path: Path):
    from fuzz.cli import COMMANDS

    for command in ["", *COMMANDS]:
        proc = _run(tmp_path, *([command] if command else []), "--version")
        assert proc.returncode == 0, (command, proc.stderr)
        assert proc.stdout.startswith("mcp-gauntlet ") and "Hypothesis" in proc.stdout, command
