"""One Redis example database shared by campaigns and machines, against a real redis-server.

What a team gets from `--database redis://...`: two machines' nightly campaigns (each with
`--workers 2`) write into one database, the next campaign replays what they found before it
generates anything, still finds new bugs, and a Redis restart mid-campaign loses nothing.

Each test starts its own redis-server (Debian's package; .ci/run installs it) on a free loopback
port with append-only persistence, so it can restart it. Without the binary the tests skip with
a reason; under CI (`CI=true`) that is a failure instead, because CI must run them.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.fuzz_support import CLI, processes_mentioning, reference_stdio

pytestmark = pytest.mark.slow
redis = pytest.importorskip("redis", reason="the redis client (mcp-tempest[redis]) is not installed")


def _redis_binary() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    reason = "no redis-server binary (Debian: apt-get install redis-server); .ci/run installs it"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """A private redis-server with AOF persistence that a test can restart on the same port."""

    def __init__(self, binary: str, workdir: Path) -> None:
        self.binary, self.workdir, self.port = binary, workdir, _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.workdir),
             "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = self.client()
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # redis flushes its AOF and exits
            self.proc.wait(timeout=20)
        self.proc = None

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url, socket_timeout=5)

    def keys(self) -> dict[bytes, set[bytes]]:
        c = self.client()
        return {k: c.smembers(k) for k in c.keys("hypothesis-example:*")}


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(_redis_binary(), tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _fuzz(target: str, out: Path, db_url: str, *extra: str, properties: str = "ids") -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CLI, "fuzz", "--target", target, "--properties", properties, "--database", db_url, "--out", str(out),
         "--shrink-time", "5", "--progress", "never", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen[str], timeout: float = 300) -> str:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 1, out + err
    assert "harness error" not in out and "Traceback" not in err, out + err
    return out


def _ids(out: Path, rule: str | None = None) -> set[str]:
    findings = orjson.loads((out / "findings.json").read_bytes())["findings"]
    return {f["id"] for f in findings if rule is None or f["rule"] == rule}


def test_two_machines_share_one_database_then_the_next_campaign_replays_first_and_finds_more(
    tmp_path: Path, redis_server: RedisServer,
) -> None:
    # Tonight: two machines, two workers each, one Redis database. The example database is keyed
    # by property, transport and target command line, so both run the same command line.
    target = reference_stdio(tmp_path / "server.sqlite3", "null-id-accepted")
    machines = [(tmp_path / name, _fuzz(target, tmp_path / name, redis_server.url,
                                        "--workers", "2", "--max-examples", "20", "--seed", seed))
                for name, seed in (("a", "11"), ("b", "12"))]
    known: set[str] = set()
    for out, proc in machines:
        _finish(proc)
        assert _ids(out, "RPC-01"), "each machine finds the null-id bug (the server's duty, RPC-01)"
        known |= _ids(out)
    saved = redis_server.keys()
    assert saved and all(saved.values()), "the failing examples were saved in Redis"

    # Tomorrow, with a budget of one generated example: every saved failure is replayed first.
    _finish(_fuzz(target, tmp_path / "replay", redis_server.url, "--max-examples", "1", "--seed", "99"))
    assert known <= _ids(tmp_path / "replay"), "every known failure came back from the shared database"

    # The server grew a second bug (a new command line, so a key of its own in the same database):
    # the new bug is found, saved beside the old ones, and replayed by the next campaign.
    target2 = reference_stdio(tmp_path / "server.sqlite3", "null-id-accepted", "missing-result-type")
    _finish(_fuzz(target2, tmp_path / "new", redis_server.url, "--max-examples", "40", "--seed", "5",
                  properties="ids,valid"))
    assert _ids(tmp_path / "new", "RT-01"), "the new bug (no resultType) is found"
    assert set(saved) < set(redis_server.keys()), "the new target's failures joined the old ones"
    _finish(_fuzz(target2, tmp_path / "again", redis_server.url, "--max-examples", "2", "--seed", "100",
                  properties="ids,valid"))
    assert _ids(tmp_path / "new") <= _ids(tmp_path / "again")
    assert not processes_mentioning(str(tmp_path))


def test_a_redis_restart_mid_campaign_loses_nothing(tmp_path: Path, redis_server: RedisServer) -> None:
    target = reference_stdio(tmp_path / "s.sqlite3", "null-id-accepted")
    proc = _fuzz(target, tmp_path / "out", redis_server.url, "--workers", "2", "--duration", "24", "--seed", "7")
    deadline = time.monotonic() + 120
    while not redis_server.keys():
        assert proc.poll() is None, "the campaign ended before saving anything"
        assert time.monotonic() < deadline, "nothing was saved within 120 s"
        time.sleep(0.2)
    before = redis_server.keys()
    redis_server.stop()
    time.sleep(1.0)  # the campaign keeps running (and saving) while Redis is away
    redis_server.start()
    out = _finish(proc)
    after = redis_server.keys()
    # Hypothesis itself replaces a saved failure by a smaller one as it shrinks (and later rounds
    # shrink again), so values may change; a key that held failures must still hold some, and the
    # replay below shows every reported failure came back.
    for key in before:
        assert after.get(key), "failures saved before the restart were lost"
    assert "unreachable" not in out
    found = _ids(tmp_path / "out")
    assert found
    # Everything the campaign reported can be replayed from the database it wrote.
    _finish(_fuzz(target, tmp_path / "replay", redis_server.url, "--max-examples", "1", "--seed", "8"))
    assert found <= _ids(tmp_path / "replay")


def test_writes_made_while_redis_is_down_land_when_it_is_back(tmp_path: Path, redis_server: RedisServer) -> None:
    from mcp_tempest.fuzz.redis_database import ResilientRedisDatabase

    db = ResilientRedisDatabase(redis_server.url, retry_seconds=0.3)
    db.save(b"k", b"first")
    redis_server.stop()
    db.save(b"k", b"while-down")  # gives up after 0.3 s and keeps the write
    assert db.pending == 1
    assert list(db.fetch(b"k")) == []  # a read while Redis is away: nothing to replay, no error
    redis_server.start()
    assert sorted(db.fetch(b"k")) == [b"first", b"while-down"]
    assert db.pending == 0


def test_an_unreachable_redis_is_one_line_and_exit_2(tmp_path: Path) -> None:
    port = _free_port()
    proc = subprocess.run(
        [*CLI, "fuzz", "--database", f"redis://127.0.0.1:{port}/0", "--max-examples", "1", "--transports", "stdio",
         "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "cannot reach the example database" in proc.stderr and "Traceback" not in proc.stderr
