"""`mcp-tempest catalogue` against real processes: token counts, the JSON, pages, the budget
gate, drift, untrusted text, both eras, bad targets.

Counts are o200k_base through bpe-openai (tiktoken would download its encoding); the ids below
are tiktoken's for o200k_base, as tiktoken-compatible test suites publish them. Every other
expected number is computed here from the definition text the issue specifies, never copied
from a run.
"""

from __future__ import annotations

import os
import re
import sys
import textwrap
from pathlib import Path

import orjson
import pytest
from fuzz_support import PYTHON, last_line, reference_stdio, run_cli
from servers.catalog import EVERYTHING, SDK, ServerSpec, node_binary, npm_packages_installed

from mcp_tempest.fuzz.catalogue import Catalogue, read
from mcp_tempest.fuzz.token_count import count_tokens, encode
from mcp_tempest.targets.reference import catalog
from mcp_tempest.targets.target_spec import default_target, parse_target

# o200k_base ids (tiktoken): text -> ids, ordinary encoding (a special token's spelling is text).
O200K_IDS = {
    "": [],
    "hello world": [24912, 2375],
    " 日本語とEnglish 12345!\n": [17428, 40909, 5330, 28881, 220, 7633, 2548, 4175],
    "\x1ca": [216, 64],
    "a\n\n": [64, 279],
    "<|endoftext|>": [27, 91, 419, 1440, 919, 91, 29],
    "a\ud800b": [64, 3251, 65],  # a lone surrogate, which JSON text may carry
}

# A modern server with five tools on three pages (the second cursor is "", a valid cursor);
# argv[1] "long" gives t0 a description far longer than its schema (TEXT-05).
PAGED = textwrap.dedent(
    """
    import json, sys
    TOOLS = [{"name": f"t{i}", "description": f"Tool number {i}.", "inputSchema": {"type": "object"},
              "annotations": {"title": "not counted"}, "_meta": {"not": "counted"}} for i in range(5)]
    TOOLS[4]["description"] = "Tool four, caf\\u00e9."
    if sys.argv[1] == "long":
        TOOLS[0]["description"] = "Search the archive by date and keyword, newest first. " * 40
    def out(rid, result):
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\\n"); sys.stdout.flush()
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        params = msg.get("params") or {}
        if msg["method"] == "server/discover":
            version = params["_meta"]["io.modelcontextprotocol/protocolVersion"]
            out(msg["id"], {"resultType": "complete", "supportedVersions": [version],
                            "capabilities": {"tools": {}}, "instructions": "Start with t0.",
                            "ttlMs": 0, "cacheScope": "public",
                            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "paged", "version": "1"}}})
        elif msg["method"] == "tools/list":
            start = {None: 0, "": 2, "p4": 4}[params.get("cursor")]
            result = {"resultType": "complete", "tools": TOOLS[start:start + 2], "ttlMs": 0, "cacheScope": "public"}
            if start < 4:
                result["nextCursor"] = "" if start == 0 else "p4"
            out(msg["id"], result)
        else:
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                                         "error": {"code": -32601, "message": "Method not found"}}) + "\\n")
            sys.stdout.flush()
    """
)


def paged(tmp_path: Path, mode: str = "plain") -> str:
    script = tmp_path / "paged_server.py"
    script.write_text(PAGED)
    return f"stdio:{PYTHON} {script} {mode}"


def catalogue(tmp_path: Path, *args: str) -> tuple[int, dict, str]:
    """`mcp-tempest catalogue --json ARGS`: exit status, the printed object, stderr."""
    run = run_cli("catalogue", "--json", "--out", str(tmp_path / "out"), *args, timeout=120)
    assert "Traceback" not in run.stderr, run.stderr
    return run.returncode, orjson.loads(run.stdout) if run.stdout.strip() else {}, run.stderr


def test_token_counts_are_tiktoken_o200k_base_ids_and_bpe_openais_own() -> None:
    import bpe_openai  # the public API the fast path skips: the same ids

    public = bpe_openai.get_encoding("o200k_base")
    for text, ids in O200K_IDS.items():
        assert encode(text) == ids == public.encode_ordinary(text), repr(text)
        assert count_tokens(text) == len(ids)
    definition = '{"name": "echo", "description": "Return the text \u00e9 \u200b", "inputSchema": {"type": "object"}}'
    assert encode(definition) == public.encode_ordinary(definition)


def test_json_counts_each_tool_as_name_description_input_schema_over_every_page(tmp_path: Path) -> None:
    code, doc, err = catalogue(tmp_path, "--target", paged(tmp_path), "--no-drift")
    assert code == 0, err
    assert doc["encoding"] == "o200k_base" and doc["era"] == "modern" and doc["truncated"] == []
    # The definition as the issue specifies it: those three keys in order, ", " and ": ", non-ASCII as itself.
    texts = {f"t{i}": f'{{"name": "t{i}", "description": "Tool number {i}.", "inputSchema": {{"type": "object"}}}}'
             for i in range(4)}
    texts["t4"] = '{"name": "t4", "description": "Tool four, café.", "inputSchema": {"type": "object"}}'
    assert sorted(t["name"] for t in doc["tools"]) == sorted(texts)  # all five, over three pages
    for tool in doc["tools"]:
        assert tool["tokens"] == count_tokens(texts[tool["name"]])
        assert tool["bytes"] == len(texts[tool["name"]].encode())
    assert [t["tokens"] for t in doc["tools"]] == sorted((t["tokens"] for t in doc["tools"]), reverse=True)
    assert doc["tools_tokens"] == sum(count_tokens(t) for t in texts.values())
    assert doc["instructions_tokens"] == count_tokens("Start with t0.")
    assert doc["total_tokens"] == doc["tools_tokens"] + doc["instructions_tokens"]
    # The headline: the tools as the one JSON list a host sends (not the per-tool sum) + the instructions.
    as_list = "[" + ", ".join(texts.values()) + "]"
    assert (doc["tools_list_tokens"], doc["tools_list_bytes"]) == (count_tokens(as_list), len(as_list.encode()))
    assert doc["turn_tokens"] == doc["tools_list_tokens"] + doc["instructions_tokens"]
    assert doc["on_demand_tokens"] == 0
    for key in ("tools_tokens", "instructions_tokens", "total_tokens", "turn_tokens", "tools_list_tokens"):
        assert type(doc[key]) is int
    assert all(type(t["tokens"]) is int and set(t) >= {"name", "tokens"} for t in doc["tools"])
    assert doc["findings"] == []
    # Cut at the page limit: a lower bound, said so.
    code, doc, _ = catalogue(tmp_path, "--target", paged(tmp_path), "--no-drift", "--max-pages", "2")
    assert code == 0 and doc["truncated"] == ["tools"] and len(doc["tools"]) == 4


def test_reference_catalogue_is_every_page_read_three_times_without_a_finding(tmp_path: Path) -> None:
    reading = read(default_target(), timeout=10, max_pages=20)
    sent = [e.message["method"] for e in reading.transcript.sent()]
    pages = -(-len(catalog.TOOLS) // catalog.TOOLS_PAGE_SIZE)
    assert pages > 1 and sent.count("tools/list") == 3 * pages  # twice on one process, once on a fresh one
    cat = Catalogue.from_probe(reading.first)
    assert sorted(c.name for c in cat.costs["tools"]) == sorted(t["name"] for t in catalog.TOOLS)
    run = run_cli("catalogue", "--out", str(tmp_path / "out"))
    assert run.returncode == 0, run.stderr
    demand = cat.tokens("resources") + cat.tokens("resourceTemplates") + cat.tokens("prompts")
    assert demand > 0 and cat.turn_tokens == cat.tools_list_cost.tokens + cat.instructions_cost.tokens
    assert re.fullmatch(rf"catalogue: {cat.turn_tokens} tokens every turn \(o200k_base; tools as one list \+ "
                        rf"instructions\), {cat.turn_bytes} bytes, \+ {demand} in resources, templates, prompts, "
                        rf"{len(catalog.TOOLS)} tools, modern 2026-07-28, 0 findings, 0 observations: PASS",
                        last_line(run.stdout)), run.stdout
    assert (f"every turn: {cat.turn_tokens} tokens, {cat.turn_bytes} bytes (tool definitions as one list "
            f"{cat.tools_list_cost.tokens} + instructions {cat.instructions_cost.tokens})") in run.stdout.splitlines()
    assert any(line.startswith(f"resources, templates, prompts (not sent every turn): {demand} tokens")
               for line in run.stdout.splitlines())
    rows = [line for line in run.stdout.splitlines() if line.startswith(("tool ", "template ", "prompt ",
                                                                         "resource ", "instructions "))]
    assert [int(r.split()[-2]) for r in rows] == sorted((int(r.split()[-2]) for r in rows), reverse=True)


def test_budget_gate_exits_1_with_one_line_naming_the_costliest(tmp_path: Path) -> None:
    target = reference_stdio(tmp_path / "ref.sqlite3")
    cat = Catalogue.from_probe(read(parse_target(target), timeout=10, max_pages=20, drift=False).first)
    # --max-tokens gates what the model pays every turn, not the resources, templates and prompts too.
    total, costliest = cat.turn_tokens, cat.costs["tools"][0]
    assert total < cat.total_tokens
    code, doc, err = catalogue(tmp_path, "--target", target, "--no-drift", "--max-tokens", str(total),
                               "--max-tool-tokens", str(costliest.tokens))
    assert code == 0 and err == "" and doc["over_budget"] is None  # at the limit is within it
    code, doc, err = catalogue(tmp_path, "--target", target, "--no-drift", "--max-tokens", str(total - 1),
                               "--max-tool-tokens", str(costliest.tokens - 1))
    assert code == 1 and err.count("\n") == 1 and err.strip() == doc["over_budget"]
    assert (f"every turn (tool definitions as one list + instructions) {total} tokens > --max-tokens {total - 1}"
            in err)
    assert f"over --max-tool-tokens {costliest.tokens - 1}: {costliest.name} {costliest.tokens}" in err
    assert f"(costliest: tool {costliest.name} {costliest.tokens}" in err


@pytest.mark.parametrize(("bug", "between"), [("catalogue-drift", "two reads on one process"),
                                              ("process-description", "two fresh processes")])
def test_drift_mutants_are_findings_of_the_list_rule(tmp_path: Path, bug: str, between: str) -> None:
    code, doc, _ = catalogue(tmp_path, "--target", reference_stdio(tmp_path / "m.sqlite3", bug))
    assert code == 1
    assert [(f["rule"], f["verdict"]) for f in doc["findings"]] == [("TOOL-02", "failure")]
    finding = doc["findings"][0]
    assert finding["title"] == f"catalogue drift: tools/list tool `echo` changed (description) between {between}"
    assert '"description"' in finding["detail"]
    assert (tmp_path / "out" / finding["repro"]).is_file()


def test_untrusted_text_is_flagged_with_its_span_and_fails_only_when_asked(tmp_path: Path) -> None:
    target = reference_stdio(tmp_path / "p.sqlite3", "poisoned-description")
    code, doc, _ = catalogue(tmp_path, "--target", target, "--no-drift")
    assert code == 0  # HEURISTIC observations
    spans = {f["rule"]: f["detail"] for f in doc["findings"] if f["verdict"] == "observation"}
    assert set(spans) == {"TEXT-01", "TEXT-02", "TEXT-03", "TEXT-04"} and len(doc["findings"]) == 4
    assert "\\u200b\\u202e" in spans["TEXT-01"] and "\\x1b[8m" in spans["TEXT-02"]
    assert "do not tell the user" in spans["TEXT-03"] and "call the send_email tool" in spans["TEXT-04"]
    assert all("tool echo: description" in f["title"] for f in doc["findings"])
    code, _, _ = catalogue(tmp_path, "--target", target, "--no-drift", "--fail-on", "heuristic")
    assert code == 1
    # A description far longer than its schema (TEXT-05), and only that one.
    code, doc, _ = catalogue(tmp_path, "--target", paged(tmp_path, "long"), "--no-drift")
    assert code == 0 and [(f["rule"], f["title"]) for f in doc["findings"]] == [
        ("TEXT-05", "untrusted text: a description far longer than its schema warrants in tool t0: description")]


def _require(spec: ServerSpec) -> None:
    missing = spec.runtime == "node" and (node_binary() is None or not npm_packages_installed())
    if spec.runtime == "python":
        try:
            import mcp  # noqa: F401
        except ImportError:
            missing = True
    if missing:
        reason = f"{spec.name} not installed: run bash .ci/install-servers.sh"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


@pytest.mark.slow  # starts third-party servers
@pytest.mark.parametrize("spec", [EVERYTHING, SDK], ids=lambda s: s.name)
def test_real_servers_are_measured_in_their_era_without_a_finding(tmp_path: Path, spec: ServerSpec) -> None:
    _require(spec)
    code, doc, err = catalogue(tmp_path, "--target", spec.stdio_target(), "--timeout", "20")
    assert code == 0, err
    assert doc["findings"] == [] and doc["failed"] == []  # no drift, no untrusted-text flag
    assert doc["tools"] and doc["total_tokens"] > doc["tools_tokens"] > 0
    if spec is EVERYTHING:  # 2025-11-25 only: discover refused, read through initialize, labelled so
        assert doc["era"] == "legacy" and doc["legacy"] is True and doc["version"] == "2025-11-25"
        assert doc["instructions_tokens"] > 0 and doc["resources"] and doc["prompts"]
        run = run_cli("catalogue", "--no-drift", "--target", spec.stdio_target(), "--out", str(tmp_path / "t"))
        assert "(legacy 2025-11-25 (initialize handshake, then the lists))" in run.stdout.splitlines()[0]
        readme = " ".join((Path(__file__).parent.parent / "README.md").read_text().split())
        assert (f"lists {len(doc['tools'])} tools for {doc['tools_list_tokens']:,} tokens as one list "
                f"({doc['tools_tokens']:,} summed per tool) and {doc['instructions_tokens']:,} tokens of instructions: "
                f"{doc['turn_tokens']:,} tokens every turn; its resources, templates and prompts add "
                f"{doc['on_demand_tokens']:,} more") in readme
    else:
        assert doc["era"] == "modern" and doc["legacy"] is False


@pytest.mark.parametrize("target", ["stdio:/no/such/server", "http://127.0.0.1:1/mcp", "ftp://example",
                                    f"stdio:{sys.executable} -c pass"])
def test_bad_targets_are_one_line_and_exit_2(tmp_path: Path, target: str) -> None:
    run = run_cli("catalogue", "--no-drift", "--timeout", "3", "--target", target, "--out", str(tmp_path / "o"))
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and run.stderr.startswith("catalogue: ")
    assert "Traceback" not in run.stderr
    # stdout: nothing for a target text refused outright, else the last line, saying why (fuzz/verdict_line.py)
    assert run.stdout == "" or (run.stdout.count("\n") == 1 and run.stdout.startswith("catalogue: not read, ")
                                and run.stdout.endswith(f": ERROR (unusable target: {run.stderr[11:-1]})\n")), run
    run = run_cli("catalogue", "--max-tokens", "-1")
    assert run.returncode == 2 and run.stderr == "catalogue: --max-tokens must be zero or more\n"


def test_every_fuzz_report_has_the_catalogue_from_the_campaigns_own_probe(tmp_path: Path) -> None:
    target = reference_stdio(tmp_path / "f.sqlite3")
    run = run_cli("fuzz", "--target", target, "--properties", "valid", "--max-examples", "2", "--seed", "1",
                  "--no-database", "--progress", "never", "--out", str(tmp_path / "fz"))
    assert run.returncode == 0, run.stdout + run.stderr
    cat = Catalogue.from_probe(read(parse_target(target), timeout=10, max_pages=20, drift=False).first)
    index = orjson.loads((tmp_path / "fz" / "findings.json").read_bytes())
    assert [c["total_tokens"] for c in index["catalogue"]] == [cat.total_tokens]
    assert [t["name"] for t in index["catalogue"][0]["tools"]] == [c.name for c in cat.costs["tools"]]
    summary = (tmp_path / "fz" / "summary.md").read_text()
    top = cat.everything()[0]
    assert f"### Catalogue of `{target}`" in summary and cat.summary_line() + "." in summary
    assert f"| tool {top.name} | {top.tokens} | {top.bytes} |" in summary
    assert f"<td>tool {top.name}</td><td>{top.tokens}</td>" in (tmp_path / "fz" / "report.html").read_text()


def test_a_long_list_is_counted_in_pieces_that_are_the_whole_text() -> None:
    """Tools as one list: counted exactly as one string up to LIST_CHUNK_CHARS; a longer list in
    pieces cut between items (the ids of a 10 MB list were over 100 MB of the harness)."""
    from mcp_tempest.fuzz.catalogue import LIST_CHUNK_CHARS, ListCount, _definition_json, measure_list
    from mcp_tempest.fuzz.token_count import count_tokens

    def _chunks(parts: list[str]) -> list[str]:  # the pieces a ListCount counts, in order
        pieces: list[str] = []
        count = ListCount(lambda piece: pieces.append(piece) or 0)
        for part in parts:
            count.add(part)
        count.cost("tools")
        return pieces

    small = [{"name": f"t{i}", "description": f"Tool number {i}."} for i in range(13)]
    whole = "[" + ", ".join(_definition_json("tools", t) for t in small) + "]"
    assert measure_list("tools", small).tokens == count_tokens(whole)
    assert measure_list("tools", small).bytes == len(whole.encode("utf-8"))
    big = [{"name": f"t{i}", "description": "x" * 60} for i in range(2 * LIST_CHUNK_CHARS // 80)]
    parts = [_definition_json("tools", t) for t in big]
    pieces = list(_chunks(parts))
    assert len(pieces) > 1 and "".join(pieces) == "[" + ", ".join(parts) + "]"
    assert all(len(p) <= LIST_CHUNK_CHARS + max(map(len, parts)) + 2 for p in pieces)
    assert list(_chunks([])) == ["[]"]
