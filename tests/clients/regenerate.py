"""Run the client campaigns against the real example clients and regenerate what the README says.

    python tests/clients/regenerate.py            # run every campaign, rewrite the outputs
    python tests/clients/regenerate.py --check    # the README section is what findings.json renders

Why a script: the README's "What mcp-tempest finds in real clients" is a claim about clients
nobody here wrote, so it must be what `mcp-tempest fuzz-client` found, never prose typed by hand.
Each campaign is a plain `mcp-tempest fuzz-client` with a fixed seed and budget, run from the
project root against the example clients of `tests/clients/` (the SDKs are installed by
`bash .ci/install-servers.sh`). Per distinct finding: one replay file in `tests/clients/repro/`,
one entry in `tests/clients/findings.json`, one README row between `<!-- real-clients:begin -->`
and `<!-- real-clients:end -->`. The replay files name their client the way a fresh clone runs it
(paths relative to the project root, `python` from PATH, node through tests/servers/run_node.py).

Every committed finding needs an entry in WHY: the reason, read against DIGEST, that its rule and
strength hold; a finding without one stops the regeneration, so nothing unargued reaches the README.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "tests" / "clients"
REPRO_DIR = HERE / "repro"
FINDINGS = HERE / "findings.json"
README = ROOT / "README.md"
BEGIN = "<!-- real-clients:begin -->"
END = "<!-- real-clients:end -->"
STRENGTH_ORDER = {"MUST": 0, "SHOULD": 1, "HEURISTIC": 2}


@dataclass(frozen=True)
class Campaign:
    name: str
    client: str  # label key into CLIENTS
    command: str  # the --client template, as run from the project root
    seed: int
    examples: int
    shrink: float = 40.0
    timeout: float = 60.0

    @property
    def transport(self) -> str:
        return "http" if "{url}" in self.command else "stdio"

    def argv(self, out: Path) -> list[str]:
        return ["fuzz-client", "--client", self.command, "--seed", str(self.seed), "--max-examples",
                str(self.examples), "--shrink-time", str(self.shrink), "--timeout", str(self.timeout),
                "--out", str(out)]


CLIENTS = {
    "python-sdk": ("Python SDK `mcp.Client`", "mcp", "python"),
    "fastmcp": ("fastmcp `fastmcp.Client`", "fastmcp", "python"),
    "typescript-sdk": ("TypeScript SDK v2 `Client`", "@modelcontextprotocol/client", "npm"),
}
CAMPAIGNS = (
    Campaign("python-sdk-stdio", "python-sdk", "python tests/clients/sdk_client.py {server}", seed=1, examples=28),
    Campaign("python-sdk-http", "python-sdk", "python tests/clients/sdk_client.py {url}", seed=1, examples=21),
    Campaign("fastmcp-stdio", "fastmcp", "python tests/clients/fastmcp_client.py {server}", seed=1, examples=27),
    Campaign("typescript-sdk-stdio", "typescript-sdk",
             "python tests/servers/run_node.py tests/clients/ts_client.mjs {server}", seed=1, examples=28),
)

# (rule, strength, probe) -> why DIGEST supports this finding at this strength.
WHY: dict[tuple[str, str, str | None], str] = {
    ("STDIO-04", "MUST", "server-request"):
        "DIGEST STDIO-04 (MUST NOT [C]; RPC-12 says the same) has a client write only MCP messages to the "
        "server's stdin and never a JSON-RPC response: in 2026-07-28 every server-to-client request travels "
        "inside an InputRequiredResult. The harness's server wrote a 2025-style `elicitation/create` request "
        "(its own STDIO-06 violation, the `server-request` probe) and the client answered it with a JSON-RPC "
        "response instead of ignoring it",
    ("RT-04", "MUST", "result-unknown-resulttype"):
        "DIGEST RT-04 (MUST [C]): a client treats a resultType value it does not recognise as invalid, and "
        "the accepted set is `complete`, `input_required` and the values of advertised extensions (none here). "
        "The client handed the application a result whose resultType was another value (`partial`, "
        "`Complete`, ...) as a final result",
    ("RT-05", "MUST", "legacy-server"):
        "DIGEST RT-05 (MUST [C]): a result from a server on an earlier revision (here a 2025-11-25 server the "
        "client reached through the `initialize` fallback) carries no resultType and is read as `complete`; "
        "the client refused it",
}


def client_versions() -> dict[str, dict[str, str]]:
    out = {}
    for key, (label, package, kind) in CLIENTS.items():
        if kind == "python":
            try:
                v = version(package)
            except PackageNotFoundError:
                v = "not installed"
        else:
            pkg = ROOT / "tests" / "servers" / "node_modules" / package / "package.json"
            v = json.loads(pkg.read_text())["version"] if pkg.is_file() else "not installed"
        out[key] = {"label": label, "package": package, "version": v}
    return out


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def run_campaign(campaign: Campaign, out: Path) -> tuple[int, dict[str, Any], float, str]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "mcp_tempest.fuzz.cli", *campaign.argv(out)], cwd=ROOT, env=child_env(),
                          capture_output=True, text=True, timeout=1800, check=False)
    index_path = out / "findings.json"
    index = json.loads(index_path.read_text()) if index_path.is_file() else {}
    return done.returncode, index, time.monotonic() - started, done.stdout + done.stderr


def collect(results: list[tuple[Campaign, int, dict[str, Any], float, Path]]) -> dict[str, Any]:
    REPRO_DIR.mkdir(parents=True, exist_ok=True)
    for old in REPRO_DIR.glob("*.json"):
        old.unlink()
    findings, campaigns, unargued = [], [], []
    for campaign, status, index, seconds, out in results:
        campaigns.append({"name": campaign.name, "client": campaign.client, "transport": campaign.transport,
                          "command": campaign.command, "seed": campaign.seed,
                          "examples": index.get("examples", 0), "exit_status": status,
                          "seconds": round(seconds, 1)})
        for f in index.get("findings", []):
            key = (f["rule"], f["strength"], f.get("mutation"))
            if key not in WHY:
                unargued.append(f"{campaign.name}: {key}")
            dest = REPRO_DIR / f"{campaign.name}-{f['id']}.json"
            shutil.copyfile(out / f["repro"], dest)
            rel = dest.relative_to(ROOT).as_posix()
            findings.append({**f, "client": campaign.client, "campaign": campaign.name, "repro": rel,
                             "command": f"mcp-tempest replay {rel}", "why": WHY.get(key, "")})
    findings.sort(key=lambda f: (f["client"], f["transport"], STRENGTH_ORDER.get(f["strength"], 9), f["rule"],
                                 f["id"]))
    return {"clients": client_versions(), "campaigns": campaigns, "findings": findings, "unargued": unargued}


def render(data: dict[str, Any]) -> str:
    clients = data["clients"]

    def cell(name: str) -> str:
        c = clients[name]
        return f"{c['label']} (`{c['package']}` {c['version']})"

    lines = [
        BEGIN,
        "## What mcp-tempest finds in real clients",
        "",
        "Client campaigns with fixed seeds and budgets against the example clients in `tests/clients/` (the",
        "same job on each SDK's high-level client: discover, list and call a tool, two lists at once, read a",
        "resource, get a prompt, answering every input request), each a plain `mcp-tempest fuzz-client`.",
        "This section is generated by `python tests/clients/regenerate.py` from what those campaigns found;",
        "`tests/test_client_real.py` checks it against `tests/clients/findings.json` and re-runs the",
        "campaigns in CI. Each finding's strength is the one DIGEST gives its rule. Reproduce one with the",
        "command in its row, from the project root, in the environment of the quick start's second command:",
        "exit status 1 means it still fails.",
        "",
    ]
    if data["findings"]:
        lines += ["| client | transport | finding | rule | strength | reproduce |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for f in data["findings"]:
            what = f["title"] + (f" (`{f['mutation']}`)" if f.get("mutation") else "")
            lines.append(f"| {cell(f['client'])} | {f['transport']} | {_cell(what)} | {f['rule']} | "
                         f"{f['strength']} | `{f['command']}` |")
        lines += ["", "Why each strength:", ""]
        seen: set[tuple[str, str, str]] = set()
        for f in data["findings"]:
            key = (f["rule"], f["strength"], f.get("mutation") or "")
            if f.get("why") and key not in seen:
                seen.add(key)
                lines.append(f"- {f['rule']} {f['strength']}" + (f" (`{f['mutation']}`)" if f.get("mutation")
                                                                  else "") + f": {f['why']}.")
    lines += ["", "What the campaigns ran:", ""]
    for c in data["campaigns"]:
        found = sum(1 for f in data["findings"] if f["campaign"] == c["name"])
        lines.append(f"- {cell(c['client'])} over {c['transport']}: `{c['command']}`, seed {c['seed']}, "
                     f"{c['examples']} examples, {found} distinct finding{'s' * (found != 1)} "
                     f"(exit status {c['exit_status']}).")
    lines.append(END)
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


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
    if not FINDINGS.is_file():
        return [f"{FINDINGS.relative_to(ROOT)} is missing: run python tests/clients/regenerate.py"]
    data = json.loads(FINDINGS.read_text())
    problems = []
    current = readme_section()
    if current is None:
        problems.append(f"README.md has no {BEGIN} ... {END} section")
    elif current != render(data):
        problems.append("the README section differs from what findings.json renders: run "
                        "python tests/clients/regenerate.py")
    for f in data["findings"]:
        if not (ROOT / f["repro"]).is_file():
            problems.append(f"missing replay file {f['repro']}")
        if not f.get("why"):
            problems.append(f"finding {f['id']} ({f['rule']} {f['strength']}) is not argued against DIGEST")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the real-client campaigns and regenerate the README section.")
    parser.add_argument("--check", action="store_true", help="only verify the README section against findings.json")
    parser.add_argument("--keep", metavar="DIR", help="keep each campaign's --out directory under DIR")
    parser.add_argument("--only", metavar="NAME", action="append", help="run only this campaign (no rewrite)")
    parser.add_argument("--from", dest="reuse", metavar="DIR",
                        help="do not run: collect the campaigns a previous --keep DIR left behind")
    args = parser.parse_args(argv)
    if args.check:
        problems = check()
        for p in problems:
            print(f"regenerate: {p}", file=sys.stderr)
        return 1 if problems else 0
    chosen = [c for c in CAMPAIGNS if not args.only or c.name in args.only]
    base = Path(args.reuse or args.keep or tempfile.mkdtemp(prefix="tempest-real-clients-"))
    results = []
    for c in chosen:
        out = base / c.name
        if args.reuse:
            index = json.loads((out / "findings.json").read_text())
            status = int((out / "exit-status").read_text()) if (out / "exit-status").is_file() else (
                1 if index.get("findings") else 0)
            seconds, said = 0.0, ""
        else:
            status, index, seconds, said = run_campaign(c, out)
            (out / "exit-status").write_text(str(status))
        print(f"regenerate: {c.name}: exit {status}, {index.get('examples', 0)} examples, "
              f"{len(index.get('findings', []))} findings, {seconds:.0f} s")
        if status == 2:
            print(said, file=sys.stderr)
        results.append((c, status, index, seconds, out))
    if args.only:
        return 0
    data = collect(results)
    unargued = data.pop("unargued")
    if unargued:
        print("regenerate: findings without a WHY entry (argue them against DIGEST first):", file=sys.stderr)
        for f in unargued:
            print(f"  {f}", file=sys.stderr)
        return 1
    FINDINGS.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    rewrite_readme(render(data))
    print(f"regenerate: {len(data['findings'])} findings; README section rewritten")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
