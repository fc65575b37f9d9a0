"""Every command refuses bad input with one line on stderr and exit status 2, never a traceback.

The checks live in targets/validate.py; these tests run the real command lines. A read-only
directory is a read-only tmpfs mount (root ignores permission bits), skipped where mounting is
not allowed. Redis refusals use a name under `.invalid`, which can never resolve.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from mcp_tempest.targets.bounded_read import MAX_FILE_BYTES, TooLarge, inflate_bounded
from mcp_tempest.targets.validate import InputError, repro_document, seconds

PY = sys.executable
ROOT = Path(__file__).resolve().parent.parent
CLI = [PY, "-m", "mcp_tempest.fuzz.cli"]


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def assert_one_line_exit_2(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "ro"
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], capture_output=True)


BAD_SECONDS = ["nan", "inf", "-inf", "1e300", "0"]


@pytest.mark.parametrize("value", BAD_SECONDS)
def test_probe_timeout(value: str) -> None:
    assert_one_line_exit_2(run("probe", f"--timeout={value}"), "--timeout")


def test_probe_usage_error_is_one_line() -> None:
    assert_one_line_exit_2(run("probe", "--timeout", "soon"), "--timeout")


@pytest.mark.parametrize("value", BAD_SECONDS)
def test_fuzz_timeout(value: str, tmp_path: Path) -> None:
    assert_one_line_exit_2(run("fuzz", f"--timeout={value}", "--out", str(tmp_path), "--no-database"), "--timeout")


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_fuzz_shrink_time(value: str, tmp_path: Path) -> None:
    assert_one_line_exit_2(run("fuzz", f"--shrink-time={value}", "--out", str(tmp_path), "--no-database"),
                           "--shrink-time")


@pytest.mark.parametrize("value", ["nan", "inf", "0"])
def test_load_timeout(value: str) -> None:
    assert_one_line_exit_2(run("load", f"--timeout={value}"), "--timeout")


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-5"])
def test_serve_state_ttl(value: str) -> None:
    assert_one_line_exit_2(run("serve", f"--state-ttl={value}"), "--state-ttl")


def test_fuzz_out_naming_a_file(tmp_path: Path) -> None:
    file = tmp_path / "a-file"
    file.write_text("x")
    assert_one_line_exit_2(run("fuzz", "--out", str(file), "--no-database"), "--out", "is a file")


def test_fuzz_out_read_only(read_only_dir: Path) -> None:
    assert_one_line_exit_2(run("fuzz", "--out", str(read_only_dir), "--no-database"), "--out", "not writable")
    assert_one_line_exit_2(run("fuzz", "--out", str(read_only_dir / "sub"), "--no-database"), "--out")


def test_fuzz_write_regressions_read_only_or_a_file(tmp_path: Path, read_only_dir: Path) -> None:
    file = tmp_path / "a-file"
    file.write_text("x")
    out = str(tmp_path / "out")
    assert_one_line_exit_2(run("fuzz", "--out", out, "--no-database", "--write-regressions", str(file)),
                           "--write-regressions", "is a file")
    assert_one_line_exit_2(run("fuzz", "--out", out, "--no-database", "--write-regressions", str(read_only_dir)),
                           "--write-regressions", "not writable")


def test_load_out_read_only(read_only_dir: Path) -> None:
    assert_one_line_exit_2(run("load", "--out", str(read_only_dir)), "--out", "not writable")


def test_redis_database_off_loopback_is_refused_without_allow_remote(tmp_path: Path) -> None:
    proc = run("fuzz", "--database", "redis://db.example.invalid:6379/0", "--out", str(tmp_path / "o"))
    assert_one_line_exit_2(proc, "non-loopback", "--allow-remote")


def test_frames_size_of_two_gibibytes_is_refused_at_once() -> None:
    start = time.monotonic()
    proc = run("frames", "--malformed", "oversized-frame", "--size", str(2**31), "--count", "1")
    assert_one_line_exit_2(proc, "--size")
    assert time.monotonic() - start < 30


# --- replay files ---


def _repro(tmp_path: Path, doc: object, name: str = "bad.json") -> Path:
    path = tmp_path / name
    path.write_bytes(orjson.dumps(doc))
    return path


GOOD_EVENTS = [{"kind": "spawn", "t": 0.0, "proc": 0, "note": "x"}]
GOOD_TRANSCRIPT = {"target": "stdio:x", "transport": "stdio", "events": GOOD_EVENTS}


@pytest.mark.parametrize(
    "doc",
    [
        {"transcript": {"target": "stdio:x", "transport": "stdio", "events": [{"kind": "send", "proc": "zero"}]}},
        {"transcript": {"target": "stdio:x", "transport": "stdio", "events": "none"}},
        {"transcript": {"target": "stdio:x", "transport": "pigeon", "events": GOOD_EVENTS}},
        {"transcript": {"target": 7, "transport": "stdio", "events": GOOD_EVENTS}},
        {"transcript": {"target": "stdio:x", "transport": "stdio", "events": [{"kind": "recv", "raw": 5}]}},
        {"transcript": {"target": "stdio:x", "transport": "http", "events": [{"kind": "recv", "headers": {"a": 1}}]}},
        {"case": "steps", "transcript": {"target": "stdio:x", "transport": "stdio", "events": GOOD_EVENTS}},
        {"target": ["stdio:x"], "transcript": {"target": "stdio:x", "transport": "stdio", "events": GOOD_EVENTS}},
        [1, 2, 3],
        {"case": {"property": "framing", "steps": "abc"}, "transcript": GOOD_TRANSCRIPT},
        {"case": {"property": "framing", "steps": [{"proc": 0, "headers": 5}]}, "transcript": GOOD_TRANSCRIPT},
        {"case": {"property": "framing", "steps": ["x"]}, "transcript": GOOD_TRANSCRIPT},
        {"case": {"property": "framing", "steps": [{"proc": 0, "headers": {"a": 1}}]}, "transcript": GOOD_TRANSCRIPT},
        {"case": {"property": "framing", "steps": [{"proc": -1}]}, "transcript": GOOD_TRANSCRIPT},
        {"case": {"property": "framing", "steps": [{"wait": "forever"}]}, "transcript": GOOD_TRANSCRIPT},
        {"case": {"property": "framing", "steps": [{"bind": [7]}]}, "transcript": GOOD_TRANSCRIPT},
        {"case": {"property": "framing", "steps": [{"timeout": "1"}]}, "transcript": GOOD_TRANSCRIPT},
        {"case": {"property": "framing", "steps": [], "warm": "0"}, "transcript": GOOD_TRANSCRIPT},
        {"case": {"mode": "client", "plays": []}, "transcript": GOOD_TRANSCRIPT},
        {"case": {"mode": "client", "plays": {"tools/call": ["x"]}}, "transcript": GOOD_TRANSCRIPT},
        {"case": {"mode": "client", "plays": {"tools/call": [{"kind": "result", "hold": "1"}]}},
         "transcript": GOOD_TRANSCRIPT},
    ],
    ids=["proc-str", "events-str", "transport", "target-int", "raw-int", "header-int", "case-str", "doc-target",
         "list", "steps-str", "step-headers-int", "step-str", "step-header-value-int", "proc-negative",
         "wait-unknown", "bind-int", "timeout-str", "warm-str", "plays-list", "play-str", "hold-str"],
)
def test_replay_file_with_mistyped_fields(tmp_path: Path, doc: object) -> None:
    assert_one_line_exit_2(run("replay", str(_repro(tmp_path, doc))), "bad.json")


def test_replay_of_a_gzip_bomb_is_refused_without_inflating_it(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as fh:
        block = b" " * 2**20
        for _ in range(MAX_FILE_BYTES // 2**20 + 64):
            fh.write(block)
    assert bomb.stat().st_size < 2 * 2**20
    proc = subprocess.Popen([*CLI, "replay", str(bomb)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT)
    peak = 0
    while proc.poll() is None:
        with contextlib.suppress(OSError, ValueError, IndexError, StopIteration):  # a zombie has no VmRSS
            status = Path(f"/proc/{proc.pid}/status").read_text()
            peak = max(peak, int(next(line for line in status.splitlines() if line.startswith("VmRSS:")).split()[1]))
        time.sleep(0.02)
    out, err = proc.communicate()
    assert_one_line_exit_2(subprocess.CompletedProcess(proc.args, proc.returncode, out, err), "inflates to more than")
    assert peak < 600 * 1024, f"peak RSS {peak // 1024} MB"


# --- the validators themselves ---


def test_seconds_accepts_what_is_sane_and_refuses_the_rest() -> None:
    assert seconds(5.0, "--timeout") == 5.0
    assert seconds(None, "--duration") is None
    assert seconds(0.0, "--shrink-time", zero_ok=True) == 0.0
    for bad in (float("nan"), float("inf"), -1.0, 0.0, 1e9):
        with pytest.raises(InputError, match="--timeout"):
            seconds(bad, "--timeout")


def test_inflate_bounded_round_trips_and_stops_at_the_cap() -> None:
    data = os.urandom(300_000) + b"a" * 3_000_000
    assert inflate_bounded(gzip.compress(data), len(data)) == data
    with pytest.raises(TooLarge):
        inflate_bounded(gzip.compress(data), len(data) - 1)
    with pytest.raises(EOFError):
        inflate_bounded(gzip.compress(data)[:-100], len(data))


def test_a_written_repro_file_passes_the_shape_check(tmp_path: Path) -> None:
    doc = {"id": "x", "target": "stdio:x", "property": "valid", "rule": None, "seed": 1,
           "transcript": {"target": "stdio:x", "transport": "stdio", "events": [
               {"kind": "send", "t": 0.1, "proc": 0, "raw": "{}", "message": {}},
               {"kind": "recv", "t": 0.2, "proc": 0, "raw_b64": "AA==", "status": 200, "headers": {"a": "b"},
                "ref": 0, "note": "n"}]}}
    assert repro_document(doc, "x.json") is doc


# --- a full disk mid-campaign ---


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "tiny"
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tiny tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], capture_output=True)


def test_a_full_disk_mid_campaign_is_one_line_and_exit_2_with_valid_files(tiny_disk: Path, tmp_path: Path) -> None:
    target = (f"stdio:{PY} -m mcp_tempest.targets.reference --transport stdio --db {tmp_path / 's.sqlite3'} "
              "--bug missing-result-type")
    out = tiny_disk / "out"
    proc = run("fuzz", "--target", target, "--max-examples", "10", "--seed", "2", "--out", str(out),
               "--no-database", "--progress", "never", "--properties", "valid", timeout=240)
    assert_one_line_exit_2(proc, "No space left on device")
    assert proc.stdout.strip().splitlines()[-1].startswith("fuzz: ")  # the promised summary line
    files = [p for p in out.rglob("*") if p.is_file()]
    assert not [p for p in files if p.name.endswith(".tmp")]
    assert (out / "findings.json") in files
    for path in files:
        if path.suffix == ".json":
            orjson.loads(path.read_bytes())  # every file that exists is whole
