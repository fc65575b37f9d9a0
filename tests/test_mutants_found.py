"""Every mutant of the reference server is found by the fuzzer, with a replayable reproduction.

For each bug `mcp-tempest serve --list-bugs` names that a campaign is to find (Mutant.found_by), one
short campaign runs the property aimed at it, with a fixed seed, against the mutant:
- `mcp-tempest fuzz` exits 1 and files a finding under one of the mutant's listed rule ids (the
  label is the duty a campaign reports, never only the rule the probe frame broke);
- the finding's reproduction is a transcript of a few frames;
- `mcp-tempest replay` on that file exits 1 against the mutant and 0 against the reference.
This is the fuzzer's own acceptance test: a bug it cannot find here it will not find elsewhere.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import orjson
import pytest
from fuzz_support import PYTHON, last_line, processes_mentioning, reference_http, reference_stdio

from mcp_tempest.fuzz.cli import main as cli_main
from mcp_tempest.targets.mutants import MUTANTS, found_by

# bug -> (transport, property aimed at it, examples, malformed frames for the framing property)
PLAN: dict[str, tuple[str, str, int, str]] = {
    "remembered-capabilities": ("stdio", "history", 30, ""),
    "memory-store": ("stdio", "handoff", 10, ""),
    "memory-request-state": ("stdio", "handoff", 10, ""),
    "null-id-accepted": ("stdio", "ids", 30, ""),
    "cross-wired-ids": ("http", "ids", 30, ""),
    "missing-result-type": ("stdio", "valid", 20, ""),
    "stdout-log": ("stdio", "valid", 20, ""),
    "unsigned-request-state": ("stdio", "mrtr", 60, ""),
    "list-input-required": ("stdio", "valid", 40, ""),
    "missing-meta-32601": ("stdio", "framing", 20, "meta-missing*"),
    "unsupported-version-no-data": ("stdio", "framing", 20, "meta-version-unsupported"),
    "exit-on-newline": ("stdio", "framing", 20, "blank-line"),
    "era-lock": ("stdio", "framing", 20, "meta-not-object"),
    "list-changes-after-call": ("stdio", "lists", 30, ""),
    "serverinfo-top-level": ("stdio", "valid", 20, ""),
    "reply-to-notification": ("stdio", "framing", 20, "unknown-notification"),
    "http-session-id": ("http", "valid", 20, ""),
    "http-200-header-mismatch": ("http", "framing", 20, "hdr-version-mismatch"),
    "http-200-unknown-method": ("http", "framing", 20, "unknown-method"),
    "http-get-200": ("http", "framing", 20, "http-*"),
    "tools-list-reordered": ("stdio", "lists", 30, ""),
    "tool-name-invalid": ("stdio", "lists", 30, ""),
    "structured-without-text": ("stdio", "valid", 20, ""),  # tools-after-list calls every tool once
    "optional-argument-required": ("http", "valid", 20, ""),
    "unknown-tool-is-error": ("stdio", "valid", 20, ""),
    "traceback-in-error": ("stdio", "valid", 20, ""),
    "progress-without-token": ("stdio", "valid", 20, ""),
    "progress-not-increasing": ("http", "valid", 20, ""),
    "progress-after-response": ("stdio", "valid", 20, ""),
    "log-without-level": ("http", "valid", 20, ""),
    "log-below-level": ("stdio", "valid", 20, ""),
    "client-info-required": ("stdio", "history", 20, ""),
    "param-header-unchecked": ("http", "framing", 20, "hdr-param-*"),
    "header-whitespace-refused": ("http", "framing", 20, "hdr-value-whitespace"),
    "cancel-echo": ("stdio", "valid", 20, ""),
    "listen-id-as-string": ("stdio", "valid", 20, ""),
    "listen-end-id-as-string": ("stdio", "valid", 20, ""),
    "auth-audience-unchecked": ("http+auth", "auth", 20, ""),
    "auth-expiry-unchecked": ("http+auth", "auth", 20, ""),
    "auth-signature-unchecked": ("http+auth", "auth", 20, ""),
    "auth-no-www-authenticate": ("http+auth", "auth", 20, ""),
    "auth-metadata-origin-resource": ("http+auth", "auth", 20, ""),
}
MAX_REPRO_FRAMES = 12


def listed_bugs() -> dict[str, set[str]]:
    out = subprocess.run([PYTHON, "-m", "mcp_tempest.fuzz.cli", "serve", "--list-bugs"], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    bugs: dict[str, set[str]] = {}
    for line in out.splitlines():
        name, rules = (line.strip().split("\t") + [""])[:2]  # name, rule ids, transport, description
        if name:
            bugs[name] = {r.strip() for r in rules.replace(",", " ").split() if r.strip()}
    return bugs


BUGS = listed_bugs()


def test_every_listed_bug_has_a_plan() -> None:
    assert set(BUGS) == set(MUTANTS), "--list-bugs and the registry disagree"
    assert set(found_by("fuzz")) == set(PLAN), "a mutant was added or removed: give it a plan here"


@pytest.mark.parametrize("bug", sorted(PLAN))
def test_mutant_is_found_and_replayable(bug: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    transport, prop, examples, mutations = PLAN[bug]
    db = tmp_path / "server.sqlite3"
    make = reference_stdio if transport == "stdio" else reference_http
    if transport == "http+auth":  # the harness is the server's authorization server (--auth, {issuer})
        def make(db: Path, *bugs: str) -> str:
            return reference_http(db, *bugs).replace(" --db", " --auth-issuer {issuer} --db", 1)
    target = make(db, bug)
    out = tmp_path / "out"
    # In this process (the console script's own entry point): the oracle's schemas load once per
    # test session instead of once per mutant, which keeps the file within its time budget.
    status = cli_main(["fuzz", "--target", target, "--properties", prop, "--max-examples", str(examples),
                       "--seed", "20260728", "--out", str(out), "--database", str(tmp_path / "hypothesis-db"),
                       "--shrink-time", "4", "--first-finding", "--progress", "never", "--fail-on", "heuristic",
                       *(["--mutations", mutations] if mutations else []),
                       *(["--auth"] if transport == "http+auth" else [])])
    printed = capsys.readouterr()
    assert status == 1, f"exit {status}\n{printed.out}\n{printed.err}"
    assert re.fullmatch(r"fuzz: \d+ examples?, \d+ propert(y|ies), [1-9]\d* findings?(, \d+ observations?)?: "
                        r"FAIL \(\d+ findings?: [A-Z0-9, -]+\)",
                        last_line(printed.out)), printed.out
    assert not processes_mentioning(str(db)), "the campaign left a server process running"

    index = orjson.loads((out / "findings.json").read_bytes())
    wanted = BUGS[bug]
    # The label `serve --list-bugs` prints is the duty the finding is filed under, not the rule the
    # probe frame broke (STDIO-02 for a blank line): a campaign checked against the list matches.
    matching = [f for f in index["findings"] if f["rule"] in wanted]
    assert matching, f"no finding under {sorted(wanted)}: {[(f['rule'], f['title']) for f in index['findings']]}"
    finding = min(matching, key=lambda f: len(orjson.loads((out / f["repro"]).read_bytes())["transcript"]["events"]))
    repro_path = out / finding["repro"]
    repro = orjson.loads(repro_path.read_bytes())
    sent = [e for e in repro["transcript"]["events"] if e["kind"] == "send"]
    assert 1 <= len(sent) <= MAX_REPRO_FRAMES, f"{len(sent)} frames in the reproduction"
    # a finding of the coverage phase has no Hypothesis blob: its case is the reproduction
    assert repro["reproduce_blob"] or "coverage phase" in repro.get("note", ""), repro.get("note")
    assert repro["property"] == prop and repro["target"] == target

    assert cli_main(["replay", str(repro_path), "--show"]) == 1, capsys.readouterr().out
    fixed = make(tmp_path / "reference.sqlite3")
    assert cli_main(["replay", str(repro_path), "--target", fixed, "--show"]) == 0, capsys.readouterr().out
    assert not processes_mentioning(str(tmp_path)), "a replay left a server process running"
