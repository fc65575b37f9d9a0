"""Distributed load: a Locust master and two workers on loopback, merged exactly.

This is the README's command for runs larger than one machine, run for real: `locust --master`
plus two `locust --worker` processes on load/users.py against a reference server. Every worker
also writes its raw samples (`--mcp-raw-samples`), so the test can recompute each percentile
from the raw data and demand that the master's summary.json matches it exactly: no sample lost,
none counted twice, no rounding.
"""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from mcp_tempest.targets.spawn_pool import SpawnPool, free_ports
from mcp_tempest.targets.target_spec import parse_target

USERS = Path(__file__).resolve().parent.parent / "load" / "users.py"


def nearest_rank_ms(samples_us: list[int], percent: float) -> float:
    ordered = sorted(samples_us)
    return ordered[math.ceil(len(ordered) * percent / 100.0 - 1e-9) - 1] / 1000.0


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory):
    db = tmp_path_factory.mktemp("ref") / "db.sqlite3"
    spec = parse_target(f"http+spawn:{sys.executable} -m mcp_tempest.targets.reference --transport http --port {{port}} --db {db}")
    with SpawnPool(spec, 1) as pool:
        yield pool.urls[0]


def test_master_and_two_workers_merge_exactly(reference: str, tmp_path: Path) -> None:
    port = free_ports(1)[0]
    raw = tmp_path / "raw"
    locust = [sys.executable, "-m", "locust", "-f", str(USERS)]
    master = subprocess.Popen(
        [*locust, "--master", "--headless", "--expect-workers", "2", "--expect-workers-max-wait", "30",
         "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port), "-u", "6", "-r", "6", "-t", "3s",
         "--host", reference, "--mcp-summary", str(tmp_path / "summary.json"), "--csv", str(tmp_path / "locust"),
         "--mcp-raw-samples", str(raw), "--check-every", "5", "--only-summary"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    workers = [
        subprocess.Popen([*locust, "--worker", "--master-host", "127.0.0.1", "--master-port", str(port)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for _ in range(2)
    ]
    try:
        log, _ = master.communicate(timeout=60)
        for w in workers:
            w.communicate(timeout=30)
    finally:
        for p in (master, *workers):
            if p.poll() is None:
                p.kill()
                p.wait()
    assert master.returncode == 0, log[-4000:]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["failures"] == 0 and summary["violations"] == 0
    assert summary["mrtr"]["operations"] > 0 and summary["checks"]["checked"] > 0

    # every worker contributed, and the master's numbers are exactly those of the raw samples
    files = sorted(raw.glob("raw-*.tsv"))
    assert len(files) == 2, files
    per_name: dict[str, list[int]] = defaultdict(list)
    for f in files:
        lines = f.read_text().splitlines()
        assert lines, f
        for line in lines:
            name, ns = line.split("\t")
            per_name[name].append((int(ns) + 500) // 1000)
    ops = summary["operations"]
    assert summary["requests"] == sum(len(v) for v in per_name.values())
    for name, samples in per_name.items():
        entry = ops[name]
        assert entry["count"] == len(samples), name
        for key, percent in (("p50_ms", 50), ("p90_ms", 90), ("p95_ms", 95), ("p99_ms", 99), ("p999_ms", 99.9)):
            assert entry[key] == nearest_rank_ms(samples, percent), (name, key)
        assert entry["max_ms"] == max(samples) / 1000.0

    # and Locust's own CSV counts the same requests and operations
    rows = {(r["Type"], r["Name"]): int(r["Request Count"]) for r in csv.DictReader((tmp_path / "locust_stats.csv").open())}
    for name, entry in ops.items():
        assert rows[("MRTR" if entry["kind"] == "operation" else "POST", name)] == entry["count"], name
