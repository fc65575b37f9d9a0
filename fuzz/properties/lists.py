"""List results do not depend on history or on the process (DIGEST §15.7, TOOL-02, RES-01, PR-01).

A generated history (tool calls above all, since "a tool appears after a call" is the classic
leak) runs on the warm process; then the same list request goes to a fresh process, to the warm
one, and to the fresh one again, and the items must be equal. When the first page has a
`nextCursor`, the second page is fetched with the fresh process's cursor from both processes:
a cursor is an opaque value the client may hand to any process (SL-3).
"""

from __future__ import annotations

from hypothesis import strategies as st

from mcp_tempest.fuzz.oracle.model import Violation
from mcp_tempest.fuzz.properties.base import Context, Probe, Property
from mcp_tempest.fuzz.properties.case import Binding, Case
from mcp_tempest.fuzz.properties.common import Call, CaseBuilder, id_styles, surface_calls
from mcp_tempest.fuzz.properties.compare import Listed, list_diff, list_items, same_items_in_any_split
from mcp_tempest.fuzz.properties.executor import Run

LISTS: dict[str, tuple[str, str, str]] = {
    # method: (result key, server capability, rule)
    "tools/list": ("tools", "tools", "TOOL-02"),
    "prompts/list": ("prompts", "prompts", "PR-01"),
    "resources/list": ("resources", "resources", "RES-01"),
    "resources/templates/list": ("resourceTemplates", "resources", "RES-01"),
}


class ListsProperty(Property):
    name = "lists"
    title = "list results are the same on every process, whatever it served before"
    fresh_per_example = 1
    # A list that changes only after some history (a tool call, a subscription) needs more examples
    # than one share of the default 200 to be reached (bench_mutant_sweep: list-changes-after-call).
    weight = 1.5

    def cases(self, ctx: Context) -> st.SearchStrategy[Case]:
        offered = ctx.surface.capabilities or {}
        methods = [m for m, (_, cap, _) in LISTS.items() if cap in offered] or ["tools/list"]
        return st.builds(
            self._build, id_styles(), st.lists(surface_calls(ctx.surface), min_size=1, max_size=5),
            st.sampled_from(methods), st.booleans(),
        )

    def coverage(self, ctx: Context) -> list[Probe]:
        """Each offered list once after a plain tool call on the warm process: "a tool appears
        after a call" is the classic leak, too important to leave to the draw of a history; the
        second page too, where a list that grew shows first."""
        from mcp_tempest.fuzz.properties.valid import probe_call  # the notification probes' plain call

        offered = ctx.surface.capabilities or {}
        call = probe_call(ctx.surface)
        return [Probe(f"list-after-call-{key}", rule,
                      self._build("int", [call], method, True) if cap in offered else None,
                      "" if cap in offered else f"the target offers no {cap} capability")
                for method, (key, cap, rule) in LISTS.items() if method != "resources/templates/list"]

    def _build(self, id_style: str, history: list[Call], method: str, second_page: bool) -> Case:
        b = CaseBuilder(self.name, id_style=id_style)
        for call in history:
            b.call(0, call, label="history")
        first = [b.call(proc, Call(method), label=label)
                 for proc, label in ((1, "list-fresh"), (0, "list-warm"), (1, "list-fresh-again"))]
        second: list[int] = []
        if second_page:
            cursor = Binding(("params", "cursor"), first[0], ("result", "nextCursor"))
            second = [b.call(proc, Call(method, {"cursor": ""}), label=label, bind=[cursor])
                      for proc, label in ((1, "page2-fresh"), (0, "page2-warm"))]
        return b.build(warm=[0], params={"method": method, "first": first, "second": second})

    def check(self, run: Run, ctx: Context) -> list[Violation]:
        method = run.case.params.get("method", "tools/list")
        key, _, rule = LISTS.get(method, ("tools", "tools", "TOOL-02"))
        first = run.case.params.get("first") or []
        out: list[Violation] = []
        if len(first) == 3 and not any(i in run.skipped for i in first):
            fresh, warm, again = (list_items(run.response(i), key) for i in first)
            if fresh is not None and fresh == again and warm is not None and warm != fresh:
                at = run.response_events.get(first[1], run.sends.get(first[1]))
                out.append(Violation(
                    rule, "MUST", f"{method} differs on a process that served other requests",
                    f"{list_diff(fresh, warm, key)} (compared with a fresh process)", method, at))
        second = run.case.params.get("second") or []
        if len(second) == 2 and not any(i in run.skipped for i in second):
            fresh_page, warm_page = (run.response(i) for i in second)
            fresh_items, warm_items = list_items(fresh_page, key), list_items(warm_page, key)
            at = run.response_events.get(second[1], run.sends.get(second[1]))
            if fresh_items is not None and warm_items is None and isinstance(warm_page, dict) and "error" in warm_page:
                out.append(Violation(
                    "SL-3", "SHOULD", f"{method}: a cursor minted by one process is refused by another",
                    f"error {warm_page['error'].get('code')} for the fresh process's nextCursor", method, at))
            elif fresh_items is not None and warm_items is not None and fresh_items != warm_items \
                    and not _same_across_pages(run, first, key, fresh_items, warm_items):
                out.append(Violation(
                    rule, "MUST", f"{method} page 2 differs on a process that served other requests",
                    list_diff(fresh_items, warm_items, key), method, at))
        return out


def _same_across_pages(run: Run, first: list[int], key: str, fresh2: Listed, warm2: Listed) -> bool:
    """Whether both processes listed the same items over the two pages, only split or ordered
    differently: the set did not change (TOOL-02 holds); the order is TOOL-03's business. Items are
    compared whole (was: the characters of their encodings, so "ab" and "ba" passed for equal)."""
    if len(first) < 2:
        return False
    fresh1, warm1 = list_items(run.response(first[0]), key), list_items(run.response(first[1]), key)
    if fresh1 is None or warm1 is None:
        return False
    return same_items_in_any_split([*fresh1.item_list(), *fresh2.item_list()],
                                   [*warm1.item_list(), *warm2.item_list()])


PROPERTY = ListsProperty()
