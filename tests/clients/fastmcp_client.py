"""The client job of client mode on fastmcp 4.2.3's `fastmcp.Client`.

    python tests/clients/fastmcp_client.py SERVER COMMAND ...   # stdio: fastmcp launches SERVER
    python tests/clients/fastmcp_client.py URL                  # Streamable HTTP

The job of tests/clients/ref_client.py, written as a fastmcp application would write it:
handlers for elicitation (declined), sampling (a fixed text) and roots (none), and the
client's own calls. fastmcp wraps the SDK's session, so its readings may differ from
sdk_client.py's where fastmcp adds its own parsing. Readings as tests/clients/readings.py.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
from fastmcp import Client
from fastmcp.client.elicitation import ElicitResult
from fastmcp.client.transports import StdioTransport
from readings import STEP_TIMEOUT, emit


async def elicit(message: str, response_type: Any, params: Any, context: Any) -> ElicitResult[Any]:
    return ElicitResult(action="decline")


async def sample(messages: Any, params: Any, context: Any) -> str:
    return "ok"


def _outcome(exc: BaseException) -> tuple[str, int | None]:
    code = getattr(exc, "code", None)
    if isinstance(code, int):
        return "error", code
    error = getattr(exc, "error", None)
    if isinstance(getattr(error, "code", None), int):
        return "error", error.code
    from fastmcp.exceptions import ClientError, PromptError, ResourceError, ToolError

    if isinstance(exc, ToolError | ResourceError | PromptError | ClientError):
        return "error", None
    return "invalid", None


async def step(method: str, call: Any) -> Any:
    try:
        with anyio.fail_after(STEP_TIMEOUT):
            result = await call()
    except Exception as exc:  # noqa: BLE001 - what the application sees is the verdict
        outcome, code = _outcome(exc)
        emit(method, outcome, code=code, note=f"{type(exc).__name__}: {exc}")
        return None
    emit(method, "complete", getattr(result, "resultType", None) if not isinstance(result, list) else None)
    return result


async def job(transport: Any) -> None:
    client = Client(transport, elicitation_handler=elicit, sampling_handler=sample, roots=[],
                    timeout=STEP_TIMEOUT, init_timeout=STEP_TIMEOUT,
                    client_info=types.Implementation(name="tempest-fastmcp-client", version="1.0"))
    entered = False
    try:
        async with client:
            entered = True
            emit("server/discover", "complete")
            tools = await step("tools/list", client.list_tools) or []
            name = tools[0].name if tools else "echo"
            await step("tools/call", lambda: client.call_tool(name, {}, raise_on_error=False))
            async with anyio.create_task_group() as tg:
                tg.start_soon(step, "resources/list", client.list_resources)
                tg.start_soon(step, "prompts/list", client.list_prompts)
            await step("resources/read", lambda: client.read_resource("tempest://r"))
            await step("prompts/get", lambda: client.get_prompt("greet", {}))
    except Exception as exc:  # noqa: BLE001 - connecting failed
        if not entered:
            outcome, code = _outcome(exc)
            emit("server/discover", outcome, code=code, note=f"{type(exc).__name__}: {exc}")


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    if argv[0].startswith(("http://", "https://")):
        transport: Any = argv[0]
    else:
        transport = StdioTransport(command=argv[0], args=argv[1:], keep_alive=False)
    anyio.run(job, transport)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
