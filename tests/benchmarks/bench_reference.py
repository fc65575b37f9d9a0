"""Sequential round-trip rate of the reference server next to the Python SDK (mcp==2.3.0) server.

One client, one request at a time (`tools/call echo`, which both servers offer), over stdio and
over Streamable HTTP (keep-alive, JSON responses). Both servers are measured in the same run on
the same machine, so the printed ratios are meaningful even where the absolute numbers are not.
The SDK server is `tests/servers/sdk_server.py` (its HTTP side with `--json-response`).

    /work/venv/bin/python tests/benchmarks/bench_reference.py [-n 2000] [--seconds 8] [--min-ratio 5]

The last line is the one summary line; with --min-ratio the exit status is 1 when a ratio is lower.
"""

from __future__ import annotations

import argparse
import http.client
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from targets import wire  # noqa: E402

OURS = [sys.executable, "-m", "targets.reference"]
SDK = [sys.executable, str(ROOT / "tests" / "servers" / "sdk_server.py")]


def _message(i: int) -> dict[str, object]:
    return wire.build_request(i, "tools/call", {"name": "echo", "arguments": {"text": "hello"}})


def _measure(roundtrip: Callable[[int], None], n: int, seconds: float) -> float:
    """Requests per second over at most n requests or `seconds`, after a short warm-up."""
    for i in range(50):
        roundtrip(i)
    done = 0
    start = time.perf_counter()
    deadline = start + seconds
    while done < n and (done % 50 or time.perf_counter() < deadline):
        roundtrip(1000 + done)
        done += 1
    return done / (time.perf_counter() - start)


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


def stdio_rate(argv: list[str], n: int, seconds: float) -> float:
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

    try:
        return _measure(roundtrip, n, seconds)
    finally:
        proc.stdin.close()
        _stop(proc)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def http_rate(argv: list[str], n: int, seconds: float, port: int) -> float:
    proc = _spawn(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)

    def roundtrip(i: int) -> None:
        msg = _message(i)
        conn.request("POST", "/mcp", body=orjson.dumps(msg), headers=wire.http_headers(msg))
        resp = conn.getresponse()
        body = resp.read()
        messages = wire.response_messages(resp.getheader("content-type"), body)
        assert resp.status == 200 and messages and "result" in messages[-1], (resp.status, body[:200])

    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                roundtrip(0)
                break
            except (ConnectionError, http.client.HTTPException, OSError):
                conn.close()
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"server did not come up: {' '.join(argv)}") from None
                time.sleep(0.1)
        return _measure(roundtrip, n, seconds)
    finally:
        conn.close()
        _stop(proc)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("-n", type=int, default=2000, help="requests per measurement (default 2000)")
    parser.add_argument("--seconds", type=float, default=8.0, help="time cap per measurement (default 8)")
    parser.add_argument("--min-ratio", type=float, default=None, help="exit 1 when a ratio is below this")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "bench.sqlite3")
        ours_stdio = stdio_rate([*OURS, "--db", db], args.n, args.seconds)
        sdk_stdio = stdio_rate([*SDK, "--transport", "stdio"], args.n, args.seconds)
        port = _free_port()
        ours_http = http_rate([*OURS, "--transport", "http", "--port", str(port), "--db", db],
                              args.n, args.seconds, port)
        port = _free_port()
        sdk_http = http_rate([*SDK, "--transport", "http", "--port", str(port), "--json-response"],
                             args.n, args.seconds, port)
    r_stdio, r_http = ours_stdio / sdk_stdio, ours_http / sdk_http
    print(f"stdio: reference {ours_stdio:8.0f} req/s   sdk {sdk_stdio:8.0f} req/s   ratio {r_stdio:5.1f}x")
    print(f"http:  reference {ours_http:8.0f} req/s   sdk {sdk_http:8.0f} req/s   ratio {r_http:5.1f}x")
    print(f"bench_reference: sequential tools/call echo, reference vs mcp==2.3.0 SDK: "
          f"stdio {r_stdio:.1f}x, http {r_http:.1f}x")
    if args.min_ratio is not None and min(r_stdio, r_http) < args.min_ratio:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
