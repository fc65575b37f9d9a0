"""What the executor does so that timing and earlier examples cannot make a verdict.

- A server that answers frames concurrently may answer the sentinel before a slower probe frame:
  the case reads on until the owed reply is in, so it is judged, not called missing (seen on
  FastMCP: `resources/read` id 0 with a CRLF terminator answered after the sentinel).
- A process that was sent a 2025-era handshake (`initialize`) does not serve later examples: a
  dual-era server may scope it to that era (VER-05), which a later transcript could not explain.

Both with real processes: the reference server behind a proxy that holds back one method's
replies, and the stdio pool of the reference itself.
"""

from __future__ import annotations

from pathlib import Path

from fuzz_support import PYTHON, reference_stdio

from mcp_tempest.fuzz.oracle import judge
from mcp_tempest.fuzz.properties.case import Case, Step
from mcp_tempest.fuzz.properties.executor import LATE_REPLY_LIMIT, execute
from mcp_tempest.fuzz.properties.framing import _from_catalogue
from mcp_tempest.strategies.malformed import malformed_case
from mcp_tempest.strategies.sampling import draw_examples
from mcp_tempest.targets import wire
from mcp_tempest.targets.endpoints import open_endpoint
from mcp_tempest.targets.target_spec import parse_target

# Replies to resources/read leave 0.3 s late (behind any reply that follows them): a server that
# serves requests concurrently, whose slow handler answers after a fast one sent later.
SLOW_READ_PROXY = """
import subprocess, sys, threading, time
child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
slow_ids = set()
lock = threading.Lock()
def write(line):
    with lock:
        sys.stdout.buffer.write(line); sys.stdout.buffer.flush()
def pump_out():
    for line in child.stdout:
        held = any(('"id":%s,' % i).encode() in line or ('"id":%s}' % i).encode() in line for i in list(slow_ids))
        if held:
            threading.Timer(0.3, write, [line]).start()
        else:
            write(line)
threading.Thread(target=pump_out, daemon=True).start()
for line in sys.stdin.buffer:
    if b'"resources/read"' in line:
        start = line.find(b'"id":') + 5
        end = min(i for i in (line.find(b",", start), line.find(b"}", start)) if i > 0)
        slow_ids.add(line[start:end].decode())
    child.stdin.write(line); child.stdin.flush()
child.stdin.close()
child.wait()
"""


def _crlf_read_case() -> Case:
    """The catalogue's crlf-terminator on a resources/read, then the sentinel, as framing sends it."""
    [case] = draw_examples(malformed_case("crlf-terminator", method="resources/read"), 1, seed=3)
    steps = _from_catalogue(case, "stdio")
    sentinel = Step(proc=0, frame=wire.build_request(990001, "server/discover"), label="sentinel")
    return Case(property="framing", steps=[*steps, sentinel], warm=[])


def test_a_probe_reply_later_than_the_sentinels_is_waited_for(tmp_path: Path) -> None:
    proxy = tmp_path / "slow_read_proxy.py"
    proxy.write_text(SLOW_READ_PROXY)
    target = f"stdio:{PYTHON} {proxy} " + reference_stdio(tmp_path / "s.sqlite3").removeprefix("stdio:")
    endpoint = open_endpoint(parse_target(target))
    try:
        case = _crlf_read_case()
        run = execute(case, endpoint, timeout=5.0)
        expect = {run.sends[0]: case.steps[0].expect}
        replies = [e for e in run.transcript.events if e.kind == "recv" and wire.is_response(e.message)]
        # both replies recorded, the probe frame's after the sentinel's
        assert len(replies) == 2 and replies[0].message["id"] == 990001, run.transcript.events
        assert [v for v in judge(run.transcript, expectations=expect) if v.probe == "crlf-terminator"] == []
    finally:
        endpoint.close()
    assert 0.3 < LATE_REPLY_LIMIT  # the proxy's delay is inside what the executor waits


def test_a_process_sent_initialize_is_not_reused(tmp_path: Path) -> None:
    endpoint = open_endpoint(parse_target(reference_stdio(tmp_path / "s.sqlite3")))
    try:
        def spawn_notes(case: Case) -> list[str]:
            run = execute(case, endpoint, reuse=True)
            return [e.note for e in run.transcript.events if e.kind == "spawn"]

        plain = Case(property="t", steps=[Step(proc=0, frame=wire.build_request(1, "server/discover"))], warm=[0])
        spawn_notes(plain)
        assert "(reused)" in spawn_notes(plain)[0]  # a warm process serves the next example
        legacy = Case(property="t", steps=[Step(proc=0, frame={
            "jsonrpc": "2.0", "id": 2, "method": "initialize",
            "params": {"protocolVersion": wire.LEGACY_VERSION, "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}})], warm=[0])
        assert "(reused)" in spawn_notes(legacy)[0]
        assert "(reused)" not in spawn_notes(plain)[0]  # the one that saw initialize was retired
    finally:
        endpoint.close()
