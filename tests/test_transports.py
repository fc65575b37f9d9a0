"""Transports are objects (targets/transports.py) whose names are what files carry."""

from __future__ import annotations

import pickle

import orjson
import pytest

from mcp_tempest.targets.target_spec import default_target
from mcp_tempest.targets.transcript import Transcript
from mcp_tempest.targets.transports import HTTP, STDIO, TRANSPORTS, transport_named


def test_a_transcript_keeps_the_name_on_disk_and_the_object_in_memory() -> None:
    for transport in TRANSPORTS.values():
        tr = Transcript("t", transport.name)
        assert tr.transport is transport
        data = orjson.loads(orjson.dumps(tr.to_json()))
        assert data["transport"] == transport.name and type(data["transport"]) is str
        assert Transcript.from_json(data).transport is transport
        assert pickle.loads(pickle.dumps(tr)).transport is transport


def test_the_two_transports_differ_in_what_code_asks_of_them() -> None:
    assert STDIO.line_framed and not STDIO.pairs_by_request and not STDIO.http_semantics
    assert HTTP.pairs_by_request and HTTP.http_semantics and not HTTP.line_framed
    assert default_target("stdio").transport is STDIO and default_target("http").transport is HTTP


def test_an_unknown_name_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown transport 'ws'"):
        transport_named("ws")
    with pytest.raises(ValueError):
        Transcript.from_json({"target": "t", "transport": "ws", "events": []})
