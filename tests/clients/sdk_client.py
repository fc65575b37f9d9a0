"""The client job of client mode on the official Python SDK's high-level client (`mcp` 2.3.0).

    python tests/clients/sdk_client.py SERVER COMMAND ...   # stdio: the SDK launches SERVER
    python tests/clients/sdk_client.py URL                  # Streamable HTTP

The same fixed job as tests/clients/ref_client.py (discover, which the SDK does on connect in
its default `mode="auto"`; list and call tools; resources/list and prompts/list at once; read a
resource; get a prompt), written the way an application would: `mcp.Client` with elicitation,
sampling and roots callbacks, which the SDK drives through every input_required round. After
each step one JSON line says what the application got (see tests/clients/readings.py): a
result is "complete", an MCPError is "error" with its code, any other exception "invalid".
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from readings import STEP_TIMEOUT, emit, outcome_of_exception

CLIENT_INFO = types.Implementation(name="tempest-sdk-client", version="1.0")


async def elicit(context: Any, params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="decline")


async def sample(context: Any, params: Any) -> types.CreateMessageResult:
    return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="ok"),
                                     model="tempest-sdk")


async def roots(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[])


async def step(method: str, call: Any) -> Any:
    try:
        with anyio.fail_after(STEP_TIMEOUT):
            result = await call()
    except MCPError as exc:
        emit(method, "error", code=exc.code)
        return None
    except Exception as exc:  # noqa: BLE001 - what the application sees is the verdict
        emit(method, *outcome_of_exception(exc), note=f"{type(exc).__name__}: {exc}")
        return None
    emit(method, "complete", getattr(result, "resultType", None) or getattr(result, "result_type", None))
    return result


async def job(server: Any) -> None:
    client = Client(server, elicitation_callback=elicit, sampling_callback=sample, list_roots_callback=roots,
                    client_info=CLIENT_INFO, read_timeout_seconds=STEP_TIMEOUT, cache=None)
    entered = False
    try:
        async with client:
            entered = True
            emit("server/discover", "complete")
            listed = await step("tools/list", client.list_tools)
            tools = getattr(listed, "tools", None) or []
            name = tools[0].name if tools else "echo"
            await step("tools/call", lambda: client.call_tool(name, {}))
            async with anyio.create_task_group() as tg:
                tg.start_soon(step, "resources/list", client.list_resources)
                tg.start_soon(step, "prompts/list", client.list_prompts)
            await step("resources/read", lambda: client.read_resource("tempest://r"))
            await step("prompts/get", lambda: client.get_prompt("greet", {}))
    except MCPError as exc:
        if not entered:
            emit("server/discover", "error", code=exc.code)
    except Exception as exc:  # noqa: BLE001 - connecting failed: what the application sees is the verdict
        if not entered:
            emit("server/discover", *outcome_of_exception(exc), note=f"{type(exc).__name__}: {exc}")


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    if argv[0].startswith(("http://", "https://")):
        server: Any = argv[0]
    else:
        server = StdioServerParameters(command=argv[0], args=argv[1:])
    anyio.run(job, server)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
