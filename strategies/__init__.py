"""Pure strategies: the MCP 2026-07-28 message schema turned into Hypothesis strategies.

No I/O and no processes here (the one exception: `load_schema_source(path)` reads the schema
file it is given). The public names are importable from the package; they load lazily so that
`import strategies` stays cheap for code that needs only a constant or the deterministic MRTR
helpers.

Main entry points (see each module for details):
  load_schema_source(path=None) -> SchemaSource           strategies.schema_source
  valid_request(method, *, schema_source=None, ...)        strategies.frames
  any_valid_request(), valid_notification(), valid_result(), valid_response()
  malformed_case(name, *, method=None, ...), malformed_retry(name, request, result)
  MUTATIONS, catalogue(), MalformedCase                    strategies.malformed
  Expectation (a frame's expected reaction, for the oracle)  strategies.expectation
  retry_for(request, result), input_required_result(), build_retry(), fulfil()   strategies.mrtr
  Inventory, targeted_request(inventory)                   strategies.targeted
  SchemaCompiler, compile_schema(schema)                   strategies.compiler
  draw_examples(strategy, count, seed)                     strategies.sampling
  run_frames(argv, out) (the command: fuzz/frames_command)  strategies.frames_command
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "SchemaSource": "schema_source",
    "SchemaSourceError": "schema_source",
    "load_schema_source": "schema_source",
    "result_schema": "schema_source",
    "SchemaCompiler": "compiler",
    "CompileError": "compiler",
    "compile_schema": "compiler",
    "ERRATA": "errata",
    "valid_request": "frames",
    "valid_notification": "frames",
    "valid_frame": "frames",
    "any_valid_request": "frames",
    "any_valid_frame": "frames",
    "valid_result": "frames",
    "valid_response": "frames",
    "request_meta": "frames",
    "request_ids": "frames",
    "client_methods": "frames",
    "MUTATIONS": "malformed",
    "Mutation": "malformed",
    "Expectation": "expectation",
    "MalformedCase": "malformed",
    "malformed_case": "malformed",
    "malformed_retry": "malformed",
    "any_malformed_case": "malformed",
    "mutation_names": "malformed",
    "retry_mutations_for": "malformed",
    "catalogue": "malformed",
    "retry_for": "mrtr",
    "input_required_result": "mrtr",
    "input_responses_for": "mrtr",
    "build_retry": "mrtr",
    "fulfil": "mrtr",
    "fulfil_all": "mrtr",
    "Inventory": "targeted",
    "targeted_request": "targeted",
    "draw_examples": "sampling",
    "run_frames": "frames_command",
    "FramesOutcome": "frames_command",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
