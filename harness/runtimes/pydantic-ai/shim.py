"""Protocol shim: Pydantic AI, `pydantic-ai-slim[mcp]==2.68.0` (with `fastmcp-slim==4.2.3`,
`mcp==2.3.0`).

Code under test: `MCPToolset.direct_call_tool` in pydantic_ai/mcp.py, run for real: the toolset's
fastmcp `Client` and the MCP SDK's `ClientSession` connect over the SDK's memory streams to an
in-process server whose `tools/call` answer is the case's result (lib/shim_server.py), so
`ClientSession.call_tool` parses and validates it (and checks `structuredContent` against the
tool's output schema: the tool has none, as the protocol carries none), fastmcp's
`_parse_call_tool_result` wraps it, `MCPToolset._call_tool_checked` raises an `isError` result as
`ModelRetry` (default `tool_error_behavior='retry'`) and `_map_mcp_call_tool_result` maps the rest
(structuredContent when every block is text, else one value per block: text, text that parses as
JSON as that JSON, images and audio as `BinaryContent` decoded from base64, embedded resources,
`resource_link` as its URI). Then `ToolReturnPart.model_response_str_and_user_content` in
pydantic_ai/messages.py builds what the model gets: the tool result as one text (the value itself
when it is a string, else its JSON) and the files in a trailing user message framed by provenance
tags. A result the SDK refuses, or base64 that `b64decode` refuses, raises out of the tool call:
the answer is an `error`. A `ModelRetry` is answered, `isError: true`, with the model text of the
part `build_retried_tool_return` (pydantic_ai/_output.py) makes of it (`model_response_str()`:
the error wrapped as `{"error": ...}`), as the agent graph does.

Mapping to the protocol's answer: the tool result text → a text block (left out when empty); each
user-content item: strings → text blocks, `BinaryImage` → an image block with the bytes
re-encoded as base64 and its media type; any other file (audio, document) has no protocol
equivalent and is answered as a text block naming it, `[file <media_type>]`, without payload.

Usage: <venv>/bin/python shim.py
"""

import base64
import contextlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from shim import leave, serve  # noqa: E402
from shim_server import CaseServer  # noqa: E402

from fastmcp.client.transports import ClientTransport  # noqa: E402
from fastmcp.client.transports.base import TransportOptions  # noqa: E402
from pydantic_ai import messages  # noqa: E402
from pydantic_ai._output import build_retried_tool_return  # noqa: E402
from pydantic_ai.exceptions import ModelRetry  # noqa: E402
from pydantic_ai.mcp import MCPToolset  # noqa: E402

CASES = CaseServer()


class CaseTransport(ClientTransport):
    """fastmcp's transport to the case server, as its `FastMCPTransport` connects in-process."""

    # A legacy (initialize handshake) session, as with the servers the cases model: on a
    # 2026-07-28 session the SDK requires a `resultType` no case has.
    legacy_only = True

    @contextlib.asynccontextmanager
    async def connect_session(self, *, transport_options=None, **session_kwargs):
        session_class = (transport_options or TransportOptions()).session_class
        async with CASES.client_streams() as (read, write):
            async with session_class(read_stream=read, write_stream=write, **session_kwargs) as session:
                yield session


TOOLSET = MCPToolset(CaseTransport())


def text_block(text):
    return {"type": "text", "text": text}


async def coerce(value):
    CASES.set_case(value)
    try:
        mapped = await TOOLSET.direct_call_tool("t", {})
    except ModelRetry as retry:
        retried = build_retried_tool_return(retry, tool_name="t", tool_call_id="call_1")
        return {"content": [text_block(retried.model_response_str())], "isError": True}
    part = messages.ToolReturnPart(tool_name="t", content=mapped, tool_call_id="call_1")
    text, files = part.model_response_str_and_user_content()
    blocks = [text_block(text)] if text else []
    for item in files:
        if isinstance(item, str):
            blocks.append(text_block(item))
        elif isinstance(item, messages.BinaryImage):
            data = base64.b64encode(item.data).decode("ascii")
            blocks.append({"type": "image", "data": data, "mimeType": item.media_type})
        else:
            blocks.append(text_block(f"[file {getattr(item, 'media_type', type(item).__name__)}]"))
    return {"content": blocks, "isError": False}


serve("pydantic-ai pydantic-ai-slim==2.68.0", {"coerce_tool_result": coerce}, connect=TOOLSET)
leave()
