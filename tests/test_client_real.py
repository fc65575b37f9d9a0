"""Real clients under client mode: the README section is what the committed campaigns found, and
(slow, in CI) each campaign run again finds the same deviations."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load_generator() -> ModuleType:
    """tests/clients/regenerate.py under its own module name: tests/real_servers has a
    `regenerate` too, and both are imported in one pytest session."""
    spec = importlib.util.spec_from_file_location("client_regenerate", ROOT / "tests" / "clients" / "regenerate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


regenerate = _load_generator()

NODE_CLIENT = ROOT / "tests" / "servers" / "node_modules" / "@modelcontextprotocol" / "client"


def test_the_readme_section_is_what_findings_json_renders() -> None:
    assert regenerate.check() == []


def test_every_committed_finding_is_argued_at_digests_strength() -> None:
    data = json.loads(regenerate.FINDINGS.read_text())
    rules = {"RPC-01": "MUST", "RPC-02": "MUST", "RPC-03": "MUST", "RPC-04": "MUST", "RPC-05": "MUST",
             "RPC-11": "MUST", "STDIO-04": "MUST", "HTTP-03": "MUST", "HTTP-04": "MUST", "HDR-06": "MUST",
             "META-04": "MUST", "RT-04": "MUST", "RT-05": "MUST", "MRTR-09": "MUST", "MRTR-10": "MUST",
             "MRTR-11": "MUST", "MRTR-12": "MUST", "VER-03": "SHOULD", "CAN-03": "MUST",
             "CLIENT-LIVENESS": "HEURISTIC"}
    for f in data["findings"]:
        assert rules[f["rule"]] == f["strength"], f
        assert (f["rule"], f["strength"], f.get("mutation")) in regenerate.WHY


@pytest.mark.slow
@pytest.mark.parametrize("campaign", regenerate.CAMPAIGNS, ids=lambda c: c.name)
def test_each_real_client_campaign_finds_what_is_committed(campaign: Any, tmp_path: Path) -> None:
    if campaign.client == "typescript-sdk" and not NODE_CLIENT.is_dir():
        pytest.skip("run bash .ci/install-servers.sh first")
    status, index, _seconds, said = regenerate.run_campaign(campaign, tmp_path / campaign.name)
    assert status in (0, 1), said
    data = json.loads(regenerate.FINDINGS.read_text())
    committed = {(f["rule"], f["strength"], f.get("mutation")) for f in data["findings"]
                 if f["campaign"] == campaign.name}
    found = {(f["rule"], f["strength"], f.get("mutation")) for f in index["findings"]}
    assert found == committed


@pytest.mark.slow
def test_a_committed_client_repro_replays_from_the_project_root() -> None:
    data = json.loads(regenerate.FINDINGS.read_text())
    if not data["findings"]:
        pytest.skip("no committed client finding")
    f = data["findings"][0]
    exe = shutil.which("mcp-tempest", path=str(Path(sys.executable).parent))
    done = subprocess.run([exe or "mcp-tempest", "replay", f["repro"]], cwd=ROOT, env=regenerate.child_env(),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
