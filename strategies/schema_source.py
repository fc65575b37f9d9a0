"""Where the message schema comes from: the `mcp-types` wire types, or an official schema.json.

Why two sources behind one interface: at run time the schema comes from the `mcp-types`
package (the MCP project's generated wire types), so the harness needs no spec checkout; the
official `schema.json` is the reference we hold it against, and users may point at a newer
file. Both are turned into one JSON Schema 2020-12 document whose `$defs` hold every named
type (errata applied, see `strategies/errata.py`), plus an index saying, per method, which
definition is the request, its params, its results by `resultType`, and the MRTR input
requests and responses. Everything downstream (compiler, frames, oracle validation) reads
only that interface.

`load_schema_source(path)` is the one place in `strategies/` that reads a file, once, at
setup; everything else here is pure.
"""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import Mapping
from types import MappingProxyType, UnionType
from typing import Any, get_args

import orjson
from jsonschema import Draft202012Validator

from mcp_tempest.strategies import errata
from mcp_tempest.strategies.compiler import SchemaCompiler
from mcp_tempest.targets import wire

REVISION = "2026-07-28"
DEFS_PREFIX = "#/$defs/"

COMPLETE = "complete"
INPUT_REQUIRED = "input_required"
CORE_RESULT_TYPES = (COMPLETE, INPUT_REQUIRED)

# Inner MRTR results, paired with the input-request method they answer. The names are the
# same in both sources; membership is checked against each source's InputResponse union.
_RESPONSE_DEF_FOR_INPUT = {
    "elicitation/create": "ElicitResult",
    "sampling/createMessage": "CreateMessageResult",
    "roots/list": "ListRootsResult",
}


class SchemaSourceError(ValueError):
    """The schema cannot be used; the message is one line, fit for a CLI error."""


def _ref_name(ref: str) -> str:
    if not ref.startswith(DEFS_PREFIX):
        raise SchemaSourceError(f"expected a reference into $defs, got {ref!r}")
    return ref[len(DEFS_PREFIX) :]


class SchemaSource:
    """One revision's message schema: a `$defs` document plus a per-method index.

    Attributes other modules use:
      name, revision, document (`{"$schema", "$defs"}`), requests (method -> def name),
      notifications (method -> def name, both directions), client_notifications (method names),
      results (method -> {resultType -> def name}), input_requests / input_responses (input
      method -> def name), cacheable_methods, input_required_methods, errata_applied.
    """

    def __init__(
        self,
        *,
        name: str,
        revision: str,
        defs: dict[str, Any],
        requests: Mapping[str, str],
        notifications: Mapping[str, str],
        client_notifications: tuple[str, ...],
        results: Mapping[str, Mapping[str, str]],
        input_requests: Mapping[str, str],
        input_responses: Mapping[str, str],
        cacheable_methods: frozenset[str],
        input_required_methods: frozenset[str],
        errata_applied: tuple[str, ...],
    ) -> None:
        self.name = name
        self.revision = revision
        self.document: dict[str, Any] = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": defs}
        self.requests = MappingProxyType(dict(requests))
        self.notifications = MappingProxyType(dict(notifications))
        self.client_notifications = client_notifications
        self.results = MappingProxyType({m: MappingProxyType(dict(r)) for m, r in results.items()})
        self.input_requests = MappingProxyType(dict(input_requests))
        self.input_responses = MappingProxyType(dict(input_responses))
        self.cacheable_methods = cacheable_methods
        self.input_required_methods = input_required_methods
        self.errata_applied = errata_applied
        self.compiler = SchemaCompiler(self.document)
        self._validators: dict[str, Draft202012Validator] = {}

    def __repr__(self) -> str:
        return f"SchemaSource({self.name!r}, revision={self.revision!r})"

    # -- lookups ----------------------------------------------------------------------------

    @property
    def defs(self) -> dict[str, Any]:
        return self.document["$defs"]

    @property
    def request_methods(self) -> tuple[str, ...]:
        return tuple(self.requests)

    def definition(self, name: str) -> Any:
        try:
            return self.defs[name]
        except KeyError:
            raise SchemaSourceError(f"{self.name} has no definition {name!r}") from None

    def schema(self, name: str) -> dict[str, Any]:
        """A standalone schema (a `$ref` plus all `$defs`) for the definition `name`."""
        self.definition(name)
        return {"$ref": DEFS_PREFIX + name, "$defs": self.defs}

    def request_def(self, method: str) -> str:
        try:
            return self.requests[method]
        except KeyError:
            raise SchemaSourceError(
                f"{method!r} is not a client request of {self.revision} (known: {', '.join(self.requests)})"
            ) from None

    def params_node(self, method: str) -> Any:
        """The (dereferenced) params schema node of a request or notification method."""
        name = self.requests.get(method) or self.notifications.get(method)
        if name is None:
            raise SchemaSourceError(f"unknown method {method!r} for {self.name}")
        params = self.definition(name).get("properties", {}).get("params")
        if params is None:
            raise SchemaSourceError(f"{name} has no params")
        return self.compiler.deref(params)

    def request_schema(self, method: str) -> dict[str, Any]:
        return self.schema(self.request_def(method))

    def notification_schema(self, method: str) -> dict[str, Any]:
        try:
            return self.schema(self.notifications[method])
        except KeyError:
            raise SchemaSourceError(f"{method!r} is not a notification of {self.revision}") from None

    def result_def(self, method: str, result_type: str) -> str | None:
        """The definition for a `result` of `method` carrying `resultType == result_type`.

        None when the method cannot answer with that resultType (for example `input_required`
        on a list method, MRTR-01, or an unknown value, RT-04): dispatch on the value first,
        then validate (RT-06).
        """
        return self.results.get(method, {}).get(result_type)

    def result_schema(self, method: str, result_type: str) -> dict[str, Any] | None:
        name = self.result_def(method, result_type)
        return None if name is None else self.schema(name)

    def input_request_schema(self, kind: str) -> dict[str, Any]:
        return self.schema(self.input_requests[kind])

    def input_response_schema(self, kind: str) -> dict[str, Any]:
        return self.schema(self.input_responses[kind])

    def validator(self, name: str) -> Draft202012Validator:
        """A cached 2020-12 validator for the definition `name` (formats not asserted)."""
        found = self._validators.get(name)
        if found is None:
            found = Draft202012Validator(self.schema(name))
            self._validators[name] = found
        return found

    def validation_errors(self, name: str, instance: Any) -> list[str]:
        """Readable one-line errors (`path: message`) of `instance` against definition `name`."""
        out = []
        for err in self.validator(name).iter_errors(instance):
            path = "/".join(str(p) for p in err.absolute_path) or "<root>"
            out.append(f"{path}: {err.message}")
        return out


# -- building from the official schema.json ----------------------------------------------------


def _union_refs(defs: dict[str, Any], name: str) -> list[str]:
    node = defs.get(name)
    if node is None:
        return []
    if "anyOf" in node or "oneOf" in node:
        return [_ref_name(arm["$ref"]) for arm in node.get("anyOf", node.get("oneOf", [])) if "$ref" in arm]
    return [name]


def _method_const(defs: dict[str, Any], name: str) -> str | None:
    method = defs.get(name, {}).get("properties", {}).get("method", {})
    const = method.get("const") if isinstance(method, dict) else None
    return const if isinstance(const, str) else None


def _follow(defs: dict[str, Any], node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        node = defs[_ref_name(node["$ref"])]
    return node


def _arm_names(defs: dict[str, Any], node: Any) -> list[str]:
    """Definition names of a `$ref` or a union of `$ref`s (following one level of aliasing)."""
    if isinstance(node, dict) and "$ref" in node:
        name = _ref_name(node["$ref"])
        target = defs[name]
        if "anyOf" in target or "oneOf" in target:
            return _arm_names(defs, target)
        return [name]
    if isinstance(node, dict) and ("anyOf" in node or "oneOf" in node):
        names: list[str] = []
        for arm in node.get("anyOf", node.get("oneOf", [])):
            names.extend(_arm_names(defs, arm))
        return names
    return []


def _is_input_required_def(defs: dict[str, Any], name: str) -> bool:
    return "inputRequests" in defs.get(name, {}).get("properties", {})


def _mrtr_index(defs: dict[str, Any], results: dict[str, dict[str, str]], requests: dict[str, str]):
    input_requests: dict[str, str] = {}
    input_responses: dict[str, str] = {}
    ir_name = next((r[INPUT_REQUIRED] for r in results.values() if INPUT_REQUIRED in r), None)
    if ir_name is None:
        return input_requests, input_responses
    ir_prop = defs[ir_name]["properties"]["inputRequests"]
    holder = _follow(defs, ir_prop)
    for arm in _arm_names(defs, holder.get("additionalProperties", {})):
        method = _method_const(defs, arm)
        if method:
            input_requests[method] = arm
    answer_arms: set[str] = set()
    for req_name in requests.values():
        params = _follow(defs, defs[req_name].get("properties", {}).get("params", {}))
        resp = params.get("properties", {}).get("inputResponses") if isinstance(params, dict) else None
        if resp is not None:
            answer_arms.update(_arm_names(defs, _follow(defs, resp).get("additionalProperties", {})))
    for method, def_name in _RESPONSE_DEF_FOR_INPUT.items():
        if def_name in answer_arms:
            input_responses[method] = def_name
    return input_requests, input_responses


def _cacheable(defs: dict[str, Any], results: dict[str, dict[str, str]]) -> frozenset[str]:
    out = set()
    for method, by_type in results.items():
        props = defs.get(by_type.get(COMPLETE, ""), {}).get("properties", {})
        if "ttlMs" in props and "cacheScope" in props:
            out.add(method)
    return frozenset(out)


def source_from_document(document: dict[str, Any], *, name: str) -> SchemaSource:
    """Build a source from a parsed official schema.json (pure; the document is copied)."""
    if not isinstance(document, dict) or not isinstance(document.get("$defs"), dict):
        raise SchemaSourceError(f"{name}: no $defs object: not a 2020-12 MCP schema.json")
    defs = copy.deepcopy(document["$defs"])
    if "ClientRequest" not in defs:
        raise SchemaSourceError(f"{name}: no $defs/ClientRequest: not an MCP schema.json")
    applied = errata.apply_errata(defs, errata.SCHEMA_JSON)

    requests: dict[str, str] = {}
    for req in _union_refs(defs, "ClientRequest"):
        method = _method_const(defs, req)
        if method:
            requests[method] = req
    if not requests:
        raise SchemaSourceError(f"{name}: ClientRequest names no request with a method const")

    notifications: dict[str, str] = {}
    client_notifications: list[str] = []
    # ServerNotification first: it names the specific definitions (CancelledNotification),
    # while ClientNotification may itself be the one definition it allows.
    for union, is_client in (("ServerNotification", False), ("ClientNotification", True)):
        for note in _union_refs(defs, union):
            method = _method_const(defs, note)
            if method:
                notifications.setdefault(method, note)
                if is_client and method not in client_notifications:
                    client_notifications.append(method)

    results: dict[str, dict[str, str]] = {}
    for method, req in requests.items():
        response = req[: -len("Request")] + "ResultResponse" if req.endswith("Request") else None
        if response is None or response not in defs:
            raise SchemaSourceError(f"{name}: no result response definition for {req}")
        result_node = defs[response].get("properties", {}).get("result")
        by_type: dict[str, str] = {}
        for arm in _arm_names(defs, result_node):
            by_type[INPUT_REQUIRED if _is_input_required_def(defs, arm) else COMPLETE] = arm
        results[method] = by_type

    input_requests, input_responses = _mrtr_index(defs, results, requests)
    revision = _revision_of(defs) or REVISION
    return SchemaSource(
        name=name,
        revision=revision,
        defs=defs,
        requests=dict(sorted(requests.items(), key=lambda kv: _method_order(kv[0]))),
        notifications=notifications,
        client_notifications=tuple(client_notifications),
        results=results,
        input_requests=input_requests,
        input_responses=input_responses,
        cacheable_methods=_cacheable(defs, results),
        input_required_methods=frozenset(m for m, r in results.items() if INPUT_REQUIRED in r),
        errata_applied=applied,
    )


def _revision_of(defs: dict[str, Any]) -> str | None:
    desc = defs.get("LATEST_PROTOCOL_VERSION")
    return desc.get("const") if isinstance(desc, dict) else None


# -- building from mcp-types -------------------------------------------------------------------

# Methods in the order the frames and the CLI list them: the simplest request first, so a
# shrunk `any_valid_request()` lands on `server/discover`.
METHOD_ORDER = wire.MODERN_METHODS


def _method_order(method: str) -> tuple[int, str]:
    return (METHOD_ORDER.index(method) if method in METHOD_ORDER else len(METHOD_ORDER), method)


def source_from_mcp_types(revision: str = REVISION) -> SchemaSource:
    """Build a source from the public per-version maps of `mcp_types.methods`."""
    from pydantic import TypeAdapter

    try:
        from mcp_types import methods
    except ImportError as exc:  # pragma: no cover - dependency of the project
        raise SchemaSourceError(f"mcp-types is not importable: {exc}") from None

    inputs: list[tuple[Any, Any, Any]] = []

    def add(kind: str, method: str, target: Any) -> None:
        arms = get_args(target) if isinstance(target, UnionType) else (target,)
        for arm in arms:
            inputs.append(((kind, method, arm.__name__), "validation", TypeAdapter(arm)))

    for (method, version), model in methods.CLIENT_REQUESTS.items():
        if version == revision:
            add("request", method, model)
    for (method, version), model in methods.SERVER_RESULTS.items():
        if version == revision:
            add("result", method, model)
    for (method, version), model in methods.CLIENT_NOTIFICATIONS.items():
        if version == revision:
            add("client-notification", method, model)
    for (method, version), model in methods.SERVER_NOTIFICATIONS.items():
        if version == revision:
            add("server-notification", method, model)
    if not inputs:
        raise SchemaSourceError(f"mcp-types knows no methods for revision {revision!r}")

    keymap, combined = TypeAdapter.json_schemas(inputs, ref_template=DEFS_PREFIX + "{model}")
    defs: dict[str, Any] = combined.get("$defs", {})
    applied = errata.apply_errata(defs, errata.MCP_TYPES)

    requests: dict[str, str] = {}
    notifications: dict[str, str] = {}
    client_notifications: list[str] = []
    results: dict[str, dict[str, str]] = {}
    for ((kind, method, _arm), _mode), ref in keymap.items():
        def_name = _ref_name(ref["$ref"])
        if kind == "request":
            requests[method] = def_name
        elif kind == "result":
            by_type = results.setdefault(method, {})
            by_type[INPUT_REQUIRED if _is_input_required_def(defs, def_name) else COMPLETE] = def_name
        else:
            notifications.setdefault(method, def_name)
            if kind == "client-notification" and method not in client_notifications:
                client_notifications.append(method)

    input_requests, input_responses = _mrtr_index(defs, results, requests)
    version_methods = {m for (m, v) in methods.CLIENT_REQUESTS if v == revision}
    try:
        from importlib.metadata import version as _dist_version

        dist = _dist_version("mcp-types")
    except Exception:  # pragma: no cover - metadata missing in odd installs
        dist = "?"
    return SchemaSource(
        name=f"mcp-types {dist}",
        revision=revision,
        defs=defs,
        requests=dict(sorted(requests.items(), key=lambda kv: _method_order(kv[0]))),
        notifications=notifications,
        client_notifications=tuple(client_notifications),
        results=results,
        input_requests=input_requests,
        input_responses=input_responses,
        cacheable_methods=frozenset(methods.CACHEABLE_METHODS) & version_methods,
        input_required_methods=frozenset(methods.INPUT_REQUIRED_METHODS) & version_methods,
        errata_applied=applied,
    )


# -- the entry point -----------------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def _load_cached(path: str | None, revision: str, _stamp: float) -> SchemaSource:
    if path is None:
        return source_from_mcp_types(revision)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise SchemaSourceError(f"cannot read schema file {path}: {exc.strerror or exc}") from None
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise SchemaSourceError(f"schema file {path} is not JSON: {exc}") from None
    return source_from_document(document, name=f"schema.json:{path}")


def load_schema_source(path: str | os.PathLike[str] | None = None, *, revision: str = REVISION) -> SchemaSource:
    """The schema source: `mcp-types` by default, or the official schema.json at `path`.

    Cached per (path, revision, file mtime), so every strategy built on the same source shares
    one compiled-strategy cache. Raises SchemaSourceError with a one-line message.
    """
    if path is None:
        return _load_cached(None, revision, 0.0)
    resolved = os.path.abspath(os.fspath(path))
    try:
        stamp = os.stat(resolved).st_mtime
    except OSError as exc:
        raise SchemaSourceError(f"cannot read schema file {path}: {exc.strerror or exc}") from None
    return _load_cached(resolved, revision, stamp)


def default_source() -> SchemaSource:
    return load_schema_source()


def result_schema(method: str, result_type: str, *, schema_source: SchemaSource | None = None) -> dict[str, Any] | None:
    """Standalone JSON Schema for a `result` of `method` with that `resultType`, or None.

    For the oracle: dispatch on the resultType value first (RT-06); None means the method may
    not answer with that value (MRTR-01 for `input_required`, RT-04 for unknown values).
    """
    source = schema_source if schema_source is not None else default_source()
    return source.result_schema(method, result_type)
