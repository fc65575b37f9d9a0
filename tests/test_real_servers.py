"""The fuzzer against servers nobody here wrote: it must find their deviations on its own.

Every campaign of `tests/real_servers/regenerate.py` (plain `mcp-tempest fuzz` runs with fixed
seeds and small budgets against the example servers in `tests/servers/`) runs here again, and:
- each finds the deviations listed for it, at the strength DIGEST supports, confirmed on fresh
  processes, and never reports the rules it must not (HDR-02 against a server that HDR-02's
  exception covers, MRTR-05 and SL-3 against the TypeScript SDK, which gets both right);
- against the legacy server-everything, `probe` says legacy and `fuzz` judges nothing by a
  2026-07-28 rule;
- every committed replay file, run with the command the README prints for it from the project
  root, still fails (exit 1) under its rule, five attempts out of five (never flaky);
- a committed replay file whose server is missing exits 2 ("could not run"), never 1;
- together they find exactly the verdicts (server, duty, reaction, strength) judged by hand in
  `tests/real_servers/expected.json`, and the committed findings.json says the same;
- the README section is what `tests/real_servers/findings.json` renders: one row per bug of each
  server (grouped by root cause, not by method, transport or campaign).

Slow (third-party servers; the Python ones take seconds to start): two campaigns run at a time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "real_servers"))

import regenerate  # noqa: E402 - tests/real_servers is not a package: found through the path above
from regenerate import CAMPAIGNS, Campaign, Outcome  # noqa: E402

from mcp_tempest.fuzz.findings import load_repro  # noqa: E402
from mcp_tempest.fuzz.oracle import RULES  # noqa: E402

pytestmark = pytest.mark.slow
PARALLEL = 2


def _require_servers() -> None:
    missing = []
    if not regenerate.catalog.npm_packages_installed() or regenerate.catalog.node_binary() is None:
        missing.append("the npm servers and Node >= 22")
    for module in ("mcp", "fastmcp"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        reason = f"{', '.join(missing)} not installed: run bash .ci/install-servers.sh"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    _require_servers()
    work = tmp_path_factory.mktemp("real-servers")
    # The costly (Python) campaigns first, so the pool ends on short ones.
    order = sorted(CAMPAIGNS, key=lambda c: (c.spec.runtime != "python", c.name))
    with ThreadPoolExecutor(PARALLEL) as pool:
        done = list(pool.map(lambda c: regenerate.run_campaign(c, work / c.name, timeout=600), order))
    return {o.campaign.name: o for o in done}


def _describe(o: Outcome) -> str:
    rows = [f"{f['strength']} {f['rule']} {f['title']} [{f.get('mutation')}]" for f in o.findings]
    return f"exit {o.status} in {o.seconds:.0f} s\n" + "\n".join(rows) + "\n" + o.stdout[-1500:] + o.stderr[-1500:]


MODERN = [c for c in CAMPAIGNS if not c.legacy]


@pytest.mark.parametrize("campaign", MODERN, ids=[c.name for c in MODERN])
def test_campaign_finds_its_deviations(outcomes: dict[str, Outcome], campaign: Campaign) -> None:
    o = outcomes[campaign.name]
    assert o.status in (0, 1), _describe(o)
    # Exit 1 for a finding at or above --fail-on (should); weaker ones are observations.
    failing = [f for f in o.findings if f.get("verdict", "failure") == "failure"]
    assert o.status == (1 if failing else 0), _describe(o)
    for expected in campaign.expected:
        hits = [f for f in o.findings if expected.matches(f)]
        assert hits, f"{campaign.name} did not find {expected.rule} {expected.strength} {expected.mutation}\n" \
                     + _describe(o)
        repro = json.loads((o.out / hits[0]["repro"]).read_bytes())
        assert repro["confirmed"], f"{expected.rule} was not confirmed on fresh processes"
        assert repro["target"] == campaign.target() and "/work/" not in repro["target"]
    wrong = [f for f in o.findings if f["rule"] in campaign.never]
    assert not wrong, f"{campaign.name} reported what it must not:\n" + _describe(o)


def test_the_campaigns_find_exactly_the_judged_verdicts(outcomes: dict[str, Outcome]) -> None:
    """The corpus (expected.json, each verdict judged by hand against the server's transcripts):
    a campaign that loses a bug or files a new one fails here, with the lines that changed."""
    changed = regenerate.verdict_diff(regenerate.found_verdicts(list(outcomes.values())),
                                      set(regenerate.expected_verdicts()))
    assert not changed, "the real-server verdicts changed against tests/real_servers/expected.json:\n" + \
        "\n".join(changed) + "\njudge each against the transcripts and update expected.json by hand"


def test_legacy_server_is_probed_legacy_and_never_judged_by_modern_rules(outcomes: dict[str, Outcome]) -> None:
    (campaign,) = [c for c in CAMPAIGNS if c.legacy]
    assert regenerate.probe_era(campaign)["era"] == "legacy"
    o = outcomes[campaign.name]
    if o.status == 2:
        assert "legacy" in o.stderr and "Traceback" not in o.stderr, _describe(o)
        return
    era_free = {rule for rule, r in RULES.items() if "legacy" in r.eras}
    modern = [f for f in o.findings if f["rule"] not in era_free and not f["rule"].startswith(("RPC-", "STDIO-"))]
    assert not modern, "a legacy server was judged by 2026-07-28 rules:\n" + _describe(o)


def _committed() -> list[dict]:
    path = regenerate.FINDINGS
    return json.loads(path.read_text())["findings"] if path.is_file() else []


def test_readme_section_is_what_findings_json_renders() -> None:
    assert regenerate.check() == []
    committed = _committed()
    assert committed, "tests/real_servers/findings.json lists no finding"
    # Nothing reaches the README without its strength argued from DIGEST.
    assert all(f["why"] and f["why"] == regenerate.why(f) for f in committed), [f["repro"] for f in committed]


def test_committed_replay_targets_work_from_any_clone() -> None:
    for f in _committed():
        doc = load_repro(ROOT / f["repro"])
        target = doc["target"]
        assert target.split(":", 1)[1].startswith("python tests/servers/"), target
        assert "/work/" not in target and " /" not in target, target
        # Run from the project root, named relative to the file; judged with the campaigns' timeouts.
        assert doc["cwd"] == "../../.." and (ROOT / f["repro"]).parent.joinpath(doc["cwd"]).resolve() == ROOT
        assert doc["timeouts"] == {"answer": regenerate.CAMPAIGN_TIMEOUT, "start": regenerate.CAMPAIGN_TIMEOUT}
        assert doc["command"] and not any("/work/" in arg for arg in doc["command"]), doc["command"]


def test_the_committed_findings_are_the_judged_corpus() -> None:
    """findings.json (what the README shows) says what expected.json says, and every expected
    verdict carries the note of whoever judged it."""
    doc = json.loads(regenerate.EXPECTED.read_text())
    entries = [(server, e) for server, listed in doc["servers"].items() for e in listed]
    assert all(isinstance(e.get("judged"), str) and e["judged"].strip() for _, e in entries), entries
    expected = regenerate.expected_verdicts()
    assert len(expected) == len(entries), "a verdict is listed twice in expected.json"
    committed = {regenerate.verdict_key(f) for f in _committed()}
    diff = regenerate.verdict_diff(committed, set(expected))
    assert not diff, "findings.json and expected.json disagree:\n" + "\n".join(diff)


def test_one_row_per_bug_of_each_server() -> None:
    keys = [regenerate.group_key(f) for f in _committed()]
    assert len(keys) == len(set(keys)), "a bug is listed twice for one server"


def test_every_committed_replay_still_fails_as_the_readme_says_five_times_out_of_five() -> None:
    _require_servers()
    findings = _committed()

    def replay(f: dict) -> tuple[dict, subprocess.CompletedProcess[str]]:
        # The README's command, as written, from the project root ("mcp-tempest" is this venv's),
        # with no --timeout: the file's recorded timeouts are what it is judged with.
        argv = f["command"].split()
        assert argv[:2] == ["mcp-tempest", "replay"] and len(argv) == 3
        exe = str(Path(sys.executable).with_name("mcp-tempest"))
        return f, subprocess.run([exe, *argv[1:], "--attempts", "5", "--json"], cwd=ROOT, env=regenerate.child_env(),
                                 capture_output=True, text=True, timeout=900, check=False)

    with ThreadPoolExecutor(PARALLEL) as pool:
        results = list(pool.map(replay, findings))
    for f, done in results:
        assert done.returncode == 1, f"{f['command']}: exit {done.returncode}\n{done.stdout[-800:]}{done.stderr[-800:]}"
        outcome = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("{")))
        assert not outcome["flaky"] and outcome["failed_attempts"] == 5, f"{f['command']} is flaky: {outcome}"
        assert outcome["same_rule"], f"{f['command']} fails, but not under {f['rule']}: {outcome['violations']}"


def test_a_committed_replay_whose_server_is_missing_exits_2(tmp_path: Path) -> None:
    [f, *_] = _committed()
    doc = load_repro(ROOT / f["repro"])
    doc["target"] = "stdio:python tests/servers/no_such_server.py"
    doc["cwd"] = str(ROOT)
    path = tmp_path / "missing.json"
    path.write_text(json.dumps(doc))
    for cwd in (ROOT, tmp_path):
        done = subprocess.run([sys.executable, "-m", "mcp_tempest.fuzz.cli", "replay", str(path)], cwd=cwd,
                              env=regenerate.child_env(), capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 2 and "could not run the target" in done.stderr, done.stdout + done.stderr
