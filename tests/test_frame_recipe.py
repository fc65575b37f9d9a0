"""Huge generated frames are written as how they are made (targets/frame_recipe.py): transcripts
and repro files stay small, and reading them back makes the exact bytes again (a replay sends
them: the server below logs the digest of every line it gets)."""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from mcp_tempest.fuzz.properties.case import Case, Step
from mcp_tempest.strategies.malformed import HUGE_FRAME_SIZE
from mcp_tempest.strategies.protocol import PADDING_META_KEY
from mcp_tempest.targets import frame_recipe, wire
from mcp_tempest.targets.transcript import Transcript

PY = sys.executable
ROOT = Path(__file__).resolve().parent.parent


def huge_frame(size: int = HUGE_FRAME_SIZE) -> dict:
    frame = wire.build_request(7, "tools/list")
    frame["params"]["_meta"][PADDING_META_KEY] = "x" * size
    return frame


def test_a_transcript_with_a_huge_send_is_small_on_disk_and_exact_when_read() -> None:
    frame = huge_frame()
    line = orjson.dumps(frame) + b"\n"
    tr = Transcript("t", "stdio")
    tr.add("send", proc=0, message=frame, raw=line)
    tr.add("recv", proc=0, message={"jsonrpc": "2.0", "id": 7, "result": {}}, raw=b"{}")
    written = orjson.dumps(tr.to_json())
    assert len(written) < 4096, len(written)
    event = orjson.loads(written)["events"][0]
    assert event["raw_made"]["length"] == len(line)
    assert event["raw_made"]["sha256"] == hashlib.sha256(line).hexdigest()
    assert event["raw_made"]["prefix"].startswith('{"jsonrpc":"2.0"')
    back = Transcript.from_json(orjson.loads(written))
    assert back.events[0].raw == line and back.events[0].message == frame
    assert back.events[1].raw == b"{}"  # answers are kept as they came


def test_a_case_with_a_huge_step_is_small_and_exact() -> None:
    frame = huge_frame(2 * 2**20)
    steps = [Step(proc=0, frame=frame, raw=orjson.dumps(frame) + b"\r\n", mutation="huge-frame"),
             Step(proc=0, frame=frame)]  # a frame without raw bytes is made from its JSON
    case = Case(property="framing", steps=steps)
    written = orjson.dumps(case.to_json())
    assert len(written) < 8192
    back = Case.from_json(orjson.loads(written))
    assert back.steps[0].raw == steps[0].raw and back.steps[0].frame == frame
    assert back.steps[1].raw is None and back.steps[1].frame == frame
    assert back.steps[0].mutation == "huge-frame"


def test_what_is_not_made_of_runs_is_kept_whole() -> None:
    noise = os.urandom(300_000).hex().encode()
    assert frame_recipe.recipe_for(noise) is None
    tr = Transcript("t", "http")
    tr.add("send", proc=0, raw=noise)
    data = tr.to_json()["events"][0]
    assert data["raw"] == noise.decode() and "raw_made" not in data
    small = orjson.dumps(wire.build_request(1, "tools/list"))
    assert frame_recipe.recipe_for(small) is None


def test_a_tampered_recipe_is_refused_before_anything_is_made() -> None:
    recipe = frame_recipe.recipe_for(orjson.dumps(huge_frame(200_000)))
    assert recipe is not None
    bad_digest = {**recipe, "sha256": "0" * 64}
    with pytest.raises(ValueError, match="sha256"):
        frame_recipe.make(bad_digest)
    liar = {**recipe, "length": 2**40, "pieces": [["run", "x", 2**40]]}
    with pytest.raises(ValueError, match="at most"):
        frame_recipe.make(liar)
    inconsistent = {**recipe, "pieces": [["run", "x", 10**8]]}
    with pytest.raises(ValueError, match="makes"):
        frame_recipe.make(inconsistent)


def test_a_replay_sends_the_exact_bytes_of_a_huge_frame_again(tmp_path: Path) -> None:
    log = tmp_path / "lines.log"
    target = "stdio:" + shlex.join([PY, str(ROOT / "tests" / "hostile_targets" / "line_digests.py"), str(log)])
    frame = huge_frame()
    line = orjson.dumps(frame) + b"\n"
    tr = Transcript(target, "stdio")
    tr.add("spawn", proc=0, note="server")
    tr.add("send", proc=0, message=frame, raw=line)
    doc = {"id": "huge", "target": target, "property": "framing", "rule": "RPC-01", "transport": "stdio",
           "transcript": tr.to_json()}
    repro = tmp_path / "huge.json"
    repro.write_bytes(orjson.dumps(doc))
    assert repro.stat().st_size < 4096
    done = subprocess.run([PY, "-m", "mcp_tempest.fuzz.cli", "replay", str(repro)], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert f"{len(line)} {hashlib.sha256(line).hexdigest()}" in log.read_text().splitlines()
