"""What a load user does: discovery, the weighted mix, and interleaved MRTR operations.

An MRTR operation is a unit of work that spans several requests: the call, an `input_required`
result, answers to its `inputRequests`, the retry under a new id carrying `inputResponses` and
the echoed `requestState` (MRTR-09, MRTR-10), possibly several rounds, until a complete result.
A user keeps several such operations open and sends other requests between their legs, so the
server sees many operations in flight at once, and with several instances behind round-robin
endpoints the legs of one operation land on different processes (MRTR-18, SL-3).

Names under which samples are reported (CLI.md): a plain request by its method (and tool or
prompt name), a leg as `<method> <tool> #<round>`, a whole operation as `MRTR <tool>`. The whole
operation is timed from its first leg to its complete result, including the other requests sent
in between, because that is what a client interleaving its work experiences.

Nothing here knows Locust: the session is handed a `send` function (one POST, returning a
`Reply`) and a `fire` callback for Locust's request event, so the logic runs the same under a
Locust user or a plain test.
"""

from __future__ import annotations

import itertools
import random
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcp_tempest.load.arguments import Arguments
from mcp_tempest.load.recorder import OPERATION, REFUSED_HANDLE, REQUEST, SETUP, Recorder, setup_name
from mcp_tempest.load.schema_values import is_handle_name, object_for
from mcp_tempest.targets import wire
from mcp_tempest.targets.list_reader import MIB, ListBudget, Page, Spend, read_list

if TYPE_CHECKING:  # importing mcp_client pulls in gevent, which the runner must not
    from mcp_tempest.load.mcp_client import Reply
    from mcp_tempest.strategies.value_sources import ValueSources

# The client capabilities every load request declares: elicitation (form), so MRTR can happen
# (MRTR-05 forbids an elicitation input request to a client that did not declare it).
CAPABILITIES: dict[str, Any] = {"elicitation": {"form": {}}}

# Every modern method a load mix can weigh (the method list is wire.MODERN_METHODS; completion and
# the listen stream are not request/response load), plus whole MRTR operations.
MIX_KINDS = (*(m for m in wire.MODERN_METHODS if m not in ("completion/complete", "subscriptions/listen")), "mrtr")
DEFAULT_MIX = "tools/list=2,tools/call=3,resources/read=2,prompts/get=1,mrtr=4"

MAX_LIST_PAGES = 10
# What one user's discovery may hold of list pages: every user of a run discovers (closed model),
# so this is per user; the tools a mix needs fit many times over.
LIST_BUDGET = ListBudget(pages=MAX_LIST_PAGES, bytes=4 * MIB, seconds=30.0, options=False)

_ids = itertools.count(1)
_TEMPLATE_VAR = re.compile(r"\{([A-Za-z0-9_]+)\}")


def next_id() -> int:
    """Request ids unique within the process (greenlets share the counter; no yield in next())."""
    return next(_ids)


class MixError(ValueError):
    pass


def parse_mix(text: str) -> list[tuple[str, float]]:
    """`NAME=W,...` -> [(name, weight)], refusing unknown names and non-positive totals."""
    out: list[tuple[str, float]] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, weight_text = part.partition("=")
        name = name.strip()
        if name not in MIX_KINDS:
            raise MixError(f"unknown mix entry {name!r} (known: {', '.join(MIX_KINDS)})")
        try:
            weight = float(weight_text) if sep else 1.0
        except ValueError:
            raise MixError(f"mix weight for {name!r} is not a number: {weight_text!r}") from None
        if weight < 0:
            raise MixError(f"mix weight for {name!r} is negative")
        if weight > 0:
            out.append((name, weight))
    if not out:
        raise MixError(f"mix {text!r} has no positive weight")
    return out


# --- MRTR: answering input requests ---


def answer_input_request(request: Any, rng: random.Random) -> dict[str, Any] | None:
    """The InputResponse a cooperative user gives: a form filled to the requested schema."""
    if not isinstance(request, dict):
        return None
    method = request.get("method")
    params = request.get("params") if isinstance(request.get("params"), dict) else {}
    if method == "elicitation/create":
        if params.get("mode", "form") != "form":
            return {"action": "decline"}  # URL mode was not declared (MRTR-06)
        schema = params.get("requestedSchema")
        return {"action": "accept", "content": object_for(schema, rng) if isinstance(schema, dict) else {}}
    if method == "sampling/createMessage":
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "ok"},
            "model": "mcp-tempest-load",
            "stopReason": "endTurn",
        }
    if method == "roots/list":
        return {"roots": []}
    return None


def answer_input_requests(requests: Any, rng: random.Random) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(requests, dict):
        for key, request in requests.items():
            answer = answer_input_request(request, rng)
            if answer is not None:
                out[key] = answer
    return out


def result_type(reply: Reply) -> str | None:
    result = reply.result
    value = result.get("resultType") if result is not None else None
    return value if isinstance(value, str) else None


# --- the catalog a user discovers ---


@dataclass(slots=True)
class Catalog:
    capabilities: dict[str, Any] = field(default_factory=dict)
    tools: list[dict[str, Any]] = field(default_factory=list)
    resources: list[dict[str, Any]] = field(default_factory=list)
    templates: list[dict[str, Any]] = field(default_factory=list)
    prompts: list[dict[str, Any]] = field(default_factory=list)
    mrtr_tools: list[dict[str, Any]] = field(default_factory=list)
    excluded: dict[str, str] = field(default_factory=dict)  # tool -> why it is left out of the mix
    cuts: dict[str, str] = field(default_factory=dict)  # list -> how its read was cut short (or failed)

    def tool(self, name: str) -> dict[str, Any] | None:
        return next((t for t in self.tools if t.get("name") == name), None)


@dataclass(slots=True)
class Operation:
    method: str
    label: str
    base_params: dict[str, Any]
    input_schema: Any
    started_ns: int
    rounds: int = 1
    next_params: dict[str, Any] = field(default_factory=dict)
    ready_at: int = 0
    last_endpoint: str = ""
    tool: str | None = None  # the tool called (None for a prompt or a resource)

    @property
    def name(self) -> str:
        return f"MRTR {self.label}"

    def leg_name(self, round_no: int) -> str:
        return leg_name(self.method, self.label, round_no)


def leg_name(method: str, label: str, round_no: int) -> str:
    """The name of an MRTR leg (CLI.md: `<method> <tool> #<round>`)."""
    return f"{method} {label} #{round_no}"


class LoadFailure(Exception):
    """What Locust's error report shows for a failed sample: the kind, then a short detail."""


SendFn = Callable[..., "Reply"]
FireFn = Callable[[str, str, float, int, Exception | None], None]


@dataclass(slots=True)
class Options:
    mix: list[tuple[str, float]]
    max_in_flight: int = 4
    gap: int = 1
    max_rounds: int = 8
    mrtr_tools: tuple[str, ...] = ()
    log_level: str | None = None
    tools: tuple[str, ...] = ()  # when set, the only tools a user calls


def warmup_exchanges() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """One plausible (request, response) per result type a load user meets, to warm the oracle."""
    cache = {"ttlMs": 0, "cacheScope": "public"}
    text = [{"type": "text", "text": "ok"}]
    results: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
        ("server/discover", {}, {"supportedVersions": [wire.MODERN_VERSION], "capabilities": {}, **cache}),
        ("tools/list", {}, {"tools": [], **cache}),
        ("resources/list", {}, {"resources": [], **cache}),
        ("resources/templates/list", {}, {"resourceTemplates": [], **cache}),
        ("prompts/list", {}, {"prompts": [], **cache}),
        ("tools/call", {"name": "t", "arguments": {}}, {"content": text}),
        ("resources/read", {"uri": "x://y"}, {"contents": [{"uri": "x://y", "text": "ok"}], **cache}),
        ("prompts/get", {"name": "p"}, {"messages": [{"role": "user", "content": text[0]}]}),
    ]
    out = []
    for i, (method, params, result) in enumerate(results):
        request = wire.build_request(i, method, params, capabilities=CAPABILITIES)
        out.append((request, wire.build_result(i, {"resultType": "complete", **result})))
        if method in wire.INPUT_REQUIRED_METHODS:
            asked = {"resultType": "input_required", "requestState": "s", "inputRequests": {"q": {
                "method": "elicitation/create",
                "params": {"mode": "form", "message": "?", "requestedSchema": {
                    "type": "object", "properties": {"a": {"type": "string"}}}},
            }}}
            out.append((request, wire.build_result(i, asked)))
    return out


class Checker:
    """Judges every k-th response with the fuzz oracle's pure rules (shared per process)."""

    def __init__(self, every: int, judge: Callable[..., list[Any]] | None) -> None:
        self.every = every
        self.judge = judge
        self._seen = 0

    def due(self) -> bool:
        if self.every <= 0 or self.judge is None:
            return False
        self._seen += 1
        return self._seen % self.every == 0

    def violations(self, reply: Reply) -> list[tuple[str, str]]:
        """(rule id, short text) for each violation the oracle finds in this exchange."""
        assert self.judge is not None
        try:
            found = self.judge(reply.request, reply.response, http_status=reply.status, headers=reply.headers,
                               request_headers=reply.request_headers)
        except Exception as exc:  # noqa: BLE001 - an oracle bug must not kill a load user
            return [("ORACLE-ERROR", f"{type(exc).__name__}: {exc}"[:200])]
        out = []
        for v in found or ():
            rule = getattr(v, "rule", None) or (v.get("rule") if isinstance(v, dict) else None) or "?"
            text = getattr(v, "title", None) or getattr(v, "message", None)
            if text is None and isinstance(v, dict):
                text = v.get("title") or v.get("message")
            out.append((str(rule), str(text or rule)[:200]))
        return out


class Session:
    """One load user's protocol logic over a `send` function."""

    def __init__(
        self,
        send: SendFn,
        recorder: Recorder,
        options: Options,
        *,
        rng: random.Random,
        fire: FireFn | None = None,
        checker: Checker | None = None,
        values: ValueSources | None = None,
    ) -> None:
        self.send = send
        self.recorder = recorder
        self.options = options
        self.rng = rng
        self.fire = fire
        self.checker = checker
        self.catalog = Catalog()
        # `values`: the run's command line and --tool-args; what this user's results return is
        # added to its own copy (a calendarId minted for it feeds its later calls, TOOL-14)
        self.args = Arguments.for_user(values)
        self._callable_cache: dict[int, tuple[int, list[dict[str, Any]]]] = {}
        self.last_is_error = False  # whether the last recorded answer was an isError result
        self.pending: deque[Operation] = deque()
        self.sent = 0
        self._kinds: list[str] = []
        self._weights: list[float] = []
        # Open model: the intended start (perf_counter_ns) of the unit being run. The first sample
        # of the unit is timed from it, not from when it was sent, so time spent waiting for a
        # free slot behind a stalled server shows in the latency (no coordinated omission).
        self._origin_ns: int | None = None
        self._setup = False  # True while discovery and the tool probe run: their samples are setup
        self._list_spend: Spend | None = None  # one discovery's lists share one budget

    # --- plumbing ---

    def _post(self, method: str, params: dict[str, Any], schema: Any = None, avoid: str | None = None, *,
              name: str | None = None) -> Reply:
        """One request; `name` is the one it is recorded under (default: the method). The recorder
        knows it is waiting until it comes back, so one the stop catches is still counted."""
        msg = wire.build_request(next_id(), method, params, capabilities=CAPABILITIES,
                                 log_level=self.options.log_level)
        named = name or method
        token = self.recorder.sent(setup_name(named) if self._setup else named, SETUP if self._setup else REQUEST,
                                   self._origin_ns if self._origin_ns is not None else time.perf_counter_ns())
        try:
            reply = self.send(msg, input_schema=schema, avoid=avoid) if avoid else self.send(msg, input_schema=schema)
        except Exception:
            self.recorder.forget(token)  # a harness error (Locust reports it), not the server's silence
            raise
        self.recorder.ended(token, reply.failure)  # not reached when Locust stops this user meanwhile
        self.sent += 1
        self.recorder.count("sse_responses" if reply.is_sse else "json_responses")
        return reply

    def _record(self, name: str, reply: Reply, *, rpc_error_expected: bool = False, tool: str | None = None) -> str | None:
        """Record one request sample; returns its failure kind (None when it succeeded).

        `rpc_error_expected`: a JSON-RPC error is an answer here, not a failure (the probe).
        An isError result is an answer too (the tool ran and said it could not): counted apart
        with its text, never a failure. `tool`: the tool called, whose successful result feeds
        this user's later arguments."""
        failure = reply.failure
        detail = reply.detail
        origin, self._origin_ns = self._origin_ns, None
        elapsed_us = reply.elapsed_us if origin is None else (reply.started_ns + reply.elapsed_ns - origin + 500) // 1000
        if rpc_error_expected and failure is not None and failure.startswith("rpc "):
            failure, detail = None, ""
        result = reply.result
        is_error = None
        if failure is None and result is not None:
            if result.get("isError") is True:
                is_error = _first_text(result)
                self._note_refused_handles(reply)
            elif tool is not None and result.get("resultType") != "input_required":
                self.args.harvest(tool, result)
        self.last_is_error = is_error is not None
        if self._setup:
            name = setup_name(name)
        if self.checker is not None and reply.response is not None and self.checker.due():
            self.recorder.count("checked")
            for rule, text in self.checker.violations(reply):
                self.recorder.violation(rule, f"{name}: {text}")
                if failure is None:
                    failure, detail = f"violation {rule}", text
        self.recorder.record(name, elapsed_us, kind=SETUP if self._setup else REQUEST, failure=failure,
                             first_event_us=reply.first_event_us, raw_ns=reply.elapsed_ns, is_error=is_error)
        if self.fire is not None:
            exc = LoadFailure(f"{failure}: {detail}" if detail else failure) if failure else None
            self.fire("POST", name, elapsed_us / 1000.0, reply.length, exc)
        return failure

    def _note_refused_handles(self, reply: Reply) -> None:
        """An isError answer to a call whose handle the server itself returned to this user: no
        failure (a correct server may have deleted it), but with several instances the classic
        sign that they do not share state (SL-5), so it is counted by argument and shown."""
        params = reply.request.get("params") if isinstance(reply.request, dict) else None
        args = params.get("arguments") if isinstance(params, dict) else None
        if not isinstance(args, dict):
            return
        returned = self.args.values.returned
        for key, value in args.items():
            if is_handle_name(key) and value in returned.get(key, ()):
                self.recorder.count(REFUSED_HANDLE + key)

    def _record_operation(self, op: Operation, failure: str | None, *, counted: bool,
                          is_error: str | None = None) -> None:
        elapsed_us = (time.perf_counter_ns() - op.started_ns + 500) // 1000
        self.recorder.record(op.name, elapsed_us, kind=OPERATION, failure=failure, count_failure=counted,
                             is_error=is_error)
        self.recorder.count("mrtr_failed" if failure else "mrtr_completed")
        self.recorder.operation_closed()
        if self.fire is not None:
            exc = LoadFailure(failure) if failure else None
            self.fire("MRTR", op.name, elapsed_us / 1000.0, 0, exc)

    # --- discovery ---

    def discover(self) -> bool:
        """server/discover, then the lists the server advertises; False when the target is unusable.

        Recorded as setup (`setup server/discover`, `setup tools/list`, ...), never as workload."""
        self._setup = True
        try:
            return self._discover()
        finally:
            self._setup = False

    def _discover(self) -> bool:
        self._list_spend = LIST_BUDGET.spend()
        self.catalog.cuts.clear()
        reply = self._post("server/discover", {})
        self._record("server/discover", reply)
        result = reply.result
        if reply.failure is not None or result is None:
            return False
        caps = result.get("capabilities")
        self.catalog.capabilities = caps if isinstance(caps, dict) else {}
        if "tools" in self.catalog.capabilities:
            self.catalog.tools = [
                t for t in self._list("tools/list", "tools")
                if isinstance(t.get("name"), str) and (not self.options.tools or t["name"] in self.options.tools)
            ]
        if "resources" in self.catalog.capabilities:
            self.catalog.resources = [
                r for r in self._list("resources/list", "resources") if isinstance(r.get("uri"), str)
            ]
            # optional for a server with resources: an error here only means "no templates"
            self.catalog.templates = [
                t for t in self._list("resources/templates/list", "resourceTemplates", optional=True)
                if isinstance(t.get("uriTemplate"), str)
            ]
        if "prompts" in self.catalog.capabilities:
            self.catalog.prompts = [p for p in self._list("prompts/list", "prompts") if isinstance(p.get("name"), str)]
        return True

    def _list(self, method: str, key: str, *, optional: bool = False) -> list[dict[str, Any]]:
        """One list, bounded like every list read (targets/list_reader.py); a read cut short or
        failed is kept in `catalog.cuts` (the summary says so), the items read are used."""
        spend = self._list_spend if self._list_spend is not None else LIST_BUDGET.spend()

        def fetch(cursor: str | None, seconds_left: float, bytes_left: int) -> Page:
            reply = self._post(method, {"cursor": cursor} if cursor is not None else {})
            self._record(method, reply, rpc_error_expected=optional)
            if reply.failure is not None or reply.result is None:
                return Page(None, failure=f"{reply.failure or 'no result'}: {reply.detail}"[:200])
            if reply.length > bytes_left:  # held already (the client's own cap bounds it): not kept
                return Page(None, failure=f"{reply.length} bytes", over_cap=max(bytes_left, 0))
            return Page(reply.result, reply.length)

        read = read_list(fetch, key, method, key, LIST_BUDGET, spend)
        if read.cut or (read.failed and not optional):
            self.catalog.cuts[key] = read.describe()
        return [x for x in read.items if isinstance(x, dict)]

    def probe_tools(self) -> tuple[list[dict[str, Any]], dict[str, str]]:
        """Call each tool once with only its required arguments: which ask for input, which fail.

        A tool answering `input_required` becomes an MRTR tool (that operation is then abandoned,
        which a server must tolerate, MRTR-17). A tool answering a JSON-RPC error (say -32021:
        it needs a capability a load user does not declare) is left out of the mix, and the
        summary says why. A tool that needs a server-minted handle nobody has yet is not probed
        (the catalog's order usually lets the tool that mints it go first, and its result feeds
        the next). Recorded as setup, like discovery.
        """
        self._setup = True
        try:
            return self._probe_tools()
        finally:
            self._setup = False

    def _probe_tools(self) -> tuple[list[dict[str, Any]], dict[str, str]]:
        pinned = set(self.options.mrtr_tools)
        mrtr: list[dict[str, Any]] = []
        excluded: dict[str, str] = {}
        for tool in self.catalog.tools:
            schema = tool.get("inputSchema")
            if self.args.missing(tool["name"], schema):
                continue
            args = self.args.arguments(tool["name"], schema, self.rng, optional=False)
            probe = f"probe tools/call {tool['name']}"
            reply = self._post("tools/call", {"name": tool["name"], "arguments": args}, schema, name=probe)
            self._record(probe, reply, rpc_error_expected=True, tool=tool["name"])
            if reply.failure is not None:
                if reply.failure.startswith("rpc "):
                    excluded[tool["name"]] = f"{reply.failure} on a first call: {reply.detail}"[:200]
                continue
            if result_type(reply) == "input_required" and (not pinned or tool["name"] in pinned):
                mrtr.append(tool)
        if pinned:
            known = {t["name"] for t in mrtr}
            mrtr.extend(t for t in self.catalog.tools if t["name"] in pinned and t["name"] not in known)
        return mrtr, excluded

    def _callable(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The tools that can be called now: not excluded, and no required handle missing (cached
        until this user's pools change: this runs on every tools/call)."""
        hit = self._callable_cache.get(id(tools))
        if hit is not None and hit[0] == self.args.version:
            return hit[1]
        found = [
            t for t in tools
            if t["name"] not in self.catalog.excluded and not self.args.missing(t["name"], t.get("inputSchema"))
        ]
        self._callable_cache[id(tools)] = (self.args.version, found)
        return found

    def _readable(self) -> list[str]:
        """Resource URIs: the listed ones, plus templates whose variables all have known values."""
        uris = [r["uri"] for r in self.catalog.resources]
        for template in self.catalog.templates:
            names = _TEMPLATE_VAR.findall(template["uriTemplate"])
            if names and all(self.args.by_name(n) for n in names):
                uris.append(_TEMPLATE_VAR.sub(lambda m: str(self.rng.choice(self.args.by_name(m.group(1)))),
                                              template["uriTemplate"]))
        return uris

    def set_mix(self) -> None:
        """Keep the mix entries this target can serve; an empty remainder falls back to tools/list."""
        usable = []
        for kind, weight in self.options.mix:
            if kind == "tools/call" and not [t for t in self.catalog.tools if t["name"] not in self.catalog.excluded]:
                continue
            if kind == "resources/read" and not (self.catalog.resources or self.catalog.templates):
                continue
            if kind == "prompts/get" and not self.catalog.prompts:
                continue
            if kind == "mrtr" and not self.catalog.mrtr_tools:
                continue
            usable.append((kind, weight))
        if not usable:
            usable = [("tools/list" if self.catalog.tools else "server/discover", 1.0)]
        self._kinds = [k for k, _ in usable]
        self._weights = [w for _, w in usable]

    # --- the mix ---

    def step(self) -> None:
        """One unit of the user's loop: advance a ready MRTR operation, or run one mix entry."""
        if self.pending and (
            len(self.pending) >= self.options.max_in_flight or self.sent >= self.pending[0].ready_at
        ):
            self._advance(self.pending.popleft())
            return
        if not self._kinds:
            self.set_mix()
        kind = self.rng.choices(self._kinds, self._weights)[0]
        self.run_kind(kind)

    def run_unit(self, intended_ns: int) -> None:
        """Open model: one arrival, intended to start at `intended_ns` (perf_counter_ns).

        One mix entry run to its end: an MRTR operation is one arrival, its legs sent back to back
        (other arrivals interleave with them at the server). The first request, and the whole
        operation, are timed from the intended start; a later leg from when it was sent.
        """
        if not self._kinds:
            self.set_mix()
        self._origin_ns = intended_ns
        self.run_kind(self.rng.choices(self._kinds, self._weights)[0])
        self._origin_ns = None
        while self.pending:
            self._advance(self.pending.popleft())

    def run_kind(self, kind: str) -> None:
        rng = self.rng
        if kind in ("tools/call", "mrtr"):
            mrtr = kind == "mrtr"
            tools = self._callable(self.catalog.mrtr_tools if mrtr else self.catalog.tools)
            if not tools:  # every tool waits for a handle nobody has handed out yet
                kind = "tools/list"
            else:
                tool = rng.choice(tools)
                schema = tool.get("inputSchema")
                args = self.args.arguments(tool["name"], schema, rng, optional=not mrtr)
                self._call("tools/call", tool["name"], {"name": tool["name"], "arguments": args}, schema,
                           intend_mrtr=mrtr, tool=tool["name"])
                return
        if kind == "resources/read":
            uris = self._readable()
            if uris:
                uri = rng.choice(uris)
                self._call("resources/read", uri, {"uri": uri}, None, intend_mrtr=False, plain="resources/read")
                return
            kind = "resources/list"
        if kind == "prompts/get":
            prompt = rng.choice(self.catalog.prompts)
            args = {
                a["name"]: f"load {a['name']} {rng.randrange(1000)}"
                for a in prompt.get("arguments") or []
                if isinstance(a, dict) and isinstance(a.get("name"), str)
            }
            params: dict[str, Any] = {"name": prompt["name"]}
            if args:
                params["arguments"] = args
            self._call("prompts/get", prompt["name"], params, None, intend_mrtr=False)
            return
        self._record(kind, self._post(kind, {}))

    def _call(
        self,
        method: str,
        label: str,
        params: dict[str, Any],
        schema: Any,
        *,
        intend_mrtr: bool,
        plain: str | None = None,
        tool: str | None = None,
    ) -> None:
        started = self._origin_ns if self._origin_ns is not None else time.perf_counter_ns()
        name = leg_name(method, label, 1) if intend_mrtr else plain or f"{method} {label}"
        reply = self._post(method, params, schema, name=name)
        needs_input = reply.failure is None and result_type(reply) == "input_required"
        if not (intend_mrtr or needs_input):
            self._record(plain or f"{method} {label}", reply, tool=tool)
            return
        op = Operation(method, label, params, schema, started, last_endpoint=reply.endpoint, tool=tool)
        self.recorder.count("mrtr_started")
        self.recorder.count("mrtr_legs")
        self.recorder.operation_opened()
        failure = self._record(op.leg_name(1), reply, tool=tool)
        self._after_leg(op, reply, failure)

    def _advance(self, op: Operation) -> None:
        op.rounds += 1
        reply = self._post(op.method, op.next_params, op.input_schema, avoid=op.last_endpoint,
                           name=op.leg_name(op.rounds))
        self.recorder.count("mrtr_legs")
        if reply.endpoint != op.last_endpoint:
            self.recorder.count("mrtr_cross_instance_legs")  # the retry went to another process
        op.last_endpoint = reply.endpoint
        failure = self._record(op.leg_name(op.rounds), reply, tool=op.tool)
        self._after_leg(op, reply, failure)

    def _after_leg(self, op: Operation, reply: Reply, failure: str | None) -> None:
        if failure is not None:
            self._record_operation(op, f"leg {failure}", counted=False)
            return
        if result_type(reply) != "input_required":
            # complete: an isError final result completes the operation too (it is an answer)
            text = _first_text(reply.result or {}) if self.last_is_error else None
            self._record_operation(op, None, counted=True, is_error=text)
            return
        if op.rounds >= self.options.max_rounds:
            self._record_operation(op, f"mrtr over {self.options.max_rounds} rounds", counted=True)
            return
        result = reply.result or {}
        requests = result.get("inputRequests")
        state = result.get("requestState")
        if not requests and state is None:
            self._record_operation(op, "mrtr input_required without inputRequests or requestState",
                                   counted=True)
            return
        params = dict(op.base_params)
        if requests:
            params["inputResponses"] = answer_input_requests(requests, self.rng)
        if state is not None:
            params["requestState"] = state  # echoed exactly, never inspected (MRTR-10)
        op.next_params = params
        op.ready_at = self.sent + self.options.gap
        self.pending.append(op)

    def abandon(self) -> None:
        """The user stops: its open operations are left unfinished, as a client may do (MRTR-17)."""
        while self.pending:
            self.pending.popleft()
            self.recorder.count("mrtr_abandoned")
            self.recorder.operation_closed()


def _first_text(result: dict[str, Any]) -> str:
    content = result.get("content")
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                return block["text"][:200]
    return "isError: true"
