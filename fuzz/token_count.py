"""Token counts in o200k_base, offline: what a catalogue costs in a host's prompt.

tiktoken fetches its encoding files from the network at first use; `bpe-openai` ships
o200k_base inside its wheel and produces the same token ids (tests/test_catalogue.py checks it
against tiktoken's published examples), so counting works on a machine with no network.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Final

ENCODING: Final = "o200k_base"


@lru_cache(maxsize=1)
def _encoding() -> Any:
    import bpe_openai  # imported on first count: the fuzz campaign pays for it only when it counts

    return bpe_openai.get_encoding(ENCODING)


def count_tokens(text: str) -> int:
    """Tokens of `text` as ordinary text (a special-token spelling in a description is text)."""
    return len(_encoding().encode_ordinary(text)) if text else 0


def encode(text: str) -> list[int]:
    return list(_encoding().encode_ordinary(text))


def definition_text(obj: Any) -> str:
    """A definition as the host prompt carries it: JSON with the standard separators
    (`", "` and `": "`), non-ASCII text as itself."""
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": "))
