"""The load run on two mutants of the reference server.

- `--bug slow-leak` keeps every request's bytes: the sampled server memory grows past the
  threshold and that alone fails the run (MRTR-17, heuristic).
- `--bug missing-result-type` drops `resultType` (RT-01): the oracle, run on every response,
  reports it as a violation, which fails the run.
"""

from __future__ import annotations

from pathlib import Path

from load_support import last_line, run_load


def test_slow_leak_mutant_memory_growth_is_reported(tmp_path: Path) -> None:
    proc, summary = run_load(["--bug", "slow-leak", "--users", "6", "--run-time", "4s", "--check-every", "0",
                              "--memory-threshold-mb", "6"], tmp_path)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr
    memory = summary["memory"]
    assert memory["exceeded"] and memory["growth_mb"] > 6 and memory["rule"] == "MRTR-17"
    assert memory["bytes_per_request"] > 4096  # the mutant keeps >= 8 KiB per request
    assert summary["failures"] == 0  # the requests themselves were answered fine
    assert summary["verdict"]["reasons"] == [f"server memory grew {memory['growth_mb']:.1f} MB (threshold 6 MB)"]
    assert "GROWTH" in proc.stdout
    assert last_line(proc.stdout)["why"] == summary["verdict"]["reasons"][0]


def test_missing_result_type_mutant_is_caught_by_the_oracle(tmp_path: Path) -> None:
    proc, summary = run_load(["--bug", "missing-result-type", "--users", "3", "--run-time", "3s",
                              "--check-every", "1", "--mix", "tools/list=1,tools/call=1"], tmp_path)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr
    assert summary["violations"] > 0
    assert "RT-01" in summary["violations_by_rule"], summary["violations_by_rule"]
    assert "violation RT-01" in summary["failures_by_kind"]
    assert "RT-01" in proc.stdout
