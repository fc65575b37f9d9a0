"""The properties as ordinary pytest tests (`--pyargs mcp_tempest.fuzz.properties.suite --mcp-target T`).

Runs pytest in a subprocess the way a user would, with a tiny Hypothesis profile: the suite
passes on the reference server and fails, naming the rule and showing the transcript, on a
mutant.
"""

from __future__ import annotations

import os
import subprocess
from importlib.metadata import entry_points
from pathlib import Path

from fuzz_support import PYTHON, reference_stdio, stray_error_target

PROFILE = '''from hypothesis import settings
settings.register_profile("tiny", max_examples=6, database=None)
'''


def _plugin_args() -> list[str]:
    """Load the plugin explicitly unless the installed distribution registers it (pytest11)."""
    registered = any(ep.value.startswith("mcp_tempest.fuzz.pytest_plugin") for ep in entry_points(group="pytest11"))
    return [] if registered else ["-p", "mcp_tempest.fuzz.pytest_plugin"]


def _run_suite(tmp_path: Path, target: str, select: str, *extra: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "tiny_profile.py").write_text(PROFILE)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.run(
        [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tiny_profile", *_plugin_args(),
         "--hypothesis-profile", "tiny", "--hypothesis-seed", "3", "--pyargs", "mcp_tempest.fuzz.properties.suite",
         "-k", select, "--mcp-target", target, *extra],
        capture_output=True, text=True, timeout=240, cwd=tmp_path, env=env,
    )


def test_fail_on_makes_a_heuristic_an_observation_or_a_failure(tmp_path: Path) -> None:
    """A server that follows every result with a stray id-less error breaks a HEURISTIC (RPC-07)
    only. Under the default --mcp-fail-on should it is a warning and the test passes; under
    heuristic it fails."""
    target = stray_error_target(tmp_path)
    proc = _run_suite(tmp_path, target, "valid")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "McpObservation: HEURISTIC RPC-07" in proc.stdout
    proc = _run_suite(tmp_path, target, "valid", "--mcp-fail-on", "heuristic")
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "HEURISTIC RPC-07" in proc.stdout and "transcript:" in proc.stdout


def test_suite_passes_on_the_reference(tmp_path: Path) -> None:
    proc = _run_suite(tmp_path, reference_stdio(tmp_path / "db.sqlite3"), "ids or framing or history")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    # each property's probes test and its Hypothesis test (history has no named probe: skipped)
    assert "5 passed, 1 skipped" in proc.stdout, proc.stdout[-3000:]


def test_the_probes_tests_find_what_random_cases_seldom_draw(tmp_path: Path) -> None:
    """The era-lock mutant shows only to one probe (meta-not-object, then a valid request on the
    same process): the Hypothesis test alone passed it in one run of two; the probes test fails on
    it whatever the seed, naming the probe."""
    for seed in ("1", "2"):
        proc = _run_suite(tmp_path, reference_stdio(tmp_path / "db.sqlite3", "era-lock"), "framing_probes",
                          "--hypothesis-seed", seed)
        assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
        assert "SL-2" in proc.stdout and "probe meta-not-object" in proc.stdout, proc.stdout[-3000:]


def test_suite_fails_on_a_mutant_with_rule_and_transcript(tmp_path: Path) -> None:
    proc = _run_suite(tmp_path, reference_stdio(tmp_path / "db.sqlite3", "null-id-accepted"), "ids")
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "RPC-01" in proc.stdout and "which breaks RPC-04" in proc.stdout
    assert "transcript:" in proc.stdout and "-> send" in proc.stdout


def test_a_gevent_patched_pytest_process_is_refused_not_judged(tmp_path: Path) -> None:
    """Locust 2.40.0's pytest plugin gevent-patched every pytest process, and a correct server then
    read as dead (false RPC-01 findings). Whatever patches the process, the suite refuses to start
    servers there, with a line that says why, instead of judging them."""
    (tmp_path / "gevent_first.py").write_text("from gevent import monkey\nmonkey.patch_all()\n")
    proc = _run_suite(tmp_path, reference_stdio(tmp_path / "db.sqlite3"), "ids", "-p", "gevent_first")
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert "gevent-monkey-patched" in proc.stdout + proc.stderr, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "RPC-01" not in proc.stdout, proc.stdout[-3000:]
