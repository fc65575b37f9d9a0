"""Token counts in o200k_base, offline: what a catalogue costs in a host's prompt.

tiktoken fetches its encoding files from the network at first use; `bpe-openai` ships
o200k_base inside its wheel and produces the same token ids (tests/test_catalogue.py checks it
against tiktoken's published examples), so counting works on a machine with no network.
"""

from __future__ import annotations

import importlib.util
import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Final

ENCODING: Final = "o200k_base"


@lru_cache(maxsize=1)
def _encoding() -> Any:
    """The Rust tokenizer behind `bpe_openai.get_encoding(...).encode_ordinary`, loaded without
    the package's `__init__`: that parses three encodings' rank files in Python (1.3 to 2.5 s on
    the CI machine, paid by every fuzz run for its report's catalogue section), while the Rust
    side carries o200k_base built in (0.25 s). Falls back to the public API when the package's
    layout is not the one this knows."""
    try:
        spec = importlib.util.find_spec("bpe_openai")
        where = Path(next(iter(spec.submodule_search_locations or ()))) if spec else None
        binary = next(where.glob("_bindings*.so"), None) if where else None
        bind = importlib.util.spec_from_file_location("bpe_openai._bindings", binary) if binary else None
        if bind is not None and bind.loader is not None:
            module = importlib.util.module_from_spec(bind)
            bind.loader.exec_module(module)
            return module.tokenizer_for_encoding(ENCODING).encode
    except (ImportError, OSError, AttributeError, StopIteration):
        pass
    import bpe_openai

    return bpe_openai.get_encoding(ENCODING).encode_ordinary


def encode(text: str) -> list[int]:
    """o200k_base ids of `text` as ordinary text (a special-token spelling in a description is text)."""
    if not text:
        return []
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (JSON allows one): replaced, as bpe-openai does
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return list(_encoding()(text))


def count_tokens(text: str) -> int:
    return len(encode(text))


def definition_text(obj: Any) -> str:
    """A definition as the host prompt carries it: JSON with the standard separators
    (`", "` and `": "`), non-ASCII text as itself."""
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": "))
