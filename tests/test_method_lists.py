"""The MCP method lists come from one place (targets/wire.py), checked against the schema source.

The oracle (fuzz/oracle/facts.py), the finding buckets (fuzz/properties/judging.py), the frame
generators (strategies/schema_source.py, strategies/malformed.py) all derive from
`wire.MODERN_METHODS`; this fails when mcp-types' 2026-07-28 methods and that list part.
"""

from __future__ import annotations

from mcp_types import methods

from mcp_tempest.fuzz.oracle import facts
from mcp_tempest.fuzz.properties import judging
from mcp_tempest.strategies import malformed, schema_source
from mcp_tempest.strategies.schema_source import default_source
from mcp_tempest.targets import wire

REVISION = "2026-07-28"


def test_the_one_list_is_the_schema_sources_request_methods():
    assert set(wire.MODERN_METHODS) == set(default_source().requests)
    assert set(wire.MODERN_METHODS) == {m for m, v in methods.CLIENT_REQUESTS if v == REVISION}
    assert len(set(wire.MODERN_METHODS)) == len(wire.MODERN_METHODS)
    assert wire.MODERN_METHODS[0] == "server/discover"  # a shrunk request lands there


def test_the_method_subsets_agree_with_mcp_types():
    assert wire.INPUT_REQUIRED_METHODS == set(methods.INPUT_REQUIRED_METHODS)
    assert set(wire.NAME_HEADER_FIELD) <= set(wire.MODERN_METHODS)


def test_every_user_takes_the_list_from_wire():
    assert facts.MODERN_METHODS == frozenset(wire.MODERN_METHODS)
    assert set(wire.MODERN_METHODS) <= judging.KNOWN_METHODS
    assert schema_source.METHOD_ORDER is wire.MODERN_METHODS
    assert set(malformed._NO_NAME) | set(wire.NAME_HEADER_FIELD) == set(wire.MODERN_METHODS)
