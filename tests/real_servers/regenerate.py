"""Run the campaigns against the real example servers and regenerate what the README says of them.

    python tests/real_servers/regenerate.py            # run every campaign, rewrite the outputs
    python tests/real_servers/regenerate.py --check    # the README section is what findings.json renders

Why a script: the README's table "What mcp-gauntlet finds in real servers" is a claim about
servers nobody here wrote, so it must be what `mcp-gauntlet fuzz` found, never prose typed by
hand. Each campaign below is a plain `mcp-gauntlet fuzz` with a fixed seed and budget, run from
the project root against the example servers of `tests/servers/` (installed by
`bash .ci/install-servers.sh`). What it finds becomes, per distinct finding, one replay file in
`tests/real_servers/repro/` (gzip-compressed when large), one entry in
`tests/real_servers/findings.json`, and one row of the README section between
`<!-- real-servers:begin -->` and `<!-- real-servers:end -->`.

The replay files name their target the way a fresh clone can start it: paths relative to the
project root, `python` from PATH (the activated environment) and node through
`tests/servers/run_node.py`, which finds a Node >= 22 at run time. So every command in the
README works from the project root after the quick start's second command.

`CAMPAIGNS` is also what `tests/test_real_servers.py` runs: each campaign lists the deviations
(rule, strength, mutation) it must find, and those that it must never report.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
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
TS_STATE_KEY = "gauntlet-shared-request-state-key-0001"

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
    ("RPC-11", "HEURISTIC", "batch-array"):
        "a batch array is dropped silently; RPC-11 leaves the reply UNSPEC (an error or 4xx is expected)",
    ("RPC-04", "SHOULD", "null-id"):
        "a request with a null id (RPC-04) is dropped without a -32600; serving it would be the MUST",
    ("RPC-04", "SHOULD", "id-null"):
        "a request with a null id (RPC-04) is dropped without a -32600; serving it would be the MUST",
    ("RPC-03", "SHOULD", "fraction-id"):
        "a request with a fractional id (RPC-03: a string or an integer) is dropped without a -32600, "
        "graded like the null id",
    # Silence toward a frame that breaks a client-side rule (RPC-03, RPC-04) is filed under the
    # server's own duty: JSON-RPC 2.0's error response, which RPC-01 brings in.
    ("RPC-01", "SHOULD", "null-id"):
        "a request with a null id (the probe breaks RPC-04, a client rule) is dropped without the -32600 "
        "JSON-RPC 2.0 answers (RPC-01); serving it would be the MUST",
    ("RPC-01", "SHOULD", "id-null"):
        "a request with a null id (the probe breaks RPC-04, a client rule) is dropped without the -32600 "
        "JSON-RPC 2.0 answers (RPC-01); serving it would be the MUST",
    ("RPC-01", "SHOULD", "fraction-id"):
        "a request with a fractional id (the probe breaks RPC-03, a client rule) is dropped without the "
        "-32600 JSON-RPC 2.0 answers (RPC-01), graded like the null id",
    ("RPC-01", "MUST", None):
        "a request was never answered: the process exited by itself first (JSON-RPC 2.0, via RPC-01, "
        "answers every request)",
    ("RPC-01", "SHOULD", None):
        "a request got no answer within the campaign's deadline (JSON-RPC 2.0, via RPC-01, answers every "
        "request; the deadline is the harness's, so SHOULD)",
    ("MRTR-05", "MUST", None):
        "input_required asks elicitation/create of a request that declared no elicitation capability "
        "(MRTR-05 MUST NOT; -32021, META-05, is the answer)",
    ("SL-3", "SHOULD", None):
        "an MRTR round-trip begun on one process is refused (-32602) by a fresh one: the requestState key "
        "is drawn per process, and DIGEST 15.3 says a server SHOULD NOT require reusing a process",
    ("RPC-01", "HEURISTIC", "huge-frame"):
        "one 11 MiB line makes the process close and exit with status 0, saying nothing; a server may "
        "refuse a frame that large, but should say so and stay up: a robustness finding",
    ("MRTR-14", "SHOULD", None):
        "a requestState minted for one request completes a request with other arguments: the state is "
        "not bound to its originating request (MRTR-14 SHOULD)",
}


@dataclass(frozen=True)
class Expected:
    """A deviation a campaign must report: its rule, strength and (when it is about one malformed
    frame) the mutation."""

    rule: str
    strength: str
    mutation: str | None = None

    def matches(self, finding: dict[str, Any]) -> bool:
        return (finding["rule"] == self.rule and finding["strength"] == self.strength
                and (self.mutation is None or finding.get("mutation") == self.mutation))


def why(finding: dict[str, Any]) -> str:
    return WHY.get((finding["rule"], finding["strength"], finding.get("mutation")),
                   WHY.get((finding["rule"], finding["strength"], None), ""))


@dataclass(frozen=True)
class Campaign:
    """One `mcp-gauntlet fuzz` run: which server, how, with what budget, and what it must find."""

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
    probe: bool = False  # record what `mcp-gauntlet probe` says of the target (its era)
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
                "--timeout", "20"]
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
NULL_ID = Expected("RPC-01", "SHOULD", "null-id")  # the server's duty; the probe breaks RPC-04
MRTR_05 = Expected("MRTR-05", "MUST")
SL_3 = Expected("SL-3", "SHOULD")


def _modern(server: str, *, extra: tuple[str, ...] = (), mrtr: tuple[Expected, ...] = (),
            never: tuple[str, ...] = (), huge: bool = False, mrtr_examples: int = 8) -> tuple[Campaign, ...]:
    """The stdio campaigns of one modern server: each silent drop, id discipline with valid calls
    (a warm process: cheap), then the cross-process handoff and MRTR conversations (fresh
    processes: costly, so few examples; their first examples are the probes that matter)."""
    frames = (*DROPS, HUGE) if huge else DROPS
    return (
        *(Campaign(f"{server}-stdio-{mutation}", server, "stdio", ("framing",), 2, SEED, mutations=(mutation,),
                   extra=extra, expected=(expected,), never=never, first_finding=True)
          for mutation, expected in frames),
        Campaign(f"{server}-stdio-ids", server, "stdio", ("ids", "valid"), 40, SEED, extra=extra,
                 expected=(NULL_ID,), never=(*never, "RPC-05", "RPC-04", "RPC-11"), shrink_seconds=3.0),
        Campaign(f"{server}-stdio-mrtr", server, "stdio", ("handoff", "mrtr"), mrtr_examples, SEED, extra=extra,
                 expected=mrtr, never=never),
    )


# HDR-02's exception lets a server that still serves pre-2025-06-18 clients read a request without
# MCP-Protocol-Version as 2025-03-26: never a finding against such a (dual-era) server.
NEVER_HTTP = ("HDR-02",)

CAMPAIGNS: tuple[Campaign, ...] = (
    *_modern("python-sdk", mrtr=(MRTR_05, SL_3)),
    *_modern("fastmcp", mrtr=(MRTR_05, SL_3)),
    # The TypeScript SDK checks the capability itself and, with the shared key, keeps state across
    # processes: MRTR-05 and SL-3 must not appear. Its processes start fast: more MRTR examples.
    *_modern("typescript-sdk", extra=("--state-key", TS_STATE_KEY), never=("MRTR-05", "SL-3"), huge=True,
             mrtr_examples=30),
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
    """`mcp-gauntlet fuzz` as a user runs it, from the project root."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "fuzz.cli", *campaign.argv(out)], cwd=ROOT, env=child_env(),
                          capture_output=True, text=True, timeout=timeout, check=False)
    index_path = out / "findings.json"
    index = json.loads(index_path.read_text()) if index_path.is_file() else {}
    return Outcome(campaign, done.returncode, done.stdout, done.stderr, time.monotonic() - started, out, index)


def probe_era(campaign: Campaign) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "fuzz.cli", "probe", "--target", campaign.target(), "--json",
                           "--timeout", "20"], cwd=ROOT, env=child_env(), capture_output=True, text=True,
                          timeout=120, check=False)
    try:
        return json.loads(done.stdout)
    except ValueError:
        return {"era": None, "error": done.stderr.strip()[-300:]}


def _bucket(finding: dict[str, Any]) -> tuple[str, str, str, str]:
    """Findings that differ only in the method of the frame they were seen on are one row."""
    return (finding["rule"], finding["strength"], finding.get("mutation") or "", finding["title"])


def collect(outcomes: list[Outcome], versions: dict[str, dict[str, str]]) -> dict[str, Any]:
    """Copy one replay file per distinct finding into repro/ and build findings.json."""
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
        best: dict[tuple[str, str, str, str], tuple[int, dict[str, Any]]] = {}
        for f in o.findings:
            doc = json.loads((o.out / f["repro"]).read_bytes())
            size = len(doc["transcript"]["events"])
            key = _bucket(f)
            if key not in best or size < best[key][0]:
                best[key] = (size, f)
        for _, f in sorted(best.values(), key=lambda sf: (STRENGTH_ORDER.get(sf[1]["strength"], 9), sf[1]["rule"],
                                                           sf[1].get("mutation") or "")):
            name = f"{c.name}-{f['id']}.json"
            raw = (o.out / f["repro"]).read_bytes()
            if len(raw) > GZIP_ABOVE:
                name += ".gz"
                (REPRO_DIR / name).write_bytes(gzip.compress(raw, compresslevel=9, mtime=0))
            else:
                (REPRO_DIR / name).write_bytes(raw)
            repro = f"tests/real_servers/repro/{name}"
            rows.append({
                "campaign": c.name, "server": c.server, "transport": c.transport, "rule": f["rule"],
                "strength": f["strength"], "title": f["title"], "method": f.get("method"),
                "mutation": f.get("mutation"), "property": f.get("property"), "count": f.get("count"),
                "why": why(f),
                "repro": repro, "command": f"mcp-gauntlet replay {repro}",
            })
    rows.sort(key=lambda r: (SERVER_ORDER.index(r["server"]), r["transport"] != "stdio",
                             STRENGTH_ORDER.get(r["strength"], 9), r["rule"], r.get("mutation") or ""))
    return {"generated_by": "python tests/real_servers/regenerate.py", "servers": versions,
            "campaigns": campaigns, "findings": rows}


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
        "## What mcp-gauntlet finds in real servers",
        "",
        "Campaigns with fixed seeds and budgets against the example servers in `tests/servers/` (a tool that",
        "asks for input by elicitation, a resource and a prompt on each), each a plain `mcp-gauntlet fuzz`.",
        "This section is generated by `python tests/real_servers/regenerate.py` from what those campaigns",
        "found; `tests/test_real_servers.py` re-runs them and checks the section against",
        "`tests/real_servers/findings.json`. Every finding was checked against the revision's rules: its",
        "strength is what the spec supports (a `HEURISTIC` is a robustness judgement where the spec is",
        "silent). Reproduce one with the command in its row, run from the project root in the environment",
        "of the quick start's second command (the one that ran `bash .ci/install-servers.sh`; the replay",
        "file starts its server with `python` from PATH): exit status 1 means it still fails.",
        "",
        "| server | transport | finding | rule | strength | reproduce |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for f in data["findings"]:
        what = f["title"]
        if f.get("mutation") and f"({f['mutation']})" not in what:
            what += f" (`{f['mutation']}`)"
        lines.append(f"| {server_cell(f['server'])} | {f['transport']} | {_cell(what)} | {f['rule']} | "
                     f"{f['strength']} | `{f['command']}` |")
    lines += ["", "Why each strength:", ""]
    seen: set[tuple[str, str, str]] = set()
    for f in data["findings"]:
        key = (f["rule"], f["strength"], f.get("mutation") or "")
        if f.get("why") and key not in seen:
            seen.add(key)
            lines.append(f"- {f['rule']} {f['strength']}" + (f" (`{f['mutation']}`)" if f.get("mutation") else "")
                         + f": {f['why']}.")
    lines += ["", "What the campaigns ran, and what they did not report:", ""]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for c in data["campaigns"]:
        groups.setdefault((c["server"], c["transport"]), []).append(c)
    for (server, transport), group in groups.items():
        found = sum(1 for f in data["findings"] if f["server"] == server and f["transport"] == transport)
        props = sorted({p for c in group for p in c["properties"]})
        seeds = sorted({str(c["seed"]) for c in group})
        text = (f"- {server_cell(server)} over {transport}: {len(group)} campaign{'s' * (len(group) > 1)}, "
                f"{sum(c['examples'] for c in group)} examples (properties {', '.join(props)}; seed "
                f"{', '.join(seeds)}), {found} distinct finding{'s' * (found != 1)}")
        for c in group:
            if c.get("probe_era") is not None:
                text += f". `mcp-gauntlet probe` says `{c['probe_era']}`"
            if c.get("message"):
                said = c["message"].removeprefix("mcp-gauntlet fuzz: ").rstrip(".")
                text += f"; `mcp-gauntlet fuzz` exits {c['exit_status']}: {said}"
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the real-server campaigns and regenerate the README section.")
    parser.add_argument("--check", action="store_true",
                        help="only verify that the README section matches findings.json (no server is run)")
    parser.add_argument("--keep", metavar="DIR", help="keep each campaign's --out directory under DIR")
    parser.add_argument("--only", metavar="NAME", action="append",
                        help="run only this campaign (repeatable); outputs are then not rewritten")
    args = parser.parse_args(argv)
    if args.check:
        problems = check()
        for p in problems:
            print(f"regenerate --check: {p}", file=sys.stderr)
        print(f"regenerate --check: {'ok' if not problems else f'{len(problems)} problem(s)'}")
        return 1 if problems else 0
    if not catalog.npm_packages_installed() or catalog.node_binary() is None:
        print("regenerate: the example servers are not installed: run bash .ci/install-servers.sh", file=sys.stderr)
        return 2
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="gauntlet-real-"))
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
