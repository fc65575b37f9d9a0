"""The property suite under HypoFuzz, run as HypoFuzz's docs say: `hypothesis fuzz -- PYTEST_ARGS`.

Needs the `hypofuzz` extra, so it runs in CI's .venv-lowest (.ci/lowest.sh, Hypothesis 6.140.2)
and .venv-extras (.ci/extras-newest.sh, the newest Hypothesis: HypoFuzz 25.11.1 works there only
through fuzz/hypothesis_compat.alias_slice_comments) and skips where HypoFuzz is absent.
Two runs, both bounded:
- on a mutant (null ids accepted) HypoFuzz finds the bug and its hub stops by itself, saying so;
- on the correct reference server it is still fuzzing after the hub's first 60 s check. Before
  fuzz/hypothesis_compat.publish_hypofuzz_targets_early it exited there, claiming "Found a
  failing input for every test!" because our process-spawning examples do not finish HypoFuzz's
  first 100-example chunk in 60 s.
`-p no:locust`: Locust's own pytest plugin imports Locust, whose gevent monkey-patching breaks
the multiprocessing manager HypoFuzz's hub uses.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fuzz_support import reference_stdio

pytestmark = pytest.mark.slow
pytest.importorskip("hypofuzz", reason="HypoFuzz is not installed (pip install 'mcp-tempest[hypofuzz]')")
HYPOTHESIS_CLI = Path(sys.executable).with_name("hypothesis")
DONE = "Found a failing input for every test!"


def _start(tmp_path: Path, target: str, test: str, *, ci: bool) -> subprocess.Popen[str]:
    """`ci`: with CI=true Hypothesis loads its derandomized "ci" profile, which HypoFuzz refuses to
    fuzz unless our plugin swaps it (fuzz/hypothesis_compat.fuzzable_profile_under_hypofuzz)."""
    if not HYPOTHESIS_CLI.exists() and not shutil.which("hypothesis"):
        pytest.skip("no `hypothesis` command beside this interpreter")
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS")}
    env.update({"MCP_TEMPEST_TARGET": target, **({"CI": "true"} if ci else {})})
    return subprocess.Popen(
        [str(HYPOTHESIS_CLI), "fuzz", "-n", "1", "--no-dashboard", "--",
         "--pyargs", "mcp_tempest.fuzz.properties.suite", "-k", test, "-p", "no:locust", "-p", "no:cacheprovider"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)


def _stop(proc: subprocess.Popen[str]) -> str:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    out, _ = proc.communicate(timeout=20)
    return out


REPLAY_ONLY = """from hypothesis import Phase, settings
settings.register_profile("replay-only", phases=(Phase.explicit, Phase.reuse))
"""


def _replay_only(cwd: Path, target: str) -> subprocess.CompletedProcess[str]:
    """Plain pytest on test_ids that only replays the example database (no generation): it fails
    only on a failure someone saved there for this test."""
    (cwd / "replay_only.py").write_text(REPLAY_ONLY)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS")}
    env.update({"MCP_TEMPEST_TARGET": target, "PYTHONPATH": str(cwd)})
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:locust", "-p", "replay_only",
         "--hypothesis-profile", "replay-only", "--pyargs", "mcp_tempest.fuzz.properties.suite", "-k", "test_ids"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_hypofuzz_finds_a_mutants_bug_stops_and_pytest_replays_it(tmp_path: Path) -> None:
    """Under CI=true (Hypothesis' derandomized ci profile): HypoFuzz fuzzes anyway, finds the bug,
    stops by itself, and the next plain pytest run from that directory fails on the saved failure
    without generating anything (the same run in a fresh directory passes)."""
    mutant = reference_stdio(tmp_path / "db.sqlite3", "null-id-accepted")
    proc = _start(tmp_path, mutant, "test_ids", ci=True)
    try:
        proc.wait(timeout=240)
    except subprocess.TimeoutExpired:
        pass
    finished = proc.poll() is not None
    out = _stop(proc)
    assert finished, f"HypoFuzz did not stop after finding the bug:\n{out[-3000:]}"
    assert "using 1 process to fuzz 1 test" in out and DONE in out, out[-3000:]
    replayed = _replay_only(tmp_path, mutant)
    assert replayed.returncode == 1 and "id-null" in replayed.stdout, replayed.stdout[-3000:] + replayed.stderr[-2000:]
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    control = _replay_only(fresh, mutant)
    assert control.returncode == 0, control.stdout[-3000:] + control.stderr[-2000:]


def test_hypofuzz_keeps_fuzzing_a_correct_server_past_the_hubs_first_check(tmp_path: Path) -> None:
    proc = _start(tmp_path, reference_stdio(tmp_path / "db.sqlite3"), "test_handoff", ci=False)
    deadline = time.monotonic() + 80  # the hub's first check comes 60 s after it starts
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(1)
    still_running = proc.poll() is None
    out = _stop(proc)
    assert "using 1 process to fuzz 1 test" in out, out[-3000:]
    assert still_running and DONE not in out, f"the hub gave up on a correct server:\n{out[-3000:]}"
