"""The era probe against real servers: the reference server (stdio, spawned HTTP, plain http://),
small inline servers for each branch of DIGEST 5.3, and (slow) the third-party servers."""

from __future__ import annotations

import os
import re
import shlex
import sys
import textwrap
from pathlib import Path

import orjson
import pytest
from servers.catalog import EVERYTHING, SDK, ServerSpec, node_binary, npm_packages_installed

from mcp_tempest.fuzz.probe_command import probe_main
from mcp_tempest.targets import wire
from mcp_tempest.targets.connect import Target
from mcp_tempest.targets.probe import probe
from mcp_tempest.targets.spawn_pool import SpawnPool
from mcp_tempest.targets.target_spec import default_target, parse_target

PY = sys.executable
ROOT = Path(__file__).resolve().parent.parent
SUMMARY = re.compile(r"^probe: (modern|legacy|dual) [0-9-]+(?: \+ [0-9-]+)?, (no tools|\d+\+? tools?), "
                     r"(no resources|\d+\+? resources?), (no prompts|\d+\+? prompts?): PASS$")

# One inline server, several behaviours (argv[1]), each the shape of a real server we met or expect.
FAKE = textwrap.dedent(
    """
    import json, sys
    mode = sys.argv[1]
    TOOLS = [{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(7)]
    def out(msg):
        sys.stdout.write(json.dumps(msg) + "\\n"); sys.stdout.flush()
    if mode == "banner":
        print("My Server 1.0 ready on stdio", flush=True)
    initialized = False
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        rid, method = msg["id"], msg["method"]
        params = msg.get("params") or {}
        version = params.get("_meta", {}).get("io.modelcontextprotocol/protocolVersion")
        if mode.startswith("legacy"):
            if method == "initialize":
                initialized = True
                out({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": "2025-11-25",
                     "capabilities": {"tools": {}}, "serverInfo": {"name": "old", "version": "9"}}})
            elif method == "tools/list" and initialized:
                out({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS[:2]}})
            elif mode in ("legacy-error", "legacy-exit"):
                out({"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": "not initialized"}})
                if mode == "legacy-exit":
                    sys.exit(1)
            continue
        if mode == "versions" and version != "2027-01-01":
            out({"jsonrpc": "2.0", "id": rid, "error": {"code": -32022, "message": "unsupported",
                 "data": {"supported": ["2027-01-01"], "requested": version}}})
            continue
        if method == "server/discover":
            out({"jsonrpc": "2.0", "id": rid, "result": {"resultType": "complete",
                 "supportedVersions": [version], "capabilities": {"tools": {}},
                 "ttlMs": 0, "cacheScope": "public",
                 "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake", "version": "1"}}}})
        elif method == "tools/list":
            # Pages of three; the first cursor is the empty string, which is a valid cursor.
            cursor = params.get("cursor")
            start = {None: 0, "": 3, "six": 6}[cursor]
            result = {"resultType": "complete", "tools": TOOLS[start:start + 3], "ttlMs": 0, "cacheScope": "public"}
            nxt = {0: "", 3: "six"}.get(start)
            if nxt is not None:
                result["nextCursor"] = nxt
            out({"jsonrpc": "2.0", "id": rid, "result": result})
        else:
            out({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "nope"}})
    """
)


def fake(mode: str) -> str:
    return f"stdio:{PY} -c {shlex.quote(FAKE)} {mode}"


def run_probe(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = probe_main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def count_via_driver(target_text: str, method: str, key: str) -> int:
    """The same count the probe reports, fetched independently, page by page."""
    with Target(parse_target(target_text), prestart=0) as target, target.connect() as conn:
        total, cursor = 0, None
        for i in range(50):
            reply = conn.request(wire.build_request(i, method, {"cursor": cursor} if cursor is not None else None))
            assert reply is not None
            total += len(reply["result"][key])
            cursor = reply["result"].get("nextCursor")
            if cursor is None:
                return total
    raise AssertionError("too many pages")


# --- the reference server ---


def test_reference_over_stdio_human_summary(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_probe(capsys)
    assert code == 0, err
    lines = out.strip().splitlines()
    assert SUMMARY.match(lines[-1]), lines[-1]
    assert lines[-1].startswith("probe: modern 2026-07-28, ")
    assert any(line.startswith("era:") and "modern" in line for line in lines)
    assert "problem" not in out


def test_reference_over_stdio_json_counts_match_the_lists(capsys: pytest.CaptureFixture[str]) -> None:
    text = default_target().text
    code, out, _ = run_probe(capsys, "--target", text, "--json")
    assert code == 0
    report = orjson.loads(out)
    assert len(out.strip().splitlines()) == 1
    assert report["era"] == "modern" and report["transport"] == "stdio"
    assert report["versions"] == [wire.MODERN_VERSION] and report["version"] == wire.MODERN_VERSION
    assert report["serverInfo"]["name"] and report["legacy"] is None and report["problems"] == []
    assert report["counts"]["tools"] == count_via_driver(text, "tools/list", "tools") > 0
    assert report["counts"]["resources"] == count_via_driver(text, "resources/list", "resources")
    assert report["counts"]["prompts"] == count_via_driver(text, "prompts/list", "prompts")


def test_reference_over_spawned_http_and_plain_http(capsys: pytest.CaptureFixture[str]) -> None:
    spec = default_target("http")
    code, out, err = run_probe(capsys, "--target", spec.text, "--json")
    assert code == 0, err
    report = orjson.loads(out)
    assert report["era"] == "modern" and report["transport"] == "http"
    assert report["counts"]["tools"] > 0
    with SpawnPool(spec, instances=1) as pool:
        code, out, err = run_probe(capsys, "--target", pool.urls[0])
        assert code == 0, err
        assert out.strip().splitlines()[-1] == (
            f"probe: modern 2026-07-28, {report['counts']['tools']} tools, "
            f"{report['counts']['resources']} resource{'s' if report['counts']['resources'] != 1 else ''}, "
            f"{report['counts']['prompts']} prompt{'s' if report['counts']['prompts'] != 1 else ''}: PASS"
        )


# --- the branches of DIGEST 5.3 on inline servers ---


def test_pagination_is_followed_including_an_empty_cursor(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_probe(capsys, "--target", fake("paged"), "--json", "--no-dual")
    assert code == 0
    report = orjson.loads(out)
    assert report["counts"] == {"tools": 7, "resources": None, "prompts": None}
    assert report["truncated"] == []
    code, out, _ = run_probe(capsys, "--target", fake("paged"), "--max-pages", "2", "--no-dual")
    assert out.strip().splitlines()[-1] == "probe: modern 2026-07-28, 6+ tools, no resources, no prompts: PASS"


def test_unsupported_version_error_means_modern_and_retries(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_probe(capsys, "--target", fake("versions"), "--json", "--no-dual")
    assert code == 0
    report = orjson.loads(out)
    assert report["era"] == "modern" and "-32022" in report["detection"]
    assert report["versions"] == ["2027-01-01"] and report["version"] == "2027-01-01"
    assert report["counts"]["tools"] == 7  # listed with the version the server asked for


@pytest.mark.parametrize("mode, timeout", [("legacy-error", "10"), ("legacy-silent", "1"), ("legacy-exit", "10")])
def test_legacy_fallback_is_not_keyed_to_one_error(
    capsys: pytest.CaptureFixture[str], mode: str, timeout: str
) -> None:
    code, out, err = run_probe(capsys, "--target", fake(mode), "--json", "--timeout", timeout)
    assert code == 0, err
    report = orjson.loads(out)
    assert report["era"] == "legacy"
    assert report["versions"] == ["2025-11-25"] and report["serverInfo"] == {"name": "old", "version": "9"}
    assert report["counts"] == {"tools": 2, "resources": None, "prompts": None}
    expected = {
        "legacy-error": "server/discover: error -32000",
        "legacy-silent": "server/discover: no reply within 1 s",
        "legacy-exit": "server/discover: error -32000 'not initialized', then the process exited",
    }[mode]
    assert report["detection"].startswith(expected), report["detection"]


def test_banner_then_answers_is_probed_with_a_stdio_03_problem(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_probe(capsys, "--target", fake("banner"), "--no-dual")
    assert code == 0
    assert "problem:      STDIO-03: stdout carried a non-JSON line: 'My Server 1.0 ready on stdio'" in out
    assert out.strip().splitlines()[-1] == "probe: modern 2026-07-28, 7 tools, no resources, no prompts: PASS"


def test_probe_api_returns_a_result_and_fills_the_transcript() -> None:
    spec = parse_target(fake("paged"))
    transcript = spec.new_transcript()
    result = probe(spec, transcript=transcript, check_dual=False)
    assert result.era == "modern" and result.server_info == {"name": "fake", "version": "1"}
    methods = [e.message["method"] for e in transcript.sent()]
    assert methods == ["server/discover", "tools/list", "tools/list", "tools/list"]
    assert transcript.events[-1].kind in ("exit", "stderr")


# --- third-party servers (CI runs these) ---


def _require(condition: bool, reason: str) -> None:
    if condition:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI must install it: bash .ci/install-servers.sh)")
    pytest.skip(reason)


def _target(server: ServerSpec, transport: str) -> str:
    if server.runtime == "node":
        _require(npm_packages_installed(), f"{server.name} is not installed in tests/servers/node_modules")
        _require(node_binary() is not None, "no Node >= 22 found")
    else:
        try:
            import mcp  # noqa: F401
        except ImportError:
            _require(False, "the Python SDK (mcp==2.3.0) is not installed")
    return server.stdio_target() if transport == "stdio" else server.http_spawn_target()


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_python_sdk_server_is_modern(capsys: pytest.CaptureFixture[str], transport: str) -> None:
    target = _target(SDK, transport)
    code, out, err = run_probe(capsys, "--target", target, "--json", "--timeout", "20")
    assert code == 0, err
    report = orjson.loads(out)
    # The SDK answers server/discover (modern) and, on a fresh process or request, also the
    # legacy handshake: it is dual-era, which includes modern.
    assert report["detection"].startswith("server/discover answered")
    assert report["era"] == "dual" and report["legacy"]["protocolVersion"] == wire.LEGACY_VERSION
    assert report["versions"] == [wire.MODERN_VERSION]
    assert report["counts"] == {"tools": 2, "resources": 1, "prompts": 1}
    code, out, _ = run_probe(capsys, "--target", target, "--no-dual", "--timeout", "20")
    assert code == 0 and out.strip().splitlines()[-1] == "probe: modern 2026-07-28, 2 tools, 1 resource, 1 prompt: PASS"


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_server_everything_is_legacy(capsys: pytest.CaptureFixture[str], transport: str) -> None:
    target = _target(EVERYTHING, transport)
    code, out, err = run_probe(capsys, "--target", target, "--json", "--timeout", "20")
    assert code == 0, err
    report = orjson.loads(out)
    assert report["era"] == "legacy"
    assert report["versions"] == [wire.LEGACY_VERSION]
    assert report["serverInfo"]["name"]
    assert all(report["counts"][k] > 0 for k in ("tools", "resources", "prompts"))
