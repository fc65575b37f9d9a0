"""`results.sarif`: the campaign's findings as SARIF 2.1.0, for code-scanning dashboards.

Why SARIF beside junit.xml: GitHub code scanning (upload-sarif), GitLab and most CI dashboards
read it natively, keep findings across runs by fingerprint (our finding id is stable for the same
rule, method, mutation and transport), and show the strength as a level. A finding has no source
line in the user's repository, so its location is the reproduction file the campaign wrote.
Levels: MUST -> error, SHOULD -> warning, HEURISTIC -> note. Against a --known baseline every
result says whether it is new (`baselineState` "new") or one the baseline knew ("unchanged",
with an external suppression giving the baseline's reason), so a dashboard shows a green run's
known bugs as accepted, not as new errors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from mcp_tempest.fuzz.findings import Finding, probe_text

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {"MUST": "error", "SHOULD": "warning"}
INFORMATION_URI = "https://pypi.org/project/mcp-tempest/"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mcp-tempest")
    except PackageNotFoundError:
        return "0+unknown"


def _rule_text(rule: str, fallback: str) -> str:
    from mcp_tempest.fuzz.oracle.model import RULES

    known = RULES.get(rule)
    return known.description if known is not None and known.description else fallback


def sarif_log(findings: Sequence[Finding], *, target: str, seed: int | None, out_uri: str = "",
              known: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The SARIF document; `out_uri` is the output folder the repro paths are relative to, `known`
    the baseline's groups seen again (id -> reason, fuzz/report_status.py known_groups)."""
    known = known or {}
    rules: dict[str, dict[str, Any]] = {}
    results = []
    for f in findings:
        rules.setdefault(f.rule, {
            "id": f.rule,
            "shortDescription": {"text": _rule_text(f.rule, f.title)},
            "properties": {"strength": f.strength},
            "defaultConfiguration": {"level": LEVEL.get(f.strength, "note")},
        })
        where = f"{f.method or 'any method'} over {f.transport}" + (f", probes {probe_text(f)}" if f.probe else "")
        results.append({
            "ruleId": f.rule,
            "level": LEVEL.get(f.strength, "note"),
            "message": {"text": f"{f.strength} {f.rule}: {f.title} ({where}; seen {f.count}x). "
                                f"Reproduce: mcp-tempest replay {f.repro}"},
            "locations": [{"physicalLocation": {"artifactLocation": {
                "uri": f.repro, **({"uriBaseId": "OUT"} if out_uri else {})}}}],
            "partialFingerprints": {"mcpTempestFinding/v1": f.id},
            "baselineState": "unchanged" if f.id in known else "new",
            **({"suppressions": [{"kind": "external", "status": "accepted", "justification": known[f.id]}]}
               if f.id in known else {}),
            "properties": {"method": f.method, "transport": f.transport, "mutation": f.mutation,
                           "count": f.count, "property": f.property, "flaky": f.flaky},
        })
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "mcp-tempest", "version": _version(), "informationUri": INFORMATION_URI,
                            "rules": list(rules.values())}},
        "results": results,
        "properties": {"target": target, "seed": seed, "revision": "2026-07-28"},
    }
    if out_uri:
        run["originalUriBaseIds"] = {"OUT": {"uri": out_uri}}
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def sarif_bytes(findings: Sequence[Finding], *, target: str, seed: int | None,
                known: Mapping[str, str] | None = None) -> bytes:
    return orjson.dumps(sarif_log(findings, target=target, seed=seed, known=known), option=orjson.OPT_INDENT_2)
