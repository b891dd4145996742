"""Protocol shim: LangChain MCP adapters for Python, `langchain-mcp-adapters==0.3.2` (with
`langchain-core==1.8.3`, `mcp==1.30.0`).

Code under test: `_convert_call_tool_result` and `_convert_mcp_content_to_lc_block` in
langchain_mcp_adapters/tools.py, reached the way an app reaches them:
`convert_mcp_tool_to_langchain_tool(session, tool)` (default options, so `handle_tool_errors` is
on), then the tool's `ainvoke` with a tool call, which returns the `ToolMessage` the model gets
(its content; the artifact holding `structuredContent` never reaches the model). The session is a
stand-in whose `call_tool` returns the case validated by the MCP SDK as `ClientSession.call_tool`
does (lib/shim.py); a result the SDK refuses raises out of the session, so the answer is an
`error`. Exceptions the adapter raises past `handle_tool_error` (audio blocks:
NotImplementedError) also end the agent's turn and are answered as an `error`.

Mapping of the ToolMessage to the protocol's answer:
- a string → one text block; `text` blocks → text blocks;
- `image` blocks with `base64` → image blocks with that data and `mime_type` (unchecked);
- `image` blocks with a `url` (a `resource_link` whose mimeType is image/*) and `file` blocks
  have no protocol equivalent: LangChain hands them to the chat model integration as image URL
  or document input (a provider then fetches the URL). The shim answers a text block naming
  them without payload: `[image <mime_type> <url>]`, `[file <mime_type> <url>]`;
- `isError` is the ToolMessage's `status == "error"`.

Usage: <venv>/bin/python shim.py
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from shim import Refused, leave, serve, validate_call_tool_result  # noqa: E402

from langchain_mcp_adapters.tools import convert_mcp_tool_to_langchain_tool  # noqa: E402
from mcp import types  # noqa: E402


class CaseSession:
    """What the adapter calls on an MCP `ClientSession`: `call_tool` answers the current case."""

    current = None

    async def call_tool(self, name, arguments=None, *args, **kwargs):
        return validate_call_tool_result(self.current)


session = CaseSession()
tool = convert_mcp_tool_to_langchain_tool(
    session, types.Tool(name="t", inputSchema={"type": "object"})
)


def label(kind, *parts):
    return "[" + " ".join([kind, *(str(p) for p in parts if p is not None)]) + "]"


def block(b):
    kind = b.get("type")
    if kind == "text":
        return {"type": "text", "text": b["text"]}
    if kind == "image" and "base64" in b:
        return {"type": "image", "data": b["base64"], "mimeType": b.get("mime_type")}
    if kind in ("image", "file"):
        return {"type": "text", "text": label(kind, b.get("mime_type"), b.get("url"))}
    raise Refused(f"unexpected ToolMessage block {kind!r}")


async def coerce(value):
    session.current = value
    message = await tool.ainvoke({"name": "t", "args": {}, "id": "call_1", "type": "tool_call"})
    content = message.content
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else [block(b) for b in content]
    return {"content": blocks, "isError": message.status == "error"}


serve("langchain-py langchain-mcp-adapters==0.3.2", {"coerce_tool_result": coerce})
leave()
