"""An in-process MCP server for the Python shims on the MCP Python SDK 2: the runtime's own client
session connects to it over the SDK's memory streams, and its `tools/call` answer is the case's
result exactly as the case has it, so the session parses and validates what a real server would
send.

The SDK's low-level `Server` answers the handshake and `tools/list` (one tool `t`, no output
schema: the SUT protocol carries none). A `tools/call` request is answered where the client sends
it, with the case's raw result: the server would validate and re-serialize what a handler returns
(`mcp/server/runner.py`, `serialize_server_result`), refusing or normalizing the very results
under test, and its dispatch would double the cost of a case.
"""

from contextlib import asynccontextmanager

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.shared.memory import create_client_server_memory_streams
from mcp.shared.message import SessionMessage

from shim import wire_result


async def _list_tools(ctx, params):
    return types.ListToolsResult(tools=[types.Tool(name="t", input_schema={"type": "object"})])


class CaseServer:
    """One server per shim process; `set_case` gives it each case before the runtime calls `t`."""

    def __init__(self):
        self.result = None
        self.server = Server("normfuzz", on_list_tools=_list_tools)

    def set_case(self, value):
        """The case's result, or `Refused` for one no SDK session would hand to the runtime."""
        self.result = wire_result(value)

    @asynccontextmanager
    async def client_streams(self):
        """The client's (read, write) streams, with the server running behind them."""
        async with create_client_server_memory_streams() as (client, server):
            (client_read, client_write), (server_read, server_write) = client, server
            async with anyio.create_task_group() as tasks:
                options = self.server.create_initialization_options()
                tasks.start_soon(self.server.run, server_read, server_write, options)
                yield client_read, _CallAnswered(self, client_write, server_write)
                tasks.cancel_scope.cancel()


class _CallAnswered:
    """The client's write stream, on which a `tools/call` request is answered with the case."""

    def __init__(self, case_server, inner, to_client):
        self._case_server = case_server
        self._inner = inner
        self._to_client = to_client

    async def send(self, item):
        message = getattr(item, "message", None)
        if isinstance(message, types.JSONRPCRequest) and message.method == "tools/call":
            result = self._case_server.result
            answer = types.JSONRPCResponse.model_construct(jsonrpc="2.0", id=message.id, result=result)
            await self._to_client.send(SessionMessage(answer))
        elif isinstance(message, types.JSONRPCRequest) and message.method == "server/discover":
            # Answered as a legacy server answers it, so a client in `mode="auto"` falls back to
            # the initialize handshake: on a 2026-07-28 session the SDK requires a `resultType`
            # no case has.
            error = types.ErrorData(code=-32601, message="Method not found")
            answer = types.JSONRPCError(jsonrpc="2.0", id=message.id, error=error)
            await self._to_client.send(SessionMessage(answer))
        else:
            await self._inner.send(item)

    async def __aenter__(self):
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc):
        return await self._inner.__aexit__(*exc)

    def __getattr__(self, name):
        return getattr(self._inner, name)
