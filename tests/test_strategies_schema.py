"""Both schema sources: same interface, errata as documented, no false rejection of official examples."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mcp_tempest.strategies import errata
from mcp_tempest.strategies.schema_source import SchemaSourceError, load_schema_source

SPEC = Path(__file__).resolve().parents[2] / "shared" / "spec" / "2026-07-28"
SCHEMA = SPEC / "schema.json"
EXAMPLES = SPEC / "examples"

TEN_METHODS = (
    "server/discover",
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
    "tools/call",
    "resources/read",
    "prompts/get",
    "completion/complete",
    "subscriptions/listen",
)


def _need_spec() -> None:
    if not SCHEMA.is_file():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{SCHEMA} is missing (CI must have ../shared beside the checkout)")
        pytest.skip(f"{SCHEMA} not found: the official spec files live in ../shared beside the checkout")


@pytest.fixture(scope="module", params=["mcp-types", "schema.json"])
def source(request):
    if request.param == "mcp-types":
        return load_schema_source()
    _need_spec()
    return load_schema_source(SCHEMA)


def test_both_sources_index_the_same_revision(source):
    assert source.revision == "2026-07-28"
    assert tuple(source.requests) == TEN_METHODS
    assert source.client_notifications == ("notifications/cancelled",)
    assert source.input_required_methods == {"tools/call", "resources/read", "prompts/get"}
    assert source.cacheable_methods == {
        "server/discover", "tools/list", "resources/list", "resources/templates/list", "prompts/list", "resources/read",
    }
    assert set(source.input_requests) == {"elicitation/create", "sampling/createMessage", "roots/list"}
    assert set(source.input_responses) == set(source.input_requests)
    for method in TEN_METHODS:
        assert source.result_def(method, "complete") is not None
        node = source.params_node(method)
        assert "_meta" in node["required"], method
    # dispatch on resultType first (RT-06): only the three MRTR methods may be input_required (MRTR-01)
    assert source.result_schema("tools/list", "input_required") is None
    assert source.result_schema("tools/call", "partial") is None
    assert source.result_def("tools/call", "input_required") == "InputRequiredResult"


def test_errata_applied_are_the_documented_ones(source):
    expected = {
        "mcp-types": (
            "mcp-types/optional-null",
            "mcp-types/uri-formats",
            "mcp-types/server-info-untyped",
            "both/read-resource-cache-hints",
        ),
        "schema.json": (
            "schema.json/jsonvalue-number-null",
            "schema.json/elicit-content-number",
            "both/read-resource-cache-hints",
        ),
    }
    kind = "mcp-types" if source.name.startswith("mcp-types") else "schema.json"
    # If this fails after an upgrade, a generator fixed or introduced an artifact: update errata.py.
    assert source.errata_applied == expected[kind]
    ids = [e.id for e in errata.ERRATA]
    assert len(ids) == len(set(ids))
    assert set(source.errata_applied) <= set(ids)


def test_mcp_types_optional_fields_are_omittable_not_nullable():
    source = load_schema_source()
    blob = json.dumps(source.defs)
    assert '{"type": "null"}' not in blob
    meta = source.defs["RequestMetaObject"]
    assert meta["properties"]["io.modelcontextprotocol/logLevel"]["type"] == "string"
    # a null for an optional field is rejected (that is the `null-optional-field` mutation)
    frame = {
        "jsonrpc": "2.0", "id": 1, "method": "tools/list",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                             "io.modelcontextprotocol/clientCapabilities": {},
                             "io.modelcontextprotocol/clientInfo": None}},
    }
    assert source.validation_errors("ListToolsRequest", frame)
    del frame["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]
    assert source.validation_errors("ListToolsRequest", frame) == []


def test_official_errata_admit_fractions_and_null_in_json_values():
    _need_spec()
    source = load_schema_source(SCHEMA)
    assert source.validator("JSONValue").is_valid({"a": [1.5, None, "x", True]})
    assert source.validator("ElicitResult").is_valid({"action": "accept", "content": {"price": 2.5}})
    raw = json.loads(SCHEMA.read_text())["$defs"]
    assert "number" not in raw["JSONValue"]["anyOf"][2]["type"]  # the file itself is untouched


def _examples():
    if not EXAMPLES.is_dir():
        return []
    out = []
    for folder in sorted(EXAMPLES.iterdir()):
        for path in sorted(folder.glob("*.json")):
            out.append((folder.name, path))
    return out


# Example types outside a source's message interface: the error envelopes (the oracle checks
# codes itself) and, for mcp-types, the elicitation field schemas it leaves untyped (erratum
# mcp-types/requested-schema-untyped).
_OUT_OF_SCOPE = {
    "mcp-types": {
        "HeaderMismatchError", "InternalError", "InvalidParamsError", "MethodNotFoundError",
        "MissingRequiredClientCapabilityError", "ParseError", "UnsupportedProtocolVersionError",
        "BooleanSchema", "NumberSchema", "StringSchema", "TitledMultiSelectEnumSchema",
        "TitledSingleSelectEnumSchema", "UntitledMultiSelectEnumSchema", "UntitledSingleSelectEnumSchema",
    },
    "schema.json": set(),
}


def test_every_official_example_validates_against_our_schema(source):
    _need_spec()
    kind = "mcp-types" if source.name.startswith("mcp-types") else "schema.json"
    response_of = {source.requests[m][: -len("Request")] + "ResultResponse": m for m in source.requests}
    checked = 0
    unknown = []
    for type_name, path in _examples():
        instance = json.loads(path.read_text())
        where = f"{type_name}/{path.name}"
        if type_name in source.defs:
            assert source.validation_errors(type_name, instance) == [], where
        elif type_name in response_of:  # a full response: dispatch on resultType, then validate
            result = instance["result"]
            name = source.result_def(response_of[type_name], result["resultType"])
            assert name is not None, where
            assert source.validation_errors(name, result) == [], where
            assert instance["jsonrpc"] == "2.0" and isinstance(instance["id"], (str, int))
        elif type_name == "InputResponses":
            for key, answer in instance.items():
                assert any(source.validator(d).is_valid(answer) for d in source.input_responses.values()), (where, key)
        elif type_name == "InputRequests":
            for key, req in instance.items():
                assert source.validator(source.input_requests[req["method"]]).is_valid(req), (where, key)
        elif type_name in _OUT_OF_SCOPE[kind]:
            continue
        else:
            unknown.append(type_name)
            continue
        checked += 1
    assert unknown == []
    assert checked >= 99


def test_client_request_examples_are_all_covered(source):
    _need_spec()
    covered = {name for name, _ in _examples()}
    for method in TEN_METHODS:
        request = source.requests[method]
        if request in covered:
            for path in sorted((EXAMPLES / request).glob("*.json")):
                frame = json.loads(path.read_text())
                assert frame["method"] == method
                assert source.validation_errors(request, frame) == [], path.name


def test_bad_schema_paths_give_one_line_errors(tmp_path):
    with pytest.raises(SchemaSourceError, match="cannot read schema file") as err:
        load_schema_source(tmp_path / "missing.json")
    assert "\n" not in str(err.value)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SchemaSourceError, match="is not JSON"):
        load_schema_source(bad)
    other = tmp_path / "other.json"
    other.write_text('{"$defs": {"Foo": {}}}')
    with pytest.raises(SchemaSourceError, match="not an MCP schema.json"):
        load_schema_source(other)
