"""Run the campaigns against the real example servers and regenerate what the README says of them.

    python tests/real_servers/regenerate.py            # run every campaign, rewrite the outputs
    python tests/real_servers/regenerate.py --check    # the README section is what findings.json renders

Why a script: the README's table "What mcp-tempest finds in real servers" is a claim about
servers nobody here wrote, so it must be what `mcp-tempest fuzz` found, never prose typed by
hand. Each campaign below is a plain `mcp-tempest fuzz` with a fixed seed and budget, run from
the project root against the example servers of `tests/servers/` (installed by
`bash .ci/install-servers.sh`). What it finds becomes, per bug of each server (findings grouped as
`fuzz` groups them: the server's duty broken and its reaction; not by probe, method, transport or
campaign),
one replay file in `tests/real_servers/repro/` (the smallest; gzip-compressed when large), one
entry in `tests/real_servers/findings.json` listing every method, transport and campaign where it
was seen, and one row of the README section between `<!-- real-servers:begin -->` and
`<!-- real-servers:end -->`.

The replay files name their target the way a fresh clone can start it: paths relative to the
project root, `python` from PATH (the activated environment) and node through
`tests/servers/run_node.py`, which finds a Node >= 22 at run time; their recorded working
directory is the project root as a path relative to the file (`../../..`) and their recorded
timeouts are the campaigns' (--timeout 20). So every command in the README works as printed
from the project root after the quick start's second command, and judges as the campaign did.

To regenerate (about 15 minutes; every campaign): `python tests/real_servers/regenerate.py`.
One campaign, outputs untouched: `python tests/real_servers/regenerate.py --only NAME --keep DIR`.

`CAMPAIGNS` is also what `tests/test_real_servers.py` runs: each campaign lists the deviations
(rule, strength, mutation) it must find, and those that it must never report. Over all campaigns
the verdicts (server, rule, reaction, strength) must be those of `expected.json`, judged by hand:
a run that differs prints the lines that changed and counts them as problems, and the file is
only ever updated by a person who has read the transcripts.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "tests" / "real_servers"
REPRO_DIR = HERE / "repro"
FINDINGS = HERE / "findings.json"
README = ROOT / "README.md"
BEGIN = "<!-- real-servers:begin -->"
END = "<!-- real-servers:end -->"
GZIP_ABOVE = 1 << 20  # replay files larger than this are stored gzip-compressed
STRENGTH_ORDER = {"MUST": 0, "SHOULD": 1, "HEURISTIC": 2}
# A shared requestState key for the TypeScript fixture: without it the fixture itself (not the
# SDK, whose default does not protect the state at all) would draw a key per process.
TS_STATE_KEY = "tempest-shared-request-state-key-0001"
CAMPAIGN_TIMEOUT = 20.0  # every campaign's --timeout: third-party servers start slowly

sys.path.insert(0, str(ROOT / "tests" / "servers"))
import catalog  # noqa: E402 - the example servers' command lines, found beside this script

# Why each finding has the strength it has, checked against DIGEST (section and rule ids are
# DIGEST's). Keyed by (rule, strength, mutation); every committed finding must have an entry, so
# nothing reaches the README that was not read against the spec first.
WHY: dict[tuple[str, str, str | None], str] = {
    ("RPC-01", "SHOULD", "truncated-json"):
        "invalid JSON is dropped without a -32700. MCP messages are JSON-RPC 2.0 (RPC-01), which answers "
        "a parse error; DIGEST restates the format, not the duty to answer, so silence is a SHOULD",
    ("RPC-01", "SHOULD", "jsonrpc-missing"):
        'a request without "jsonrpc": "2.0" (RPC-01) is dropped without a -32600; serving it would be '
        "the MUST",
    # Silence toward a frame that breaks a client-side rule (RPC-03, RPC-04) is filed under the
    # server's own duty: JSON-RPC 2.0's error response, which RPC-01 brings in.
    ("RPC-01", "SHOULD", "id-float"):
        "a request with a fractional id (the probe breaks RPC-03, a client rule: a string or an integer) "
        "is dropped without the -32600 JSON-RPC 2.0 answers (RPC-01), graded like the null id",
    ("RPC-01", "SHOULD", "id-null"):
        "a request with a null id (the probe breaks RPC-04, a client rule) is dropped without the -32600 "
        "JSON-RPC 2.0 answers (RPC-01); serving it would be the MUST",
    # Found by the example-server seed sweep (tests/benchmarks/bench_example_sweep.py): the same
    # silent drop as truncated-json, toward every frame the SDK's reader cannot parse or validate.
    **{("RPC-01", "SHOULD", m): f"a frame that is not valid JSON ({what}) is dropped without the -32700 "
       "JSON-RPC 2.0 answers (RPC-01); DIGEST restates the format, not the duty to answer, so SHOULD"
       for m, what in (("non-json-text", "plain text"), ("nul-byte", "a raw NUL in a string"),
                       ("cr-in-string", "a raw CR in a string"),
                       ("embedded-newline", "a raw LF splits it over two lines, neither of them JSON"))},
    **{("RPC-01", "SHOULD", m): f"a request whose envelope is invalid ({what}) is dropped without the "
       "-32600 JSON-RPC 2.0 answers (RPC-01); serving it would be the MUST"
       for m, what in (("jsonrpc-wrong", 'jsonrpc is not "2.0"'), ("method-non-string", "method is not a string"),
                       ("id-boolean", "a boolean id, which breaks RPC-03"), ("id-object", "an object id (RPC-03)"),
                       ("id-array", "an array id (RPC-03)"))},
    **{("RPC-01", "HEURISTIC", m): f"a frame a lenient reader could serve ({what}) is neither served nor "
       "refused: silence where JSON-RPC 2.0 wants an answer; DIGEST does not say which reading is right, so "
       "a heuristic (an observation, not a failure)"
       for m, what in (("bom-prefix", "a UTF-8 byte order mark first"),
                       ("cr-whitespace", "a raw CR between tokens, which a CR-as-newline reader splits"),
                       ("trailing-garbage", "a valid frame with non-whitespace after it"),
                       ("two-frames-one-line", "two requests on one line"))},
    ("RPC-01", "MUST", None):
        "a request was never answered: the process exited by itself first (JSON-RPC 2.0, via RPC-01, "
        "answers every request)",
    ("RPC-01", "SHOULD", None):
        "a request got no answer within the campaign's deadline (JSON-RPC 2.0, via RPC-01, answers every "
        "request; the deadline is the harness's, so SHOULD)",
    ("META-04", "SHOULD", "meta-not-object"):
        "a request whose _meta is not an object (no schema of either era accepts it, so the required "
        "protocolVersion is missing) gets no answer; META-04 owes -32602 in every era, and silence rather "
        "than service is the SHOULD",
    ("MRTR-05", "MUST", None):
        "input_required asks elicitation/create of a request that declared no elicitation capability "
        "(MRTR-05 MUST NOT; -32021, META-05, is the answer)",
    ("SL-3", "SHOULD", None):
        "an MRTR round-trip begun on one process is refused (-32602) by a fresh one: the requestState key "
        "is drawn per process, and DIGEST 15.3 says a server SHOULD NOT require reusing a process",
    ("RPC-01", "HEURISTIC", "huge-frame"):
        "one 11 MiB line makes the process close and exit with status 0, the request unanswered; DIGEST "
        "sets no size limit, so a server may refuse a frame that large, but should say so and stay up: "
        "a robustness finding",
    ("MRTR-14", "SHOULD", "state-foreign"):
        "a requestState minted for one request completes a request with other arguments: the state is "
        "not bound to its originating request (MRTR-14 SHOULD)",
    ("MRTR-10", "HEURISTIC", "state-missing"):
        "a retry that leaves out the requestState it was given (the probe breaks MRTR-10, a client rule) "
        "is served although questions the server asked are still unanswered; DIGEST states no server "
        "reaction, so an observation",
    ("SL-2", "MUST", None):
        "after one request whose _meta is not an object, the process refuses every valid 2026-07-28 request "
        "(-32600, \"this connection serves the handshake protocol era\") that a fresh process serves: the "
        "process keeps context from an earlier request (SL-2 MUST NOT; DIGEST 15)",
    ("META-01", "MUST", None):
        "after serving requests with a supported protocolVersion, the process accepts an unsupported one "
        "that a fresh process refuses with -32022: earlier requests on the connection set the version "
        "(META-01 MUST NOT)",
    ("MRTR-14", "SHOULD", None):
        "a requestState minted for one request completes a request with other arguments: the state is "
        "not bound to its originating request (MRTR-14 SHOULD)",
    ("SUB-08", "HEURISTIC", None):
        "with a listen stream open, stdin closed: the process exits without a SubscriptionsListenResult "
        "or a notifications/cancelled for it; SUB-08 asks for one at a shutdown, SUB-09 calls a closed "
        "transport an abrupt end, so an observation",
    ("TOOL-09", "SHOULD", None):
        "a call of a tool the server did not list (after a complete tools/list) is answered with an isError "
        "result instead of a JSON-RPC error: DIGEST TOOL-09 makes an unknown tool a protocol error in spec "
        "prose, and CallToolResult.isError says finding the tool 'should' be an MCP error, lower case: SHOULD",
    ("ERR-LEGACY", "SHOULD", None):
        "an error in the legacy implementation-defined range -32000..-32019 (a cancelled listen answered "
        "-32000 'Connection closed'): DIGEST's error table says new implementations SHOULD NOT use it",
}


def probe_of(finding: dict[str, Any]) -> str | None:
    """The probe (mutation) that provoked a finding; older files name only the mutation."""
    return finding.get("probe") or finding.get("mutation")


def probes_of(finding: dict[str, Any]) -> set[str]:
    """Every probe that provoked a finding: one finding is one behaviour, and lists the probes
    that reach it (`probes`); its own `probe` is only that of its smallest reproduction."""
    listed = {p["probe"] for p in finding.get("probes") or [] if isinstance(p, dict) and p.get("probe")}
    return listed | ({probe_of(finding)} - {None})  # type: ignore[arg-type]


@dataclass(frozen=True)
class Expected:
    """A deviation a campaign must report: the server's duty broken (`rule`), its strength and,
    when it is the reaction to one malformed frame, the probe (`mutation`) and the rule that frame
    breaks (`probe_rule`, a client duty)."""

    rule: str
    strength: str
    mutation: str | None = None
    probe_rule: str | None = None

    def matches(self, finding: dict[str, Any]) -> bool:
        if finding["strength"] != self.strength or (self.mutation is not None and self.mutation not in probes_of(finding)):
            return False
        if finding.get("probe_rule") is None and self.probe_rule is not None:
            # An oracle that still files the reaction under the probe's rule (no probe_rule).
            return finding["rule"] in (self.rule, self.probe_rule)
        return finding["rule"] == self.rule


def why(finding: dict[str, Any]) -> str:
    rule, strength, probe = finding["rule"], finding["strength"], probe_of(finding)
    return WHY.get((rule, strength, probe), WHY.get((rule, strength, None), ""))


@dataclass(frozen=True)
class Campaign:
    """One `mcp-tempest fuzz` run: which server, how, with what budget, and what it must find."""

    name: str
    server: str  # a tests/servers/catalog.py name
    transport: str  # "stdio" or "http"
    properties: tuple[str, ...]
    max_examples: int
    seed: int
    mutations: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()  # arguments for the server, after its script
    expected: tuple[Expected, ...] = ()
    never: tuple[str, ...] = ()  # rule ids this campaign must not report
    shrink_seconds: float = 2.0
    first_finding: bool = False  # stop at the first failure (shrunk): one probe, one finding
    probe: bool = False  # record what `mcp-tempest probe` says of the target (its era)
    legacy: bool = False  # a legacy-era server: fuzz stops with a message or reports era-free rules only

    @property
    def spec(self) -> catalog.ServerSpec:
        return catalog.ALL[self.server]

    def target(self) -> str:
        if self.transport == "stdio":
            return self.spec.portable_stdio_target(*self.extra)
        return self.spec.portable_http_spawn_target(*self.extra)

    def argv(self, out: Path) -> list[str]:
        args = ["fuzz", "--target", self.target(), "--properties", ",".join(self.properties),
                "--max-examples", str(self.max_examples), "--seed", str(self.seed), "--out", str(out),
                "--no-database", "--progress", "never", "--shrink-time", str(self.shrink_seconds),
                "--timeout", f"{CAMPAIGN_TIMEOUT:g}"]
        if self.mutations:
            args += ["--mutations", ",".join(self.mutations)]
        if self.first_finding:
            args.append("--first-finding")
        return args


SEED = 20261130
# One framing campaign per silent drop: Hypothesis stops generating soon after its first failures,
# so a campaign that mixes several malformed frames finds whichever comes first; one frame kind per
# campaign makes the first (simplest) example the probe, and a second example is plenty.
# (A batch array is no campaign: DIGEST leaves the reply to one UNSPEC, RPC-11, so it is never a finding.)
DROPS = (("truncated-json", Expected("RPC-01", "SHOULD", "truncated-json")),
         ("jsonrpc-missing", Expected("RPC-01", "SHOULD", "jsonrpc-missing")))
HUGE = ("huge-frame", Expected("RPC-01", "HEURISTIC", "huge-frame"))
# The server's duty toward a frame it cannot serve is JSON-RPC 2.0's error response (RPC-01); the
# null id is what the probe frame breaks (RPC-04, a client duty).
NULL_ID = Expected("RPC-01", "SHOULD", "id-null", probe_rule="RPC-04")
MRTR_05 = Expected("MRTR-05", "MUST")
SL_3 = Expected("SL-3", "SHOULD")
# The era lock: after a request whose _meta is not an object, a process of the Python SDK refuses
# every valid 2026-07-28 request (-32600 "this connection serves the handshake protocol era").
SL_2 = Expected("SL-2", "MUST")
# The TypeScript SDK takes its first modern request's version as the process's: a later request
# with an unsupported version is served, where a fresh process answers -32022.
META_01 = Expected("META-01", "MUST")


def _modern(server: str, *, extra: tuple[str, ...] = (), mrtr: tuple[Expected, ...] = (),
            never: tuple[str, ...] = (), huge: bool = False, mrtr_examples: int = 8,
            era: tuple[Expected, ...] = ()) -> tuple[Campaign, ...]:
    """The stdio campaigns of one modern server: each silent drop, the era lock (a bad `_meta`,
    then valid requests on that process), id discipline with valid calls (a warm process: cheap),
    then the cross-process handoff and MRTR conversations (fresh processes: costly, so few
    examples; their first examples are the probes that matter)."""
    frames = (*DROPS, HUGE) if huge else DROPS
    return (
        *(Campaign(f"{server}-stdio-{mutation}", server, "stdio", ("framing",), 2, SEED, mutations=(mutation,),
                   extra=extra, expected=(expected,), never=never, first_finding=True)
          for mutation, expected in frames),
        Campaign(f"{server}-stdio-era", server, "stdio", ("framing",), 2, SEED, mutations=("meta-not-object",),
                 extra=extra, expected=era, never=never, first_finding=True),
        Campaign(f"{server}-stdio-ids", server, "stdio", ("ids", "valid"), 40, SEED, extra=extra,
                 expected=(NULL_ID,), never=(*never, "RPC-05", "RPC-04", "RPC-11"), shrink_seconds=3.0),
        Campaign(f"{server}-stdio-mrtr", server, "stdio", ("handoff", "mrtr"), mrtr_examples, SEED, extra=extra,
                 expected=mrtr, never=never),
    )


# HDR-02's exception lets a server that still serves pre-2025-06-18 clients read a request without
# MCP-Protocol-Version as 2025-03-26: never a finding against such a (dual-era) server.
NEVER_HTTP = ("HDR-02",)

CAMPAIGNS: tuple[Campaign, ...] = (
    *_modern("python-sdk", mrtr=(MRTR_05, SL_3), era=(SL_2,)),
    *_modern("fastmcp", mrtr=(MRTR_05, SL_3), era=(SL_2,)),
    # The TypeScript SDK checks the capability itself and, with the shared key, keeps state across
    # processes: MRTR-05 and SL-3 must not appear. Its processes start fast: more MRTR examples.
    *_modern("typescript-sdk", extra=("--state-key", TS_STATE_KEY), never=("MRTR-05", "SL-3", "SL-2"), huge=True,
             mrtr_examples=30),
    Campaign("typescript-sdk-stdio-history", "typescript-sdk", "stdio", ("history",), 20, SEED,
             extra=("--state-key", TS_STATE_KEY), expected=(META_01,), never=("SL-2",)),
    # A 2026-07-28 body without MCP-Protocol-Version (HDR-02), then valid calls over HTTP.
    Campaign("python-sdk-http", "python-sdk", "http", ("framing", "valid"), 12, SEED,
             mutations=("hdr-version-missing",), never=NEVER_HTTP, probe=True),
    Campaign("server-everything-stdio", "server-everything", "stdio", ("framing", "ids"), 10, SEED, legacy=True,
             probe=True),
)
SERVER_ORDER = ("python-sdk", "fastmcp", "typescript-sdk", "server-everything")


# --- running ---


def server_versions() -> dict[str, dict[str, str]]:
    """The package and version each example server runs on, read from what is installed."""

    def py(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    def npm(name: str) -> str:
        try:
            return json.loads((catalog.NODE_MODULES / name / "package.json").read_text())["version"]
        except (OSError, ValueError, KeyError):
            return "not installed"

    return {
        "python-sdk": {"label": "Python SDK", "package": "mcp", "version": py("mcp")},
        "fastmcp": {"label": "fastmcp", "package": "fastmcp", "version": py("fastmcp")},
        "typescript-sdk": {"label": "TypeScript SDK v2", "package": "@modelcontextprotocol/server",
                           "version": npm("@modelcontextprotocol/server")},
        "server-everything": {"label": "server-everything (legacy)",
                              "package": "@modelcontextprotocol/server-everything",
                              "version": npm("@modelcontextprotocol/server-everything")},
    }


def child_env() -> dict[str, str]:
    """This interpreter's directory first on PATH, so the `python` a target names is this one."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


@dataclass
class Outcome:
    campaign: Campaign
    status: int
    stdout: str
    stderr: str
    seconds: float
    out: Path
    index: dict[str, Any] = field(default_factory=dict)

    @property
    def findings(self) -> list[dict[str, Any]]:
        return list(self.index.get("findings", []))


def run_campaign(campaign: Campaign, out: Path, *, timeout: float = 900.0) -> Outcome:
    """`mcp-tempest fuzz` as a user runs it, from the project root."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "mcp_tempest.fuzz.cli", *campaign.argv(out)], cwd=ROOT, env=child_env(),
                          capture_output=True, text=True, timeout=timeout, check=False)
    index_path = out / "findings.json"
    index = json.loads(index_path.read_text()) if index_path.is_file() else {}
    return Outcome(campaign, done.returncode, done.stdout, done.stderr, time.monotonic() - started, out, index)


def probe_era(campaign: Campaign) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "mcp_tempest.fuzz.cli", "probe", "--target", campaign.target(), "--json",
                           "--timeout", f"{CAMPAIGN_TIMEOUT:g}"], cwd=ROOT, env=child_env(), capture_output=True, text=True,
                          timeout=120, check=False)
    try:
        return json.loads(done.stdout)
    except ValueError:
        return {"era": None, "error": done.stderr.strip()[-300:]}


def group_key(row: dict[str, Any]) -> tuple[str, str, str]:
    """One bug of one server: its rule and the server's reaction, as `mcp-tempest fuzz` groups a
    campaign's findings (`Evidence.group_key`). A row of an older campaign (no `reaction`) is keyed
    by its probe or, without one, its behaviour. Method, transport, campaign and (with a reaction)
    probe are where and how it was seen, not what it is."""
    if row.get("reaction"):
        return (row["server"], row["rule"], f"behaviour:{row['reaction']}")
    probe = probe_of(row)
    return (row["server"], row["rule"], f"probe:{probe}" if probe else f"behaviour:{row['title']}")


# --- the expected verdicts (the corpus) ---

EXPECTED = HERE / "expected.json"


def verdict_key(row: dict[str, Any]) -> tuple[str, str, str, str]:
    """What the corpus pins of one bug: the server, the duty, the reaction (`group_key`'s third
    part) and the strength. Where and how often it was seen may change; these may not."""
    server, rule, reaction = group_key(row)
    return (server, rule, reaction, row["strength"])


def found_verdicts(outcomes: list[Outcome]) -> set[tuple[str, str, str, str]]:
    """The bugs a set of campaigns found, merged per server as findings.json merges them (one bug
    seen at two strengths counts at the stronger)."""
    rows = [{"server": o.campaign.server, "rule": f["rule"], "strength": f["strength"], "title": f["title"],
             "reaction": f.get("reaction"), "probe": probe_of(f), "mutation": f.get("mutation")}
            for o in outcomes for f in o.findings]
    strongest: dict[tuple[str, str, str], str] = {}
    for r in rows:
        key = group_key(r)
        if key not in strongest or STRENGTH_ORDER.get(r["strength"], 9) < STRENGTH_ORDER.get(strongest[key], 9):
            strongest[key] = r["strength"]
    return {(*key, strength) for key, strength in strongest.items()}


def expected_verdicts() -> dict[tuple[str, str, str, str], str]:
    """The checked-in corpus: each expected bug with the note of the person who judged it."""
    doc = json.loads(EXPECTED.read_text())
    return {(server, e["rule"], f"behaviour:{e['reaction']}", e["strength"]): e["judged"]
            for server, entries in doc["servers"].items() for e in entries}


def verdict_diff(found: set[tuple[str, str, str, str]], expected: set[tuple[str, str, str, str]]) -> list[str]:
    """Lines saying what changed against the corpus: a bug no longer found, a bug not in it."""
    def show(k: tuple[str, str, str, str]) -> str:
        server, rule, reaction, strength = k
        return f"{server}: {strength} {rule} {reaction.removeprefix('behaviour:')}"

    return ([f"lost:  {show(k)}" for k in sorted(expected - found)]
            + [f"added: {show(k)}" for k in sorted(found - expected)])


def probe_counts(row: dict[str, Any]) -> dict[str, int]:
    """The probes that provoked a finding, with their counts (a finding of an older campaign: its one
    probe)."""
    listed = {p["probe"]: int(p.get("count") or 0) for p in row.get("probes") or [] if isinstance(p, dict)}
    probe = probe_of(row)
    return listed or ({probe: int(row.get("count") or 0)} if probe else {})


def portable_repro(doc: dict[str, Any]) -> dict[str, Any]:
    """A replay file as committed: run from the project root (the campaigns' directory), named
    relative to the file so any clone replays it; the command as the target names it (no path of
    this machine); the campaigns' timeouts (a file from before they were recorded gets them)."""
    out = dict(doc)
    out["cwd"] = os.path.relpath(ROOT, REPRO_DIR)
    target = str(doc.get("target") or "")
    out["command"] = shlex.split(target.split(":", 1)[1]) if target.startswith(("stdio:", "http+spawn:")) else None
    out.setdefault("timeouts", {"answer": CAMPAIGN_TIMEOUT, "start": CAMPAIGN_TIMEOUT})
    return out


def write_repro(name: str, doc: dict[str, Any]) -> str:
    """Write one committed replay file (gzip when large); returns its path from the project root."""
    raw = json.dumps(portable_repro(doc), indent=2).encode()
    if len(raw) > GZIP_ABOVE:
        name = name.removesuffix(".gz") + ".gz"
        (REPRO_DIR / name).write_bytes(gzip.compress(raw, compresslevel=9, mtime=0))
    else:
        name = name.removesuffix(".gz")
        (REPRO_DIR / name).write_bytes(raw)
    return f"tests/real_servers/repro/{name}"


def group_rows(rows: list[dict[str, Any]], size: Any) -> list[dict[str, Any]]:
    """Merge per-campaign rows into one row per bug of each server: lists where it was seen,
    sums the counts, keeps the strongest strength and the smallest reproduction (`size(row)`)."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(group_key(r), []).append(r)
    out = []
    for members in groups.values():
        best = min(members, key=lambda r: (0 if r.get("confirmed", True) else 1, size(r)))
        merged = dict(best)
        merged["strength"] = min((r["strength"] for r in members), key=lambda x: STRENGTH_ORDER.get(x, 9))
        merged["probe"] = probe_of(best)
        merged["probe_rule"] = best.get("probe_rule")
        probes: dict[str, dict[str, Any]] = {}
        for r in members:
            for p in r.get("probes") or []:
                into = probes.setdefault(p["probe"], {"probe": p["probe"], "probe_rule": p.get("probe_rule"), "count": 0})
                into["count"] += int(p.get("count") or 0)
        if probes:
            merged["probes"] = [probes[k] for k in sorted(probes)]
        merged["methods"] = sorted({m for r in members for m in (r.get("methods") or [r.get("method")]) if m})
        merged["transports"] = sorted({t for r in members for t in (r.get("transports") or [r["transport"]])})
        merged["properties"] = sorted({p for r in members for p in (r.get("properties") or [r.get("property")]) if p})
        merged["campaigns"] = sorted({c for r in members for c in (r.get("campaigns") or [r["campaign"]])})
        merged["count"] = sum(int(r.get("count") or 0) for r in members)
        merged["why"] = why(merged)
        merged.pop("campaign", None)
        out.append(merged)
    out.sort(key=lambda r: (SERVER_ORDER.index(r["server"]), STRENGTH_ORDER.get(r["strength"], 9), r["rule"],
                            r.get("probe") or "", r["title"]))
    return out


def finish_rows(grouped: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Write each bug's replay file and give its row the README's command."""
    for row in grouped:
        doc = row.pop("_doc")
        row["repro"] = write_repro(f"{row['server']}-{row.pop('id')}.json", doc)
        row["command"] = f"mcp-tempest replay {row['repro']}"
        for key in ("method", "property", "transport", "mutation", "confirmed"):
            row.pop(key, None)
        row["label"] = row.get("label") or row["strength"]
    return grouped


def collect(outcomes: list[Outcome], versions: dict[str, dict[str, str]]) -> dict[str, Any]:
    """One replay file per bug of each server into repro/, and findings.json."""
    if REPRO_DIR.exists():
        shutil.rmtree(REPRO_DIR)
    REPRO_DIR.mkdir(parents=True)
    rows: list[dict[str, Any]] = []
    campaigns: list[dict[str, Any]] = []
    for o in outcomes:
        c = o.campaign
        entry: dict[str, Any] = {
            "name": c.name, "server": c.server, "transport": c.transport, "target": c.target(),
            "properties": list(c.properties), "mutations": list(c.mutations), "max_examples": c.max_examples,
            "seed": c.seed, "exit_status": o.status, "examples": o.index.get("examples", 0),
            "summary": _last_line(o.stdout),
        }
        if c.probe:
            entry["probe_era"] = probe_era(c).get("era")
        if c.legacy:
            entry["message"] = _last_line(o.stderr)
        campaigns.append(entry)
        for f in o.findings:
            rows.append({
                "campaign": c.name, "server": c.server, "transport": f["transport"], "rule": f["rule"],
                "strength": f["strength"], "label": f.get("label", f["strength"]), "title": f["title"],
                "method": f.get("method"), "methods": f.get("methods"), "transports": f.get("transports"),
                "mutation": f.get("mutation"), "probe": probe_of(f), "probe_rule": f.get("probe_rule"),
                "reaction": f.get("reaction"),
                "probes": [{k: p.get(k) for k in ("probe", "probe_rule", "count")} for p in f.get("probes") or []],
                "property": f.get("property"), "properties": f.get("properties"), "count": f.get("count"),
                "confirmed": f.get("confirmed", True), "id": f["id"],
                "_doc": json.loads((o.out / f["repro"]).read_bytes()),
            })
    grouped = finish_rows(group_rows(rows, lambda r: len(r["_doc"]["transcript"]["events"])))
    return {"generated_by": "python tests/real_servers/regenerate.py", "servers": versions,
            "campaigns": campaigns, "findings": grouped}


def _last_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


# --- rendering ---


def render(data: dict[str, Any]) -> str:
    """The README section, from findings.json alone (so --check needs no server)."""
    servers = data["servers"]

    def server_cell(name: str) -> str:
        s = servers[name]
        return f"{s['label']} (`{s['package']}` {s['version']})"

    lines = [
        BEGIN,
        "## What mcp-tempest finds in real servers",
        "",
        "Campaigns with fixed seeds and budgets against the example servers in `tests/servers/` (a tool that",
        "asks for input by elicitation, a resource and a prompt on each), each a plain `mcp-tempest fuzz`.",
        "This section is generated by `python tests/real_servers/regenerate.py` from what those campaigns",
        "found; `tests/test_real_servers.py` re-runs them in CI and fails, with the difference, when they",
        "lose a bug or file a new one against `tests/real_servers/expected.json`: the corpus of verdicts",
        "(server, duty, reaction, strength), each judged by hand once against the server's transcripts,",
        "with the judgement written beside it. Its strength is what the spec supports (a `HEURISTIC` is a",
        "robustness judgement where the spec is silent). One row per bug of each server, as `fuzz` groups",
        "them: the server's duty (`rule`) and its reaction (`finding`), however many probes, methods,",
        "transports and campaigns showed it; `probe` lists the malformed frames that provoked it",
        "(and the rule each frame itself breaks). Reproduce one with the command in its row, run from the",
        "project root in the environment of the quick start's second command (the one that ran",
        "`bash .ci/install-servers.sh`; the replay file starts its server with `python` from PATH, from",
        "the project root, with the campaign's timeouts): exit status 1 means the recorded bug still",
        "fails, 0 that it no longer does, 3 that it did not recur but a different violation did, 2 that",
        "the server could not be started; add `--attempts 5` to check it is not flaky.",
        "",
        "| server | finding | rule | probe | strength | seen on | reproduce |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for f in data["findings"]:
        rules = {p["probe"]: p.get("probe_rule") for p in f.get("probes") or []} or {probe_of(f): f.get("probe_rule")}
        probe_cell = ", ".join(f"`{name}`" + (f" ({rules.get(name)})" if rules.get(name) else "")
                               for name in sorted(probe_counts(f), key=lambda n: (-probe_counts(f)[n], n))) or "-"
        methods = f.get("methods") or ([f["method"]] if f.get("method") else [])
        transports = f.get("transports") or [f["transport"]]
        seen = f"{', '.join(methods) or '-'}; {', '.join(transports)}"
        lines.append(f"| {server_cell(f['server'])} | {_cell(f['title'])} | {f['rule']} | {_cell(probe_cell)} | "
                     f"{f.get('label') or f['strength']} | {_cell(seen)} | `{f['command']}` |")
    lines += ["", "Why each strength:", ""]
    seen_why: set[tuple[str, str, str]] = set()
    for f in data["findings"]:
        key = (f["rule"], f["strength"], probe_of(f) or "")
        if f.get("why") and key not in seen_why:
            seen_why.add(key)
            lines.append(f"- {f['rule']} {f['strength']}" + (f" (`{probe_of(f)}`)" if probe_of(f) else "")
                         + f": {f['why']}.")
    lines += ["", "What the campaigns ran, and what they did not report:", ""]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for c in data["campaigns"]:
        groups.setdefault((c["server"], c["transport"]), []).append(c)
    for (server, transport), group in groups.items():
        found = sum(1 for f in data["findings"] if f["server"] == server
                    and transport in (f.get("transports") or [f.get("transport")]))
        props = sorted({p for c in group for p in c["properties"]})
        seeds = sorted({str(c["seed"]) for c in group})
        text = (f"- {server_cell(server)} over {transport}: {len(group)} campaign{'s' * (len(group) > 1)}, "
                f"{sum(c['examples'] for c in group)} examples (properties {', '.join(props)}; seed "
                f"{', '.join(seeds)}), {found} bug{'s' * (found != 1)} seen")
        for c in group:
            if c.get("probe_era") is not None:
                text += f". `mcp-tempest probe` says `{c['probe_era']}`"
            if c.get("message"):
                said = c["message"].removeprefix("mcp-tempest fuzz: ").rstrip(".")
                text += f"; `mcp-tempest fuzz` exits {c['exit_status']}: {said}"
        lines.append(_cell(text) + ".")
    for note in NOTES:
        lines.append(f"- {note}")
    lines.append(END)
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# Conclusions the campaigns support by what they did NOT find; each is backed by a `never` entry
# of a campaign (checked by the test) or by the example servers' own documentation.
NOTES = (
    "HDR-02 is not reported against the Python SDK over HTTP although it serves a 2026-07-28 body "
    "without `MCP-Protocol-Version` on its legacy path: HDR-02 lets a server that still serves clients "
    "older than 2025-06-18 treat such a request as 2025-03-26, and the SDK is dual-era and still "
    "completes a 2025-03-26 `initialize`. A modern-only server must reject it (400, -32020).",
    "The Python SDK checks the client's elicitation capability (-32021) only for a tool that asks "
    "through a `Resolve(...)` parameter; a tool whose body returns an `InputRequiredResult` (the way "
    "the example server is written, and the only way in fastmcp) is sent to any client, hence MRTR-05. "
    "The TypeScript SDK checks the capability of an `inputRequired(...)` answer itself (-32021): no "
    "MRTR-05.",
    "The TypeScript example runs with a shared requestState key (`--state-key`): the SDK's own default "
    "leaves the state unprotected, so a per-process key, and the SL-3 finding it would cause, would be "
    "the fixture's choice rather than the SDK's.",
)


def rewrite_readme(section: str) -> None:
    text = README.read_text(encoding="utf-8")
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        text = head + section + tail
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    README.write_text(text, encoding="utf-8")


def readme_section() -> str | None:
    text = README.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        return None
    return BEGIN + text.split(BEGIN, 1)[1].split(END, 1)[0] + END


def check() -> list[str]:
    """Problems that make the README section disagree with findings.json (empty: all good)."""
    if not FINDINGS.is_file():
        return [f"{FINDINGS.relative_to(ROOT)} is missing: run python tests/real_servers/regenerate.py"]
    data = json.loads(FINDINGS.read_text())
    problems = []
    current = readme_section()
    if current is None:
        problems.append(f"README.md has no {BEGIN} ... {END} section")
    elif current != render(data):
        problems.append("the README section differs from what findings.json renders: "
                        "run python tests/real_servers/regenerate.py")
    for f in data["findings"]:
        if not (ROOT / f["repro"]).is_file():
            problems.append(f"missing replay file {f['repro']}")
    listed = {f["repro"] for f in data["findings"]}
    for path in REPRO_DIR.glob("*"):
        if str(path.relative_to(ROOT)) not in listed:
            problems.append(f"replay file not in findings.json: {path.relative_to(ROOT)}")
    return problems


def regroup_committed() -> dict[str, Any]:
    """Regroup the committed findings.json (per-campaign rows of an older regenerate) into one row
    per bug, rewriting the replay files portably, without running any server."""
    data = json.loads(FINDINGS.read_text())
    rows = []
    for f in data["findings"]:
        row = dict(f)
        row["_doc"] = load_committed(f["repro"])
        row["id"] = row["_doc"].get("id") or Path(f["repro"]).name.split(".")[0]
        rows.append(row)
    grouped = group_rows(rows, lambda r: len(r["_doc"]["transcript"]["events"]))
    if REPRO_DIR.exists():
        shutil.rmtree(REPRO_DIR)
    REPRO_DIR.mkdir(parents=True)
    data["findings"] = finish_rows(grouped)
    return data


def load_committed(repro: str) -> dict[str, Any]:
    raw = (ROOT / repro).read_bytes()
    return json.loads(gzip.decompress(raw) if repro.endswith(".gz") else raw)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the real-server campaigns and regenerate the README section.")
    parser.add_argument("--check", action="store_true",
                        help="only verify that the README section matches findings.json (no server is run)")
    parser.add_argument("--keep", metavar="DIR", help="keep each campaign's --out directory under DIR")
    parser.add_argument("--regroup", action="store_true",
                        help="regroup the committed findings.json and replay files into one row per bug (no server)")
    parser.add_argument("--only", metavar="NAME", action="append",
                        help="run only this campaign (repeatable); outputs are then not rewritten")
    args = parser.parse_args(argv)
    if args.check:
        problems = check()
        for p in problems:
            print(f"regenerate --check: {p}", file=sys.stderr)
        print(f"regenerate --check: {'ok' if not problems else f'{len(problems)} problem(s)'}")
        return 1 if problems else 0
    if args.regroup:
        data = regroup_committed()
        FINDINGS.write_text(json.dumps(data, indent=2) + "\n")
        rewrite_readme(render(data))
        print(f"regenerate --regroup: {len(data['findings'])} bugs; wrote {FINDINGS.relative_to(ROOT)}, "
              f"{REPRO_DIR.relative_to(ROOT)}/ and README.md")
        return 0
    if not catalog.npm_packages_installed() or catalog.node_binary() is None:
        print("regenerate: the example servers are not installed: run bash .ci/install-servers.sh", file=sys.stderr)
        return 2
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="tempest-real-"))
    outcomes = []
    problems = 0
    try:
        for c in CAMPAIGNS:
            if args.only and c.name not in args.only:
                continue
            o = run_campaign(c, work / c.name)
            print(f"regenerate: {c.name}: exit {o.status}, {len(o.findings)} findings, {o.seconds:.0f} s"
                  f" ({_last_line(o.stdout)})")
            missing = [e for e in c.expected if not any(e.matches(f) for f in o.findings)]
            for e in missing:
                print(f"regenerate: {c.name}: expected {e.rule} {e.strength} {e.mutation or ''} was not found",
                      file=sys.stderr)
            wrong = [f for f in o.findings if f["rule"] in c.never]
            for f in wrong:
                print(f"regenerate: {c.name}: reported {f['rule']}, which it must not", file=sys.stderr)
            unexplained = [f for f in o.findings if not why(f)]
            for f in unexplained:
                print(f"regenerate: {c.name}: {f['strength']} {f['rule']} ({f.get('mutation')}) has no WHY entry: "
                      "check it against DIGEST and explain its strength", file=sys.stderr)
            problems += len(missing) + len(wrong) + len(unexplained)
            outcomes.append(o)
        if args.only:
            return 0
        data = collect(outcomes, server_versions())
        changed = verdict_diff(found_verdicts(outcomes), set(expected_verdicts()))
        for line in changed:
            print(f"regenerate: against {EXPECTED.relative_to(ROOT)}: {line}", file=sys.stderr)
        if changed:
            print(f"regenerate: the verdicts changed: judge each line above against the server's transcripts "
                  f"(tests/real_servers/repro/) and update {EXPECTED.relative_to(ROOT)} by hand", file=sys.stderr)
        problems += len(changed)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    FINDINGS.write_text(json.dumps(data, indent=2) + "\n")
    rewrite_readme(render(data))
    print(f"regenerate: {len(data['findings'])} findings from {len(outcomes)} campaigns; "
          f"wrote {FINDINGS.relative_to(ROOT)}, {REPRO_DIR.relative_to(ROOT)}/ and README.md"
          + (f"; {problems} problem(s) above" if problems else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
