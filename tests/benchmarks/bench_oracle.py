"""How fast the oracle judges: a long transcript with `judge`, single pairs with `judge_response`.

Run: python tests/benchmarks/bench_oracle.py [PAIRS]
The last line compares the per-pair cost of the two paths measured in this run, and the cost of
the Locust hot path (schema validation left out) against the full fast path.
"""

from __future__ import annotations

import sys
import time

from mcp_tempest.fuzz.oracle import RULES, judge, judge_response, warm_up
from mcp_tempest.fuzz.oracle.craft import Crafter
from mcp_tempest.targets import wire

INFO = {wire.META_SERVER_INFO: {"name": "bench", "version": "1"}}


def main(pairs: int) -> None:
    warm_up()
    results = [
        ("tools/call", {"name": "echo", "arguments": {"text": "x"}},
         {"resultType": "complete", "content": [{"type": "text", "text": "x"}], "_meta": INFO}),
        ("tools/list", {}, {"resultType": "complete", "tools": [{"name": "echo", "inputSchema": {"type": "object"}}],
                            "ttlMs": 1000, "cacheScope": "public", "_meta": INFO}),
        ("resources/read", {"uri": "file:///x"}, {"resultType": "complete", "contents": [{"uri": "file:///x", "text": "x"}],
                                                  "ttlMs": 0, "cacheScope": "private", "_meta": INFO}),
    ]
    c = Crafter("stdio")
    c.spawn()
    for i in range(pairs):
        method, params, result = results[i % len(results)]
        c.exchange(wire.build_request(i, method, params), wire.build_result(i, result))
    start = time.perf_counter()
    found = judge(c.transcript)
    whole = time.perf_counter() - start
    assert found == [], found[:3]

    method, params, result = results[0]
    request, response = wire.build_request(1, method, params), wire.build_result(1, result)
    n = min(pairs, 2000)
    start = time.perf_counter()
    for _ in range(n):
        judge_response(request, response, http_status=200, headers={"content-type": "application/json"})
    single = (time.perf_counter() - start) / n
    hot = [r for r in RULES if r != "RT-06" and RULES[r].scope == "pair"]
    start = time.perf_counter()
    for _ in range(n):
        judge_response(request, response, http_status=200, headers={"content-type": "application/json"}, rules=hot)
    light = (time.perf_counter() - start) / n
    per_pair = whole / pairs
    print(f"judge: {pairs} pairs in {whole:.2f} s ({per_pair * 1e3:.3f} ms/pair)")
    print(f"judge_response: {single * 1e3:.3f} ms/pair; without RT-06: {light * 1e3:.3f} ms/pair")
    print(f"bench_oracle: judge {per_pair / single:.2f}x the per-pair cost of judge_response; "
          f"hot path {single / light:.1f}x cheaper than the full fast path")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3000)
