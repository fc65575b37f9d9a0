"""Sequential round-trip rate of the reference server next to the Python SDK (mcp==2.3.0) server.

One client, one request at a time (`tools/call echo`, which both servers offer), over stdio and
over Streamable HTTP (keep-alive, JSON responses). Both servers run side by side and the client
alternates 0.25 s slices between them, so both are measured under the same machine load and the
printed ratio is meaningful even where the absolute numbers are not (a shared CI box is noisy).
The SDK server is `tests/servers/sdk_server.py` (its HTTP side with `--json-response`).

    python tests/benchmarks/bench_reference.py [-n 2000] [--seconds 8] [--min-ratio 5]

The last line is the one summary line; with --min-ratio the exit status is 1 when a ratio is lower.
"""

from __future__ import annotations

import argparse
import http.client
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from mcp_tempest.targets import wire  # noqa: E402

OURS = [sys.executable, "-m", "mcp_tempest.targets.reference"]
SDK = [sys.executable, str(ROOT / "tests" / "servers" / "sdk_server.py")]


def _message(i: int) -> dict[str, object]:
    return wire.build_request(i, "tools/call", {"name": "echo", "arguments": {"text": "hello"}})


class Client:
    """A started server and a function doing one sequential round trip with it."""

    def __init__(self, proc: subprocess.Popen[bytes], roundtrip: Callable[[int], None],
                 close: Callable[[], None]) -> None:
        self.proc, self.roundtrip, self._close = proc, roundtrip, close
        self.count = 0
        self.elapsed = 0.0
        self.latencies: list[float] = []

    def run_for(self, seconds: float) -> None:
        """Round trips for about `seconds`, adding to this client's count, time and latencies."""
        start = now = time.perf_counter()
        while now - start < seconds:
            self.roundtrip(self.count)
            after = time.perf_counter()
            self.latencies.append(after - now)
            self.count += 1
            now = after
        self.elapsed += now - start

    @property
    def rate(self) -> float:
        return self.count / self.elapsed

    @property
    def median_rate(self) -> float:
        return 1.0 / statistics.median(self.latencies)

    def close(self) -> None:
        try:
            self._close()
        finally:
            _stop(self.proc)


def race(ours: Client, sdk: Client, seconds: float, n: int, slice_s: float = 0.25) -> None:
    """Alternate short time slices between the two servers, so both see the same machine load.

    Stops when each has had `seconds` of measurement, or earlier once both did `n` round trips.
    """
    for client in (ours, sdk):
        for i in range(50):
            client.roundtrip(10_000_000 + i)
    while ours.elapsed < seconds or sdk.elapsed < seconds:
        if ours.count >= n and sdk.count >= n:
            break
        ours.run_for(slice_s)
        sdk.run_for(slice_s)


def _spawn(argv: list[str], **kw: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, cwd=ROOT, start_new_session=True, **kw)  # type: ignore[call-overload]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(5)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


def stdio_client(argv: list[str]) -> Client:
    proc = _spawn(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin and proc.stdout
    out_fd, in_fd = proc.stdout.fileno(), proc.stdin.fileno()
    buf = bytearray()

    def roundtrip(i: int) -> None:
        os.write(in_fd, wire.encode_line(_message(i)))
        while True:
            cut = buf.find(b"\n")
            if cut >= 0:
                line = bytes(buf[:cut])
                del buf[: cut + 1]
                msg = orjson.loads(line)
                if msg.get("id") == i:
                    assert "result" in msg, msg
                    return
                continue
            chunk = os.read(out_fd, 1 << 16)
            if not chunk:
                raise RuntimeError("server closed stdout")
            buf.extend(chunk)

    return Client(proc, roundtrip, proc.stdin.close)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def http_client(argv: list[str], port: int) -> Client:
    proc = _spawn(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)

    def roundtrip(i: int) -> None:
        msg = _message(i)
        conn.request("POST", "/mcp", body=orjson.dumps(msg), headers=wire.http_headers(msg))
        resp = conn.getresponse()
        body = resp.read()
        messages = wire.response_messages(resp.getheader("content-type"), body)
        assert resp.status == 200 and messages and "result" in messages[-1], (resp.status, body[:200])

    deadline = time.monotonic() + 30
    while True:
        try:
            roundtrip(0)
            break
        except (ConnectionError, http.client.HTTPException, OSError):
            conn.close()
            if time.monotonic() > deadline or proc.poll() is not None:
                _stop(proc)
                raise RuntimeError(f"server did not come up: {' '.join(argv)}") from None
            time.sleep(0.1)
    return Client(proc, roundtrip, conn.close)


def _report(transport: str, ours: Client, sdk: Client) -> float:
    ratio = ours.rate / sdk.rate
    print(f"{transport:5s} reference {ours.rate:7.0f} req/s ({ours.count} requests)   "
          f"sdk {sdk.rate:6.0f} req/s ({sdk.count} requests)   ratio {ratio:5.1f}x   "
          f"(by median latency {ours.median_rate / sdk.median_rate:5.1f}x)")
    return ratio


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("-n", type=int, default=2000,
                        help="stop once each server did this many round trips (default 2000)")
    parser.add_argument("--seconds", type=float, default=4.0,
                        help="measurement time per server and transport, in 0.25 s slices (default 4)")
    parser.add_argument("--min-ratio", type=float, default=None, help="exit 1 when a ratio is below this")
    args = parser.parse_args(argv)
    ratios: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "bench.sqlite3")
        pairs: list[tuple[str, Callable[[], Client], Callable[[], Client]]] = [
            ("stdio", lambda: stdio_client([*OURS, "--db", db]),
             lambda: stdio_client([*SDK, "--transport", "stdio"])),
        ]
        ours_port, sdk_port = _free_port(), _free_port()
        pairs.append(("http", lambda: http_client([*OURS, "--transport", "http", "--port", str(ours_port),
                                                   "--db", db], ours_port),
                      lambda: http_client([*SDK, "--transport", "http", "--port", str(sdk_port),
                                           "--json-response"], sdk_port)))
        for transport, start_ours, start_sdk in pairs:
            ours = start_ours()
            try:
                sdk = start_sdk()
                try:
                    race(ours, sdk, args.seconds, args.n)
                finally:
                    sdk.close()
            finally:
                ours.close()
            ratios[transport] = _report(transport, ours, sdk)
    r_stdio, r_http = ratios["stdio"], ratios["http"]
    print(f"bench_reference: sequential tools/call echo, reference vs mcp==2.3.0 SDK (interleaved): "
          f"stdio {r_stdio:.1f}x, http {r_http:.1f}x")
    if args.min_ratio is not None and min(r_stdio, r_http) < args.min_ratio:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
