"""The rename: configs, environments and reproduction files from before it keep working for one
release, each old spelling with a one-line warning (targets/renamed.py is the one table)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mcp_tempest.targets import renamed

LEGACY = Path(__file__).parent / "legacy"
PY = sys.executable
OLD_PREFIX, OLD_TABLE = renamed.OLD_ENV_PREFIX, renamed.OLD_TABLE


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_TEMPEST_", OLD_PREFIX))}
    return subprocess.run([PY, "-m", "mcp_tempest.fuzz.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**clean, **(env or {})})


def _deprecations(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "is deprecated, use" in line]


def test_an_old_environment_variable_still_sets_its_option_with_one_warning(tmp_path: Path):
    """A CI job's MCP_GAUNTLET_MAX_EXAMPLES / _SEED still steer a real campaign."""
    proc = _cli("fuzz", "--properties", "valid", "--out", str(tmp_path / "o"), "--no-database", cwd=tmp_path,
                env={f"{OLD_PREFIX}MAX_EXAMPLES": "3", f"{OLD_PREFIX}FUZZ_SEED": "9"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "3 examples" in proc.stdout.splitlines()[-1]
    warnings = _deprecations(proc.stderr)
    assert sorted(w.split()[1] for w in warnings) == [f"{OLD_PREFIX}FUZZ_SEED", f"{OLD_PREFIX}MAX_EXAMPLES"]
    assert all(w.startswith("mcp-tempest: ") and "MCP_TEMPEST_" in w for w in warnings)


def test_a_new_variable_wins_over_its_old_spelling():
    env = {f"{OLD_PREFIX}SEED": "1", "MCP_TEMPEST_SEED": "2", f"{OLD_PREFIX}OUT": "x"}
    said: list[str] = []
    renamed._announced.clear()
    renamed.adopt_old_environment(env, said.append)
    assert env["MCP_TEMPEST_SEED"] == "2" and env["MCP_TEMPEST_OUT"] == "x"
    assert len(said) == 2
    renamed.adopt_old_environment(env, said.append)  # once per spelling and process, not per read
    assert len(said) == 2


def test_an_old_pyproject_table_still_configures_with_one_warning(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text(f'[tool.{OLD_TABLE}]\nmax-examples = 2\nseed = 5\n\n'
                                             f'[tool.{OLD_TABLE}.fuzz]\nproperties = "valid"\nno-database = true\n')
    proc = _cli("fuzz", "--out", str(tmp_path / "o"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "2 examples, 1 property" in proc.stdout.splitlines()[-1] and "seed 5," in proc.stdout
    assert len(_deprecations(proc.stderr)) == 1 and f"[tool.{OLD_TABLE}]" in proc.stderr
    # Both tables: the new one is read, the old one ignored.
    (tmp_path / "pyproject.toml").write_text(f'[tool.{OLD_TABLE}]\nmax-examples = 2\nseed = 5\n\n'
                                             '[tool.mcp-tempest]\nmax-examples = 1\nseed = 6\nproperties = "valid"\n'
                                             'no-database = true\n')
    proc = _cli("fuzz", "--out", str(tmp_path / "o2"), cwd=tmp_path)
    assert proc.returncode == 0 and "seed 6," in proc.stdout, proc.stdout
    assert not _deprecations(proc.stderr)


def test_a_reproduction_written_before_the_rename_still_replays(tmp_path: Path):
    """Recorded by the old layout (format mcp-gauntlet/repro-1, target `python -m targets.reference
    --bug null-id-accepted`): replayed from a folder where no `targets` package exists, the module
    path is read through the alias table and the recorded bug recurs (exit 1, still fails)."""
    repro = LEGACY / "RPC-01-776012ae.json"
    assert f"{OLD_TABLE}/repro-1" in repro.read_text() and "-m targets.reference" in repro.read_text()
    proc = _cli("replay", str(repro), cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "still fails" in proc.stdout and "Traceback" not in proc.stderr
    # On the reference server without the bug the same file no longer fails: the replay really ran.
    fixed = _cli("replay", str(repro), "--target", f"stdio:{PY} -m mcp_tempest.targets.reference", cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr


def test_old_module_paths_move_and_new_ones_stay():
    assert renamed.module_command("stdio:python -m targets.reference --bug x") == \
        "stdio:python -m mcp_tempest.targets.reference --bug x"
    assert renamed.module_command("python -m load --users 2") == "python -m mcp_tempest.load --users 2"
    for unchanged in ("stdio:python -m mcp_tempest.targets.reference", "stdio:python my_targets.reference.py",
                      "stdio:python -m targetsx", "python -m fuzzy.cli", "stdio:node x.js --mode=-m"):
        assert renamed.module_command(unchanged) == unchanged
    doc = {"format": "mcp-tempest/repro-1", "target": "stdio:python -m targets.reference"}
    assert renamed.upgrade_document(doc) is doc  # today's files are taken as written
