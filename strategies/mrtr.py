"""Multi Round-Trip Requests: input_required results, and the retries that answer them.

Why a module of its own: a retry is not a fresh request. It repeats the original params, adds
one `inputResponses` entry per `inputRequests` key (MRTR-11) that fits that request (an
elicitation answer must satisfy the form's `requestedSchema`), echoes `requestState` byte for
byte or leaves it out when none was given (MRTR-10), and goes out under a new id (MRTR-09).
Getting any of that wrong by accident would make the harness report server bugs that are
really its own; getting it wrong on purpose is what `strategies/malformed.py` does with
these same building blocks.

Two flavours of everything:
- strategies (`retry_for`, `input_responses_for`, `input_required_result`) for properties;
- plain deterministic functions (`fulfil`, `build_retry`) for load scenarios and replays,
  which must not depend on Hypothesis at run time.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

import orjson
from hypothesis import strategies as st

from mcp_tempest.strategies import formats
from mcp_tempest.strategies import protocol as p
from mcp_tempest.strategies.compiler import JSON_SAFE_INT, CompileError, SchemaCompiler, constant, record

ELICIT = "elicitation/create"
SAMPLING = "sampling/createMessage"
ROOTS = "roots/list"
INPUT_KINDS = (ELICIT, SAMPLING, ROOTS)
RETRY_FIELDS = ("inputResponses", "requestState")

ACCEPT, DECLINE, CANCEL = "accept", "decline", "cancel"


# -- elicitation forms: the PrimitiveSchemaDefinition vocabulary --------------------------------

_label = st.text(alphabet=formats.IDENT_ALPHABET + " ", min_size=1, max_size=12)
_options = st.lists(formats.identifier(1, 6), min_size=1, max_size=4, unique=True)


def _with_optional(required: dict[str, st.SearchStrategy[Any]], **optional: st.SearchStrategy[Any]):
    return record(required, optional)


def string_field() -> st.SearchStrategy[dict[str, Any]]:
    """StringSchema: plain, length-bounded, or with one of the four formats."""
    plain = _with_optional({"type": constant("string")}, title=_label, description=_label)
    bounded = st.tuples(st.integers(0, 3), st.integers(0, 8)).map(
        lambda t: {"type": "string", "minLength": t[0], "maxLength": t[0] + t[1]}
    )
    formatted = st.sampled_from(["email", "uri", "date", "date-time"]).map(
        lambda f: {"type": "string", "format": f}
    )
    return st.one_of(plain, bounded, formatted)


def number_field() -> st.SearchStrategy[dict[str, Any]]:
    """NumberSchema: integer or number, optionally bounded."""

    def build(t: tuple[str, int | None, int | None]) -> dict[str, Any]:
        kind, lo, span = t
        out: dict[str, Any] = {"type": kind}
        if lo is not None:
            out["minimum"] = lo
            if span is not None:
                out["maximum"] = lo + span
        return out

    return st.tuples(
        st.sampled_from(["integer", "number"]),
        st.one_of(st.none(), st.integers(-100, 100)),
        st.one_of(st.none(), st.integers(0, 100)),
    ).map(build)


def boolean_field() -> st.SearchStrategy[dict[str, Any]]:
    return _with_optional({"type": constant("boolean")}, default=st.booleans())


def enum_field() -> st.SearchStrategy[dict[str, Any]]:
    """The five enum shapes: untitled/titled single-select, untitled/titled multi-select, legacy."""
    untitled_single = _options.map(lambda o: {"type": "string", "enum": o})
    titled_single = _options.map(
        lambda o: {"type": "string", "oneOf": [{"const": v, "title": v.upper()} for v in o]}
    )

    def multi(o: list[str], titled: bool, lo: int) -> dict[str, Any]:
        items: dict[str, Any] = (
            {"anyOf": [{"const": v, "title": v.upper()} for v in o]} if titled else {"type": "string", "enum": o}
        )
        out: dict[str, Any] = {"type": "array", "items": items}
        if lo:
            out["minItems"] = min(lo, len(o))
        return out

    multi_select = st.tuples(_options, st.booleans(), st.integers(0, 2)).map(lambda t: multi(*t))
    legacy = _options.map(lambda o: {"type": "string", "enum": o, "enumNames": [v.title() for v in o]})
    return st.one_of(untitled_single, titled_single, multi_select, legacy)


def form_field() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(string_field(), number_field(), boolean_field(), enum_field())


def requested_schema() -> st.SearchStrategy[dict[str, Any]]:
    """A form: `{type: object, properties: {name: PrimitiveSchemaDefinition}, required?}`."""

    def build(t: tuple[dict[str, dict[str, Any]], int]) -> dict[str, Any]:
        props, mask = t
        out: dict[str, Any] = {"type": "object", "properties": props}
        required = [name for i, name in enumerate(props) if mask >> i & 1]
        if required:
            out["required"] = required
        return out

    props = st.dictionaries(formats.identifier(1, 8), form_field(), min_size=1, max_size=3)
    return st.tuples(props, st.integers(0, 7)).map(build)


# -- input requests and input_required results ------------------------------------------------------

_text = st.text(max_size=24)


def elicit_form_request() -> st.SearchStrategy[dict[str, Any]]:
    params = _with_optional(
        {"message": _text, "requestedSchema": requested_schema()}, mode=constant("form")
    )
    return record({"method": constant(ELICIT), "params": params})


def elicit_url_request() -> st.SearchStrategy[dict[str, Any]]:
    params = record({"mode": constant("url"), "message": _text, "url": formats.uri()})
    return record({"method": constant(ELICIT), "params": params})


def sampling_request() -> st.SearchStrategy[dict[str, Any]]:
    message = record(
        {
            "role": st.sampled_from(["user", "assistant"]),
            "content": record({"type": constant("text"), "text": _text}),
        }
    )
    params = _with_optional(
        {"messages": st.lists(message, min_size=1, max_size=2), "maxTokens": st.integers(1, 4096)},
        systemPrompt=_text,
        temperature=st.floats(0, 2),
    )
    return record({"method": constant(SAMPLING), "params": params})


def roots_request() -> st.SearchStrategy[dict[str, Any]]:
    return _with_optional({"method": constant(ROOTS)}, params=st.builds(dict))


def input_request(kinds: tuple[str, ...] = INPUT_KINDS) -> st.SearchStrategy[dict[str, Any]]:
    choices = []
    if ELICIT in kinds:
        choices += [elicit_form_request(), elicit_url_request()]
    if SAMPLING in kinds:
        choices.append(sampling_request())
    if ROOTS in kinds:
        choices.append(roots_request())
    return st.one_of(choices)


def request_state() -> st.SearchStrategy[str]:
    """Opaque state as servers tend to mint it (base64url-ish); shrinks to "a"."""
    alphabet = formats.IDENT_ALPHABET[:-2] + "-_"
    return st.text(alphabet=alphabet, min_size=1, max_size=40)


def input_required_result(
    *,
    kinds: tuple[str, ...] = INPUT_KINDS,
    with_requests: bool | None = None,
    with_state: bool | None = None,
) -> st.SearchStrategy[dict[str, Any]]:
    """A valid InputRequiredResult: at least one of `inputRequests` and `requestState` (MRTR-02).

    with_requests / with_state: force the member present (True) or absent (False); None lets
    the strategy choose (never both absent).
    """
    requests = st.dictionaries(formats.identifier(1, 10), input_request(kinds), min_size=1, max_size=3)

    def build(t: tuple[bool, bool, dict[str, Any], str]) -> dict[str, Any]:
        has_req, has_state, reqs, state = t
        if not has_req and not has_state:
            has_state = True
        out: dict[str, Any] = {"resultType": p.RESULT_INPUT_REQUIRED}
        if has_req:
            out["inputRequests"] = reqs
        if has_state:
            out["requestState"] = state
        return out

    def flag(forced: bool | None) -> st.SearchStrategy[bool]:
        return st.booleans() if forced is None else constant(forced)

    if with_requests is False and with_state is False:
        raise ValueError("an input_required result needs inputRequests or requestState (MRTR-02)")
    return st.tuples(flag(with_requests), flag(with_state), requests, request_state()).map(build)


# -- answering input requests ------------------------------------------------------------------------


def _canonical(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _form_for_generation(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The requested schema with multi-select answers made unique (a form never picks twice)."""
    out = dict(schema)
    props = {}
    for name, field in (schema.get("properties") or {}).items():
        if isinstance(field, dict) and field.get("type") == "array":
            field = {**field, "uniqueItems": True}
        props[name] = field
    out["properties"] = props
    out.pop("$schema", None)
    return out


@functools.lru_cache(maxsize=512)
def _content_strategy(schema_key: bytes) -> st.SearchStrategy[dict[str, Any]] | None:
    schema = _form_for_generation(orjson.loads(schema_key))
    compiler = SchemaCompiler(schema)
    try:
        return compiler.object_strategy(schema, sparse=True)
    except CompileError:
        return None


def form_content(requested: Mapping[str, Any]) -> st.SearchStrategy[dict[str, Any]] | None:
    """Answers that satisfy a form's requestedSchema; None when no answer can (accept impossible)."""
    try:
        key = _canonical(requested)
    except TypeError:
        return None
    return _content_strategy(key)


def elicit_response(params: Mapping[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """accept (with content for a form), decline, or cancel; shrinks to accept."""
    refusals = [constant(None).map(lambda _: {"action": DECLINE}), constant(None).map(lambda _: {"action": CANCEL})]
    if params.get("mode", "form") == "url":
        return st.one_of(constant(None).map(lambda _: {"action": ACCEPT}), *refusals)
    requested = params.get("requestedSchema")
    content = form_content(requested) if isinstance(requested, Mapping) else None
    if content is None:
        return st.one_of(refusals)
    return st.one_of(content.map(lambda c: {"action": ACCEPT, "content": c}), *refusals)


def sampling_response(params: Mapping[str, Any] | None = None) -> st.SearchStrategy[dict[str, Any]]:
    return _with_optional(
        {
            "role": constant("assistant"),
            "content": record({"type": constant("text"), "text": _text}),
            "model": st.sampled_from(["tempest-model", "test-model"]),
        },
        stopReason=st.sampled_from(["endTurn", "maxTokens", "stopSequence"]),
    )


def roots_response(params: Mapping[str, Any] | None = None) -> st.SearchStrategy[dict[str, Any]]:
    path = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=10)
    root = _with_optional({"uri": path.map(lambda s: "file:///tmp/" + s)}, name=_label)
    return record({"roots": st.lists(root, max_size=2)})


def input_response_for(input_req: Mapping[str, Any]) -> st.SearchStrategy[dict[str, Any]] | None:
    """The strategy of answers to one input request; None for a method we cannot answer."""
    method = input_req.get("method")
    params = input_req.get("params")
    params = params if isinstance(params, Mapping) else {}
    if method == ELICIT:
        return elicit_response(params)
    if method == SAMPLING:
        return sampling_response(params)
    if method == ROOTS:
        return roots_response(params)
    return None


def input_responses_for(result: Mapping[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """One answer per `inputRequests` key (MRTR-11); keys we cannot answer are left out."""
    requests = result.get("inputRequests")
    if not isinstance(requests, Mapping):
        return st.builds(dict)
    parts = {}
    for key, req in requests.items():
        strat = input_response_for(req) if isinstance(req, Mapping) else None
        if strat is not None:
            parts[key] = strat
    return record(parts)


def retry_ids(original: Any) -> st.SearchStrategy[int | str]:
    """Request ids different from `original` (MRTR-09)."""
    ints = st.integers(-JSON_SAFE_INT, JSON_SAFE_INT)
    strs = st.text(max_size=16)
    # map, not filter: a filter would reject the simplest draw whenever the original id is 0
    return st.one_of(ints, strs).map(lambda i: next_request_id(i) if _same_id(i, original) else i)


def _same_id(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _retry_params(request: Mapping[str, Any], result: Mapping[str, Any], responses: Any) -> dict[str, Any]:
    params = request.get("params")
    out = {k: v for k, v in (params.items() if isinstance(params, Mapping) else ()) if k not in RETRY_FIELDS}
    if isinstance(result.get("inputRequests"), Mapping):
        out["inputResponses"] = responses
    state = result.get("requestState")
    if isinstance(state, str):
        out["requestState"] = state
    return out


def retry_for(
    request: Mapping[str, Any],
    input_required_result: Mapping[str, Any],
    *,
    request_id: int | str | None = None,
) -> st.SearchStrategy[dict[str, Any]]:
    """The valid retry of `request` after it got `input_required_result`.

    Same method and params (minus any earlier `inputResponses`/`requestState`), an answer for
    every input request (elicitation content satisfying its requestedSchema, or decline /
    cancel; sampling and roots results), `requestState` echoed exactly (MRTR-10), a new id
    (MRTR-09) unless `request_id` pins one.
    """
    original_id = request.get("id")
    ids = constant(request_id) if request_id is not None else retry_ids(original_id)
    responses = input_responses_for(input_required_result)
    method = request.get("method")

    def build(t: tuple[Any, dict[str, Any]]) -> dict[str, Any]:
        new_id, answers = t
        return {
            "jsonrpc": p.JSONRPC,
            "id": new_id,
            "method": method,
            "params": _retry_params(request, input_required_result, answers),
        }

    return st.tuples(ids, responses).map(build)


# -- deterministic answers (no Hypothesis at run time: load users, replays) --------------------------

_FORMAT_EXAMPLES = {
    "email": "tempest@example.com",
    "uri": "https://example.com/tempest",
    "date": "2026-07-28",
    "date-time": "2026-07-28T00:00:00Z",
}


def minimal_field_value(field: Mapping[str, Any]) -> Any:
    """The simplest value a form field accepts (its default when that is valid)."""
    kind = field.get("type")
    if kind == "boolean":
        return field.get("default", False) if isinstance(field.get("default"), bool) else False
    if kind in ("integer", "number"):
        lo, hi = field.get("minimum"), field.get("maximum")
        if kind == "integer":
            lo = None if lo is None else math.ceil(lo)
            hi = None if hi is None else math.floor(hi)
        value: float = 0
        if lo is not None and value < lo:
            value = lo
        if hi is not None and value > hi:
            value = hi
        return int(value) if kind == "integer" else value
    if kind == "array":
        items = field.get("items") or {}
        options = list(items.get("enum") or [c.get("const") for c in items.get("anyOf", []) if "const" in c])
        return options[: max(0, int(field.get("minItems", 0)))]
    # strings and enums
    if "enum" in field and field["enum"]:
        return field["enum"][0]
    if "oneOf" in field and field["oneOf"]:
        return field["oneOf"][0].get("const", "")
    fmt = field.get("format")
    if fmt in _FORMAT_EXAMPLES:
        return _FORMAT_EXAMPLES[fmt]
    length = max(int(field.get("minLength", 0)), 1)
    if field.get("maxLength") is not None:
        length = min(length, int(field["maxLength"]))
    return "a" * length


def fulfil(input_req: Mapping[str, Any], *, action: str = ACCEPT) -> dict[str, Any] | None:
    """A deterministic valid answer to one input request (accept with the minimal form content)."""
    method = input_req.get("method")
    params = input_req.get("params") if isinstance(input_req.get("params"), Mapping) else {}
    if method == ELICIT:
        if action != ACCEPT or params.get("mode", "form") == "url":
            return {"action": action}
        schema = params.get("requestedSchema") or {}
        props = schema.get("properties") or {}
        content = {name: minimal_field_value(props[name]) for name in schema.get("required", []) if name in props}
        return {"action": ACCEPT, "content": content}
    if method == SAMPLING:
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "ok"},
            "model": "tempest-model",
            "stopReason": "endTurn",
        }
    if method == ROOTS:
        return {"roots": [{"uri": "file:///tmp/tempest", "name": "tempest"}]}
    return None


def fulfil_all(input_required_result: Mapping[str, Any]) -> dict[str, Any]:
    requests = input_required_result.get("inputRequests")
    out: dict[str, Any] = {}
    if isinstance(requests, Mapping):
        for key, req in requests.items():
            answer = fulfil(req) if isinstance(req, Mapping) else None
            if answer is not None:
                out[key] = answer
    return out


def next_request_id(original: Any) -> int | str:
    """A deterministic id different from `original` (MRTR-09)."""
    if isinstance(original, int) and not isinstance(original, bool):
        return original + 1 if original < JSON_SAFE_INT else original - 1
    return f"{original}-retry" if isinstance(original, str) else 1


def build_retry(
    request: Mapping[str, Any],
    input_required_result: Mapping[str, Any],
    *,
    responses: Mapping[str, Any] | None = None,
    request_id: int | str | None = None,
) -> dict[str, Any]:
    """The deterministic retry frame: `fulfil_all` answers unless `responses` is given."""
    answers = dict(responses) if responses is not None else fulfil_all(input_required_result)
    return {
        "jsonrpc": p.JSONRPC,
        "id": request_id if request_id is not None else next_request_id(request.get("id")),
        "method": request.get("method"),
        "params": _retry_params(request, input_required_result, answers),
    }
