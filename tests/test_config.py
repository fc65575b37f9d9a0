"""Options from MCP_TEMPEST_* and [tool.mcp-tempest]: precedence, errors, and a real campaign.

Precedence (README "Configuration"): command line > MCP_TEMPEST_<COMMAND>_<KEY> > MCP_TEMPEST_<KEY>
> [tool.mcp-tempest.<command>] > [tool.mcp-tempest] > default.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcp_tempest.fuzz.campaign_command import build_parser
from mcp_tempest.fuzz.config import ConfigError, apply_config
from tests.fuzz_support import CLI

PYPROJECT = """
[project]
name = "users-server"

[tool.mcp-tempest]
seed = 5
target = "stdio:python server.py"
max-examples = 300
out = "from-shared-table"

[tool.mcp-tempest.fuzz]
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
    args = _parsed([], {"MCP_TEMPEST_SEED": "6", "MCP_TEMPEST_OUT": "env"}, tmp_path)
    assert (args.seed, args.out) == (6, "env")
    args = _parsed([], {"MCP_TEMPEST_SEED": "6", "MCP_TEMPEST_FUZZ_SEED": "7"}, tmp_path)
    assert args.seed == 7
    args = _parsed(["--seed", "8", "--out=cli"], {"MCP_TEMPEST_FUZZ_SEED": "7"}, tmp_path)
    assert (args.seed, args.out) == (8, "cli")


def test_a_budget_set_higher_up_replaces_the_other_kind_of_budget_below(tmp_path: Path):
    args = _parsed(["--duration", "60"], {}, tmp_path)
    assert (args.duration, args.max_examples) == (60.0, None)
    args = _parsed([], {"MCP_TEMPEST_DURATION": "900"}, tmp_path)
    assert (args.duration, args.max_examples) == (900.0, None)
    args = _parsed(["--database", "db"], {}, tmp_path)
    assert (args.database, args.no_database) == ("db", False)


def test_no_configuration_changes_nothing(tmp_path: Path):
    # the variables the harness hands its own children, and another command's own ones, are not ours
    env = {"PATH": "/bin", "MCP_TEMPEST_OWNER": "1.2", "MCP_TEMPEST_NO_FORK_SERVER": "1",
           "MCP_TEMPEST_LOAD_USERS": "3", "MCP_TEMPEST_STATE_KEY": "k", "MCP_TEMPEST_COVERAGE_RC": "rc",
           "MCP_TEMPEST_COVERAGE_CONTEXT": "c"}
    assert _apply(["--seed", "1"], env, tmp_path, "[project]\n") == ["--seed", "1"]


@pytest.mark.parametrize(("env", "pyproject", "message"), [
    ({"MCP_TEMPEST_MAXEXAMPLES": "5"}, "",
     r"^\$MCP_TEMPEST_MAXEXAMPLES: .*did you mean \$MCP_TEMPEST_MAX_EXAMPLES\?$"),
    ({"MCP_TEMPEST_FUZZ_SEDE": "5"}, "", r"^\$MCP_TEMPEST_FUZZ_SEDE: .*did you mean \$MCP_TEMPEST_FUZZ_SEED\?$"),
    ({"MCP_TEMPEST_TEST_THING": "x"}, "", r"^\$MCP_TEMPEST_TEST_THING: no mcp-tempest command has an option"),
    ({}, "[tool.mcp-tempest]\nmax-exampels = 3\n",
     r"pyproject.toml \[tool.mcp-tempest\] max-exampels: .*did you mean max-examples\?$"),
    ({}, '[tool.mcp-tempest.fuzz]\nno-database = "maybe"\n',
     r"pyproject.toml \[tool.mcp-tempest.fuzz\] no-database: no-database must be true or false"),
    ({"MCP_TEMPEST_NO_DATABASE": "yes"}, "", r"^\$MCP_TEMPEST_NO_DATABASE: no-database must be true or false"),
    ({"MCP_TEMPEST_MAX_EXAMPLES": "lots"}, "", r"^\$MCP_TEMPEST_MAX_EXAMPLES: max-examples 'lots': not a valid"),
    ({}, '[tool.mcp-tempest]\nseed = "x"\n', r"pyproject.toml \[tool.mcp-tempest\] seed: seed 'x'"),
    ({"MCP_TEMPEST_FAIL_ON": "never"}, "", r"^\$MCP_TEMPEST_FAIL_ON: fail-on must be one of must, should"),
])
def test_unknown_keys_loose_booleans_and_wrong_types_are_errors_naming_their_source(
        tmp_path: Path, env: dict[str, str], pyproject: str, message: str):
    with pytest.raises(ConfigError, match=message):
        _apply([], env, tmp_path, pyproject or "[project]\n")


def test_strict_booleans_still_take_true_and_false(tmp_path: Path):
    assert _parsed([], {"MCP_TEMPEST_NO_DATABASE": "true"}, tmp_path, "[project]\n").no_database is True
    assert _parsed([], {"MCP_TEMPEST_NO_DATABASE": "False"}, tmp_path, "[project]\n").no_database is False


def test_a_typoed_budget_variable_stops_the_campaign_before_it_runs(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    proc = _run(tmp_path, "fuzz", env={"MCP_TEMPEST_MAXEXAMPLES": "5"})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and proc.stdout == ""
    assert proc.stderr.strip().count("\n") == 0 and "did you mean $MCP_TEMPEST_MAX_EXAMPLES?" in proc.stderr


def test_shared_keys_serve_only_commands_that_have_them_but_own_typos_are_errors(tmp_path: Path):
    shared = '[tool.mcp-tempest]\nusers = 10\n'  # a load option: fuzz ignores it
    assert _apply([], {}, tmp_path, shared) == []
    with pytest.raises(ConfigError, match="MCP_TEMPEST_FUZZ_MAX_EXAMPLE: mcp-tempest fuzz has no option --max-example"):
        _apply([], {"MCP_TEMPEST_FUZZ_MAX_EXAMPLE": "3"}, tmp_path)
    with pytest.raises(ConfigError, match=r"\[tool.mcp-tempest.fuzz\].*--sede"):
        _apply([], {}, tmp_path, "[tool.mcp-tempest.fuzz]\nsede = 1\n")
    with pytest.raises(ConfigError, match="cannot read"):
        _apply([], {}, tmp_path, "[tool.mcp-tempest\n")


def _run(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    clean = {k: v for k, v in os.environ.items() if not k.startswith("MCP_TEMPEST_")}
    return subprocess.run([*CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**clean, **(env or {})})


def test_a_campaign_takes_its_options_from_pyproject_and_the_environment(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.mcp-tempest]\nseed = 41\nmax-examples = 4\nout = "tempest-report"\nno-database = true\n'
        '[tool.mcp-tempest.fuzz]\nproperties = "ids"\ntransports = "stdio"\n')
    proc = _run(tmp_path, "fuzz", "--progress", "never", env={"MCP_TEMPEST_SEED": "42"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "seed 42, output in tempest-report" in proc.stdout
    assert (tmp_path / "tempest-report" / "findings.json").is_file()
    assert proc.stdout.splitlines()[-1].startswith("fuzz: ") and " 1 property, 0 findings: PASS" in proc.stdout


def test_bad_configuration_is_one_line_and_exit_2(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.mcp-tempest.fuzz]\nbudget = 3\n")
    proc = _run(tmp_path, "fuzz")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "has no option --budget" in proc.stderr


def test_version_on_every_command(tmp_path: Path):
    from mcp_tempest.fuzz.cli import COMMANDS

    for command in ["", *COMMANDS]:
        proc = _run(tmp_path, *([command] if command else []), "--version")
        assert proc.returncode == 0, (command, proc.stderr)
        assert proc.stdout.startswith("mcp-tempest ") and "Hypothesis" in proc.stdout, command


# --- every command with options takes them the same way (issue 32) ---


def _apply_to(command: str, argv: list[str], env: dict[str, str], tmp_path: Path, pyproject: str) -> list[str]:
    import importlib

    from mcp_tempest.fuzz.config import CONFIGURABLE

    (tmp_path / "pyproject.toml").write_text(pyproject)
    module, builder = CONFIGURABLE[command]
    return apply_config(command, argv, getattr(importlib.import_module(module), builder)(), environ=env, cwd=tmp_path)


@pytest.mark.parametrize(("config", "env", "argv", "status"), [
    ("[tool.mcp-tempest.catalogue]\nmax-tokens = 5\n", {}, [], 1),
    ("[project]\n", {"MCP_TEMPEST_MAX_TOKENS": "5"}, [], 1),
    ("[tool.mcp-tempest.catalogue]\nmax-tokens = 5\n", {}, ["--max-tokens", "100000"], 0),
])
def test_a_catalogue_budget_from_config_or_environment_gates_the_run(
        tmp_path: Path, config: str, env: dict[str, str], argv: list[str], status: int):
    (tmp_path / "pyproject.toml").write_text(config)
    proc = _run(tmp_path, "catalogue", "--no-drift", "--out", str(tmp_path / "out"), *argv, env=env)
    assert proc.returncode == status, proc.stdout + proc.stderr
    assert ("--max-tokens 5" in proc.stderr) == (status == 1)


def test_probe_takes_its_target_from_the_environment(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    proc = _run(tmp_path, "probe", env={"MCP_TEMPEST_TARGET": "stdio:/nonexistent/server"})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "/nonexistent/server" in proc.stderr
    assert proc.stdout.startswith("probe: no era: ERROR (unusable target: ") and "/nonexistent/server" in proc.stdout


def test_a_table_for_no_command_is_an_error_with_the_nearest_command(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.mcp-tempest.fuz]\nseed = 1\n")
    proc = _run(tmp_path, "probe", "--target", "stdio:/nonexistent/server")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0
    assert "[tool.mcp-tempest.fuz]: no mcp-tempest command is called fuz; did you mean fuzz?" in proc.stderr
    tool_args = '[tool.mcp-tempest.tool-args.echo]\ntext = ["hi"]\n'  # not a command: fuzz/tool_args.py reads it
    assert _apply([], {}, tmp_path, tool_args) == []
    with pytest.raises(ConfigError, match=r"auth-server\]: .*command line only"):
        _apply([], {}, tmp_path, "[tool.mcp-tempest.auth-server]\nport = 1\n")


def test_each_command_checks_its_own_table_and_takes_shared_keys_it_has(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"\[tool.mcp-tempest.catalogue\] max-tokenz: .*did you mean max-tokens\?$"):
        _apply_to("catalogue", [], {}, tmp_path, "[tool.mcp-tempest.catalogue]\nmax-tokenz = 5\n")
    shared = '[tool.mcp-tempest]\ntarget = "stdio:python s.py"\nseed = 3\ntimeout = 2\n'
    assert _apply_to("probe", [], {}, tmp_path, shared) == ["--target", "stdio:python s.py", "--timeout", "2"]
    assert _apply_to("frames", [], {}, tmp_path, shared) == ["--seed", "3"]
    assert _apply_to("serve", [], {"MCP_TEMPEST_SERVE_PORT": "8123"}, tmp_path, shared) == ["--port", "8123"]
    # a replay runs what its file recorded: a configured target does not redirect it
    assert _apply_to("replay", ["r.json"], {}, tmp_path, shared) == ["--timeout", "2", "r.json"]
    with pytest.raises(ConfigError, match="--list of mcp-tempest frames is given on the command line only"):
        _apply_to("frames", [], {}, tmp_path, "[tool.mcp-tempest.frames]\nlist = true\n")
    # fuzz-client's own variables are not fuzz's, though one name starts with the other
    assert _apply([], {"MCP_TEMPEST_FUZZ_CLIENT_CLIENT": "x"}, tmp_path, "[project]\n") == []
