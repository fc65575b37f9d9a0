"""The probes of issue 10 item 2 through the command a user runs: progress (PROG-*), logging
(LOG-*), self-reported clientInfo (META-08), `Mcp-Param-*` headers (HDR-08) and cancellation
(CAN-04, CAN-06; stdio only, since an HTTP client cancels by closing the stream) and
`subscriptions/listen` (SUB-02..05: over stdio cancelled with a notification, over HTTP its SSE
stream closed by the harness; SUB-08: a stdio server shut down with a listen open).

Each probe is sent by the coverage phase of every campaign (no `--mutations` needed): the
reference server draws nothing from them over either transport (silence), each one-bug mutant
is reported under its rule at the strength DIGEST gives (firing), and the coverage counts name
every probe as tried.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from fuzz_support import reference_http, reference_stdio, run_cli

PROBES = {
    "valid": {"progress-none", "progress-token-str", "progress-token-int", "log-level-none", "log-level-emergency",
              "cancel-in-flight", "cancel-unknown-request", "listen-then-cancel", "listen-then-shutdown"},
    "history": {"client-info-absent", "client-info-other"},
    "framing": {"hdr-param-missing", "hdr-param-mismatch"},
}
# (bug, transport) -> (property, the one (rule, strength) it must draw)
FIRING = {
    ("progress-without-token", "stdio"): ("valid", ("PROG-01", "MUST")),
    ("progress-not-increasing", "http"): ("valid", ("PROG-02", "MUST")),
    ("progress-after-response", "http"): ("valid", ("PROG-03", "MUST")),
    ("log-without-level", "stdio"): ("valid", ("LOG-01", "MUST")),
    ("log-below-level", "http"): ("valid", ("LOG-02", "SHOULD")),
    ("client-info-required", "http"): ("history", ("META-08", "SHOULD")),
    ("param-header-unchecked", "http"): ("framing", ("HDR-08", "MUST")),
    ("cancel-echo", "stdio"): ("valid", ("CAN-06", "MUST")),
    ("listen-id-as-string", "stdio"): ("valid", ("SUB-04", "MUST")),
    ("listen-id-as-string", "http"): ("valid", ("SUB-04", "MUST")),
    ("listen-end-id-as-string", "stdio"): ("valid", ("SUB-08", "MUST")),
}


def _campaign(tmp_path: Path, transport: str, props: str, examples: int, *bugs: str) -> tuple[int, dict]:
    make = reference_stdio if transport == "stdio" else reference_http
    out = tmp_path / "out"
    proc = run_cli("fuzz", "--target", make(tmp_path / "s.sqlite3", *bugs), "--properties", props,
                   "--max-examples", str(examples), "--seed", "4", "--shrink-time", "5", "--out", str(out),
                   "--progress", "never")
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc.returncode, orjson.loads((out / "findings.json").read_bytes())


@pytest.mark.parametrize(("bug", "transport"), sorted(FIRING), ids=[f"{b}-{t}" for b, t in sorted(FIRING)])
def test_each_probe_finds_its_mutant_under_its_rule(bug: str, transport: str, tmp_path: Path) -> None:
    prop, wanted = FIRING[bug, transport]
    # As few examples as the coverage phase needs (framing: ~65 probes, 3 to an example): the
    # probe, not random luck, finds the bug.
    status, index = _campaign(tmp_path, transport, prop, 30 if prop == "framing" else 12, bug)
    found = {(f["rule"], f["strength"]) for f in index["findings"]}
    assert status == 1 and found == {wanted}, found


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_probes_are_sent_and_silent_on_the_reference_server(transport: str, tmp_path: Path) -> None:
    status, index = _campaign(tmp_path, transport, "valid,history,framing", 150)
    assert status == 0 and index["findings"] == [], index["findings"]
    not_tried = {o["probe"]: o["why"] for o in index["coverage"]["not_applied"]}
    for names in PROBES.values():
        for name in names:
            if transport == "stdio" and name.startswith("hdr-param"):
                assert "http" in not_tried[name]  # an HTTP-only probe says why it was not sent
            elif transport == "http" and name.startswith("cancel-"):
                assert "closing the stream" in not_tried[name]  # CAN-02: no notification over HTTP
            elif transport == "http" and name == "listen-then-shutdown":
                assert "not shut down" in not_tried[name]  # an HTTP server is not the client's to stop
            else:
                assert name not in not_tried, (name, not_tried.get(name))
    exercised = {"PROG-01", "PROG-02", "PROG-03", "LOG-01", "LOG-02", "META-08",
                 "SUB-03", *(("CAN-04", "CAN-06", "SUB-08") if transport == "stdio" else ("HDR-08",))}
    assert not exercised & set(index["coverage"]["rules_not_exercised"])
