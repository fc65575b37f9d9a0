"""How much a StdioPool saves when every example needs a fresh reference-server process.

Runs N examples of "fresh process, one server/discover, close" twice: spawning on demand, and
taking from a StdioPool that keeps the next process starting while the current one works (a
short fixed amount of per-example "work" stands in for the property's own time). Prints one
summary line with the ratio of the two wall times, both measured in this run.

Usage: python tests/benchmarks/bench_stdio_pool.py [N] [WORK_SECONDS]
"""

from __future__ import annotations

import sys
import time

from mcp_tempest.targets import wire
from mcp_tempest.targets.stdio_driver import StdioPool, start_stdio
from mcp_tempest.targets.target_spec import default_target


def one_example(conn, work: float) -> None:  # type: ignore[no-untyped-def]
    reply = conn.request(wire.build_request(1, "server/discover"), timeout=30)
    if reply is None:
        raise SystemExit("bench: the reference server did not answer")
    time.sleep(work)
    conn.close()


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    work = float(sys.argv[2]) if len(sys.argv) > 2 else 0.2
    spec = default_target()

    started = time.monotonic()
    for _ in range(n):
        one_example(start_stdio(spec.new_transcript(), spec.argv), work)
    on_demand = time.monotonic() - started

    with StdioPool(spec, size=1) as pool:
        started = time.monotonic()
        for _ in range(n):
            one_example(pool.take(spec.new_transcript()), work)
        pooled = time.monotonic() - started

    print(f"on demand: {on_demand / n * 1000:.0f} ms/example; pooled: {pooled / n * 1000:.0f} ms/example")
    print(f"bench_stdio_pool: {n} fresh processes, pooled is {on_demand / pooled:.2f}x faster than on demand")


if __name__ == "__main__":
    main()
