"""Every valid frame: whatever a conformant client may send, the answer passes the whole oracle.

Frames come from two sources, mixed in one example: target-aware calls (a tool the target lists
with arguments from its own schema, its resources and prompts, the MRTR trigger) and frames
generated from the message schema alone (any of the ten request methods, and the client
notification). Many frames share one warm process; a sentinel closes each example, so a frame
that kills the process or draws a late reply to a notification is caught in its own example.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from fuzz.properties.base import Context, Property
from fuzz.properties.case import Case, Step
from fuzz.properties.common import Call, CaseBuilder, id_styles, surface_calls

_SCHEMA_FRAMES: Any = None


def schema_frames() -> st.SearchStrategy[dict[str, Any]]:
    """Valid frames of every short-lived request method and the client notification."""
    global _SCHEMA_FRAMES
    if _SCHEMA_FRAMES is None:
        from strategies import frames

        methods = [m for m in frames.client_methods() if m not in frames.LONG_LIVED_METHODS]
        _SCHEMA_FRAMES = st.one_of([frames.valid_frame(m) for m in methods])
    return _SCHEMA_FRAMES


class ValidProperty(Property):
    name = "valid"
    title = "every valid frame is answered as the spec says"
    fresh_per_example = 0

    def cases(self, ctx: Context) -> st.SearchStrategy[Case]:
        item = st.one_of(surface_calls(ctx.surface), schema_frames())
        return st.builds(self._build, id_styles(), st.lists(item, min_size=1, max_size=4))

    def _build(self, id_style: str, items: list[Any]) -> Case:
        b = CaseBuilder(self.name, id_style=id_style)
        for item in items:
            if isinstance(item, Call):
                b.call(0, item)
            elif "id" in item:
                frame = dict(item)
                frame["id"] = b.rid()  # unique in the example: ids in flight never collide (RPC-05)
                b.add(Step(proc=0, frame=frame, label=str(frame.get("method"))))
            else:
                b.add(Step(proc=0, frame=dict(item), wait="none", label=str(item.get("method"))))
        b.sentinel(0)
        return b.build(warm=[0])


PROPERTY = ValidProperty()
