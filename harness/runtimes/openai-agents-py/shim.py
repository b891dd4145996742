"""Protocol shim: OpenAI Agents SDK for Python, `openai-agents==0.24.0` (with `mcp==2.3.0`).

Code under test: `MCPUtil.invoke_mcp_tool` in agents/mcp/util.py, which calls the server's
`call_tool` and turns the `CallToolResult` into the tool output the model gets (text items, image
items as `data:<mimeType>;base64,<data>` URLs, any other block as its JSON in a text item; one
item alone is sent as that item). The server is an `_MCPServerWithClientSession` (what
`MCPServerStdio` is, default options, so `use_structured_content=False`) whose own
`call_tool` runs: its SDK `ClientSession` connects over memory streams to an in-process server
whose `tools/call` answer is the case as sent (lib/shim_server.py), so the session parses and
validates it as from a real server. When `invoke_mcp_tool` raises (the SDK refused the result), the
`FunctionTool` it is wrapped in sends `default_tool_error_function`'s text (agents/tool.py) as the
output; the shim answers that text as the one block, `isError: true`.

Mapping of the tool output to the protocol's answer:
- text items → text blocks; image items (a data URL built from the MCP image as is) → image
  blocks with that type and data;
- `isError`: the SDK ignores the MCP `isError` flag (the content goes out as a normal function
  call output), so the answer is `isError: false` except for the error text above.

Usage: <venv>/bin/python shim.py
"""

import logging
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from shim import Refused, leave, serve  # noqa: E402
from shim_server import CaseServer  # noqa: E402

from agents.mcp.server import _MCPServerWithClientSession  # noqa: E402
from agents.mcp.util import MCPUtil  # noqa: E402
from agents.run_context import RunContextWrapper  # noqa: E402
from agents.tool import default_tool_error_function  # noqa: E402
from mcp import types  # noqa: E402

CASES = CaseServer()


class CaseMCPServer(_MCPServerWithClientSession):
    """An `MCPServer` whose client session is the SDK's own, connected to the case server, as
    `MCPServerStdio` connects to a process (default options)."""

    name = "normfuzz"

    def __init__(self):
        super().__init__(cache_tools_list=True, client_session_timeout_seconds=None)

    def create_streams(self):
        return CASES.client_streams()


# The SDK logs every failed call; the log is not model input, and stderr is kept by the harness.
logging.getLogger("openai.agents").setLevel(logging.CRITICAL)

server = CaseMCPServer()
tool = types.Tool(name="t", inputSchema={"type": "object"})
context = RunContextWrapper(context=None)


def block(item):
    kind = item.get("type")
    if kind == "text":
        return {"type": "text", "text": item["text"]}
    if kind == "image":
        url = item.get("image_url", "")
        head, sep, data = url.partition(";base64,")
        if not sep or not head.startswith("data:"):
            raise Refused(f"image item without a data URL: {url[:80]!r}")
        return {"type": "image", "data": data, "mimeType": head[len("data:"):]}
    raise Refused(f"unexpected tool output item {kind!r}")


async def coerce(value):
    try:
        # A result no session hands on fails the call like the time-out it waits for.
        CASES.set_case(value)
        output = await MCPUtil.invoke_mcp_tool(server, tool, context, "{}")
    except Exception as err:
        text = default_tool_error_function(context, err)
        return {"content": [{"type": "text", "text": text}], "isError": True}
    if isinstance(output, str):
        return {"content": [{"type": "text", "text": output}], "isError": False}
    items = output if isinstance(output, list) else [output]
    return {"content": [block(dict(i)) for i in items], "isError": False}


serve("openai-agents-py openai-agents==0.24.0", {"coerce_tool_result": coerce}, connect=server)
leave()
