"""Id discipline (DIGEST §1): ids are never cross-wired; null and non-integer ids are refused.

  id-null      a request whose id is null must be refused, not served (RPC-04)
  id-float     a request whose id is a non-integer number must be refused (RPC-03)
  colliding    two or three requests with one id in flight at once (a client bug, RPC-05):
               whatever the server does with them (UNSPEC), an answer must never carry the
               result of a different request (RPC-06). Over HTTP each POST is its own exchange,
               so the answer on a POST must answer *that* request; over stdio the server's
               reaction is not judged beyond the oracle's rules (RPC-05 leaves it UNSPEC).
Each example ends with a sentinel on the same process.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from mcp_tempest.fuzz.oracle.model import Expectation, Violation
from mcp_tempest.fuzz.properties.base import Context, Property
from mcp_tempest.fuzz.properties.case import Case, Step
from mcp_tempest.fuzz.properties.common import Call, CaseBuilder, id_styles
from mcp_tempest.fuzz.properties.executor import Run
from mcp_tempest.targets.transports import transport_named

# What identifies each method's result, so an answer can be told apart from another's.
RESULT_MARK = {
    "server/discover": "supportedVersions",
    "tools/list": "tools",
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
}
FRACTIONS = (1.5, -0.25, 0.001, 2.5e3 + 0.5)


class IdsProperty(Property):
    name = "ids"
    title = "ids are never cross-wired; null and fractional ids are refused"
    fresh_per_example = 0

    def cases(self, ctx: Context) -> st.SearchStrategy[Case]:
        offered = ctx.surface.capabilities or {}
        methods = ["server/discover"] + [m for m, mark in (
            ("tools/list", "tools"), ("prompts/list", "prompts"), ("resources/list", "resources"),
            ("resources/templates/list", "resources")) if mark in offered]
        echo = ctx.surface.tool("echo") is not None
        texts = st.lists(st.text(alphabet="abcdefghij", min_size=1, max_size=6), min_size=2, max_size=3, unique=True)
        if transport_named(ctx.transport).line_framed and echo:
            # On one pipe, two quick requests are often answered one after the other, so the server
            # never sees them in flight together; tool calls are the collision a real client makes.
            colliding = texts.map(lambda ts: ("colliding", [], ts))
        else:
            colliding = st.builds(
                lambda ms, ts: ("colliding", ms, ts),
                st.lists(st.sampled_from(methods), min_size=2, max_size=3, unique=True) if len(methods) >= 2
                else st.just(methods * 2),
                texts.map(lambda ts: ts[:2]) if echo else st.just([]),
            )
        scenario = st.one_of(
            st.tuples(st.just("id-null"), st.sampled_from(methods), st.none()),
            st.tuples(st.just("id-float"), st.sampled_from(methods), st.sampled_from(FRACTIONS)),
            colliding,
        )
        return st.builds(self._build, id_styles(), scenario)

    def _build(self, id_style: str, scenario: tuple[str, Any, Any]) -> Case:
        b = CaseBuilder(self.name, id_style=id_style)
        kind = scenario[0]
        params: dict[str, Any] = {"scenario": kind}
        if kind in ("id-null", "id-float"):
            method = scenario[1]
            frame = Call(method).frame(0)
            frame["id"] = None if kind == "id-null" else scenario[2]
            rule = "RPC-04" if kind == "id-null" else "RPC-03"
            # JSON-RPC 2.0 answers an invalid request with -32600; DIGEST restates the format, not the
            # duty to answer: silence is a SHOULD deviation, serving the frame a MUST (RPC-03/04).
            exp = Expectation("error-or-refusal", rule, strength="SHOULD", served_strength="MUST", mutation=kind)
            b.add(Step(proc=0, frame=frame, wait="none", label=kind, expect=exp, mutation=kind))
        else:
            methods, texts = scenario[1], scenario[2]
            shared = b.rid()
            group: list[int] = []
            for method in methods:
                group.append(b.call(0, Call(method), rid=shared, group=1, label=f"same-id {method}",
                                    mutation="colliding-ids"))
            for text in texts:
                group.append(b.call(0, Call("tools/call", {"name": "echo", "arguments": {"text": text}}),
                                    rid=shared, group=1, label=f"same-id echo {text}", mutation="colliding-ids"))
            params["group"] = group
        b.sentinel(0)
        return b.build(warm=[0], params=params)

    def check(self, run: Run, ctx: Context) -> list[Violation]:
        group = run.case.params.get("group") or []
        if not group or any(k not in run.sends for k in group):
            return []
        if run.transcript.transport.pairs_by_request:
            return self._check_http(run, group)
        return self._check_stdio(run, group)

    def _check_http(self, run: Run, group: list[int]) -> list[Violation]:
        out: list[Violation] = []
        for k in group:
            frame = run.frames.get(k) or {}
            pair = run.pair(k)
            for i, said in (run.exchange.answers(pair) if pair is not None else ()):
                result = said.result
                if isinstance(result, dict):
                    other = _whose(result, run, group)
                    if not _answers(frame, result) and other is not None and other != k:
                        out.append(Violation(
                            "RPC-06", "MUST", f"{frame.get('method')}: the answer carries another request's result",
                            f"two requests with id {frame.get('id')!r} were in flight; the POST of "
                            f"{_label(run, k)} was answered with the result of {_label(run, other)}",
                            frame.get("method"), i))
        return out

    def _check_stdio(self, run: Run, group: list[int]) -> list[Violation]:
        """Over stdio the answers to requests sharing an id cannot be told apart by id, and what
        the server does with the duplicate is UNSPEC (RPC-05): serving one twice, refusing one,
        answering both are all its call. The oracle still judges every answer's shape and id."""
        return []


def _answers(frame: dict[str, Any], result: dict[str, Any]) -> bool:
    method = frame.get("method")
    mark = RESULT_MARK.get(str(method))
    if mark is not None:
        return mark in result
    if method == "tools/call":
        text = ((frame.get("params") or {}).get("arguments") or {}).get("text")
        return any(isinstance(c, dict) and c.get("text") == text for c in result.get("content") or [])
    return True


def _whose(result: dict[str, Any], run: Run, group: list[int]) -> int | None:
    """Which request of the group this result answers, judged by its content."""
    for k in group:
        frame = run.frames.get(k) or {}
        method = frame.get("method")
        if (method in RESULT_MARK or method == "tools/call") and _answers(frame, result):
            return k
    return None


def _label(run: Run, k: int) -> str:
    return run.case.steps[k].label or str(run.case.steps[k].method)


PROPERTY = IdsProperty()
