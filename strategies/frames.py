"""Valid frames: client requests, the client notification, and server results, per method.

Why these are built on the compiled schema rather than written by hand: whatever the schema
source says a request may contain, the frames may contain, so a new optional field in
`mcp-types` shows up in the fuzz without a code change. A few members are pinned instead of
generated, because "valid per schema" is not "valid per spec":
- `_meta["io.modelcontextprotocol/protocolVersion"]` is the revision under test (a random
  string would be an unsupported version, META-06: that is the `meta-version-unsupported`
  mutation, not a valid frame);
- first-leg requests carry neither `inputResponses` nor `requestState` (those belong to an MRTR
  retry, see `strategies/mrtr.py`);
- ids are strings or integers in the JSON-safe range (a JS server cannot echo 2**60 exactly).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from hypothesis import strategies as st

from mcp_tempest.strategies import formats
from mcp_tempest.strategies import protocol as p
from mcp_tempest.strategies.compiler import JSON_SAFE_INT, constant, record
from mcp_tempest.strategies.schema_source import SchemaSource, default_source

CLIENT_NOTIFICATION = "notifications/cancelled"
MRTR_RETRY_FIELDS = frozenset({"inputResponses", "requestState"})

# Methods whose request is answered promptly; `subscriptions/listen` holds its stream open
# until cancelled, so a property that expects one reply per request should leave it out.
LONG_LIVED_METHODS = frozenset({"subscriptions/listen"})


def _source(schema_source: SchemaSource | None) -> SchemaSource:
    return schema_source if schema_source is not None else default_source()


def request_ids() -> st.SearchStrategy[int | str]:
    """RequestId values (RPC-03): integers in ±(2**53-1) or strings; shrinks to 0."""
    return st.one_of(st.integers(-JSON_SAFE_INT, JSON_SAFE_INT), st.text(max_size=16))


def traceparent() -> st.SearchStrategy[str]:
    """A W3C traceparent (version 00, non-zero ids), one of the unprefixed reserved `_meta` keys.

    Drawn as one 25-byte string (trace id, span id, a flags byte) rather than a tuple of three
    draws: the same values, a third of the Hypothesis draws (bench_strategies.py).
    """
    return st.binary(min_size=25, max_size=25).filter(_nonzero_ids).map(_traceparent_text)


def _nonzero_ids(raw: bytes) -> bool:
    return any(raw[:16]) and any(raw[16:24])


def _traceparent_text(raw: bytes) -> str:
    flags = "01" if raw[24] % 2 == 0 else "00"  # shrinks to "01" (sampled), as before
    return f"00-{raw[:16].hex()}-{raw[16:24].hex()}-{flags}"


@functools.lru_cache(maxsize=64)
def _meta_strategy(source: SchemaSource, version: str) -> st.SearchStrategy[dict[str, Any]]:
    meta_node = source.compiler.deref(
        source.params_node(source.request_methods[0]).get("properties", {}).get("_meta", {})
    )
    overrides: dict[str, st.SearchStrategy[Any]] = {p.PROTOCOL_VERSION_KEY: constant(version)}
    if "traceparent" not in meta_node.get("properties", {}):
        overrides["traceparent"] = traceparent()
    return source.compiler.object_strategy(meta_node, overrides=overrides, sparse=True)


def request_meta(
    *,
    schema_source: SchemaSource | None = None,
    version: str = p.REVISION,
    capabilities: Mapping[str, Any] | None = None,
) -> st.SearchStrategy[dict[str, Any]]:
    """`params._meta` of a request: the two required keys plus generated optional ones.

    `capabilities` pins `clientCapabilities` (e.g. to declare elicitation so MRTR can happen);
    by default they are generated from the schema.
    """
    strat = _meta_strategy(_source(schema_source), version)
    if capabilities is None:
        return strat
    pinned = dict(capabilities)
    return strat.map(lambda meta: {**meta, p.CLIENT_CAPABILITIES_KEY: _json_copy(pinned)})


def _json_copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _json_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_copy(v) for v in value]
    return value


@functools.lru_cache(maxsize=256)
def _params_strategy(
    source: SchemaSource, method: str, version: str, first_leg: bool
) -> st.SearchStrategy[dict[str, Any]]:
    node = source.params_node(method)
    omit = MRTR_RETRY_FIELDS if first_leg else frozenset()
    return source.compiler.object_strategy(node, overrides={"_meta": _meta_strategy(source, version)}, omit=omit)


def request_params(
    method: str,
    *,
    schema_source: SchemaSource | None = None,
    version: str = p.REVISION,
    first_leg: bool = True,
    capabilities: Mapping[str, Any] | None = None,
) -> st.SearchStrategy[dict[str, Any]]:
    source = _source(schema_source)
    source.request_def(method)  # one-line error for an unknown method
    strat = _params_strategy(source, method, version, first_leg)
    if capabilities is None:
        return strat
    pinned = dict(capabilities)
    return strat.map(
        lambda params: {**params, "_meta": {**params["_meta"], p.CLIENT_CAPABILITIES_KEY: _json_copy(pinned)}}
    )


def valid_request(
    method: str,
    *,
    schema_source: SchemaSource | None = None,
    request_id: int | str | None = None,
    version: str = p.REVISION,
    first_leg: bool = True,
    capabilities: Mapping[str, Any] | None = None,
) -> st.SearchStrategy[dict[str, Any]]:
    """A complete, valid JSON-RPC request frame for `method` of the revision.

    request_id: pin the id (the runner keeps ids unique among requests in flight, RPC-05).
    first_leg: leave out `inputResponses`/`requestState` (True) or let the schema generate them.
    capabilities: pin `clientCapabilities` instead of generating them.
    """
    params = request_params(
        method, schema_source=schema_source, version=version, first_leg=first_leg, capabilities=capabilities
    )
    ids = constant(request_id) if request_id is not None else request_ids()
    return record({"jsonrpc": constant(p.JSONRPC), "id": ids, "method": constant(method), "params": params})


def valid_notification(
    method: str = CLIENT_NOTIFICATION,
    *,
    schema_source: SchemaSource | None = None,
    request_id: int | str | None = None,
) -> st.SearchStrategy[dict[str, Any]]:
    """A valid client notification (only `notifications/cancelled` exists in 2026-07-28).

    request_id pins `params.requestId` (the request being cancelled).
    """
    source = _source(schema_source)
    if method not in source.client_notifications:
        raise ValueError(f"{method!r} is not a client notification of {source.revision}")
    node = source.params_node(method)
    overrides = {"requestId": constant(request_id)} if request_id is not None else None
    params = source.compiler.object_strategy(node, overrides=overrides, omit=frozenset({"_meta"}))
    return record({"jsonrpc": constant(p.JSONRPC), "method": constant(method), "params": params})


def client_methods(schema_source: SchemaSource | None = None) -> tuple[str, ...]:
    """The request methods and client notifications of the revision, simplest first."""
    source = _source(schema_source)
    return (*source.request_methods, *source.client_notifications)


def valid_frame(method: str, *, schema_source: SchemaSource | None = None) -> st.SearchStrategy[dict[str, Any]]:
    """A valid request or client notification, by method name."""
    source = _source(schema_source)
    if method in source.client_notifications:
        return valid_notification(method, schema_source=source)
    return valid_request(method, schema_source=source)


def any_valid_request(
    *, schema_source: SchemaSource | None = None, methods: Iterable[str] | None = None
) -> st.SearchStrategy[dict[str, Any]]:
    """A valid request of any method (default: all ten); shrinks toward `server/discover`."""
    source = _source(schema_source)
    chosen = tuple(methods) if methods is not None else source.request_methods
    return st.one_of([valid_request(m, schema_source=source) for m in chosen])


def any_valid_frame(*, schema_source: SchemaSource | None = None) -> st.SearchStrategy[dict[str, Any]]:
    """A valid request of any method, or the client notification."""
    source = _source(schema_source)
    return st.one_of([valid_frame(m, schema_source=source) for m in client_methods(source)])


# -- results (for checking our own parser and clients, and as MRTR context) ----------------------


@functools.lru_cache(maxsize=64)
def _complete_result(source: SchemaSource, method: str) -> st.SearchStrategy[dict[str, Any]]:
    name = source.result_def(method, p.RESULT_COMPLETE)
    if name is None:
        raise ValueError(f"{method!r} has no complete result in {source.name}")
    node = source.definition(name)
    return source.compiler.object_strategy(node, overrides={"resultType": constant(p.RESULT_COMPLETE)})


def valid_result(
    method: str, result_type: str = p.RESULT_COMPLETE, *, schema_source: SchemaSource | None = None
) -> st.SearchStrategy[dict[str, Any]]:
    """A valid `result` object of `method` with the given resultType.

    `input_required` results come from the curated MRTR vocabulary (strategies/mrtr.py), whose
    elicitation forms are real PrimitiveSchemaDefinitions whatever the source says.
    """
    source = _source(schema_source)
    if result_type == p.RESULT_INPUT_REQUIRED:
        if method not in source.input_required_methods:
            raise ValueError(f"{method!r} cannot answer input_required (MRTR-01)")
        from mcp_tempest.strategies.mrtr import input_required_result

        return input_required_result()
    if result_type != p.RESULT_COMPLETE:
        raise ValueError(f"unknown resultType {result_type!r}")
    return _complete_result(source, method)


def valid_response(
    method: str,
    result_type: str = p.RESULT_COMPLETE,
    *,
    schema_source: SchemaSource | None = None,
    request_id: int | str | None = None,
) -> st.SearchStrategy[dict[str, Any]]:
    """A JSON-RPC result response as a server would send it."""
    ids = constant(request_id) if request_id is not None else request_ids()
    return record(
        {
            "jsonrpc": constant(p.JSONRPC),
            "id": ids,
            "result": valid_result(method, result_type, schema_source=schema_source),
        }
    )


def unknown_method_names() -> st.SearchStrategy[str]:
    """Method names no revision defines (shaped like real ones, so routing code is exercised)."""
    return st.tuples(
        st.sampled_from(["tools", "resources", "prompts", "tempest", "server"]), formats.identifier(1, 8)
    ).map(lambda t: f"{t[0]}/x-{t[1]}")
