"""Protocol shim: Pydantic AI, `pydantic-ai-slim[mcp]==2.68.0` (with `fastmcp-slim==4.2.3`,
`mcp==2.3.0`).

Code under test: `_map_mcp_call_tool_result` in pydantic_ai/mcp.py (what `MCPToolset.call_tool`
returns to the agent: structuredContent when every block is text, else one value per block: text,
text that parses as JSON as that JSON, images and audio as `BinaryContent` decoded from base64,
embedded resources, `resource_link` as its URI), then `ToolReturnPart.model_response_str_and_user_content`
in pydantic_ai/messages.py, which builds what the model gets: the tool result as one text (the
value itself when it is a string, else its JSON) and the files in a trailing user message framed by
provenance tags. The case is validated by the MCP SDK as `ClientSession.call_tool` does
(lib/shim.py) and wrapped in fastmcp's `CallToolResult` as fastmcp's client does; a result the SDK
refuses, or base64 that `b64decode` refuses, raises out of the tool call: the answer is an `error`.
An `isError` result is raised by `MCPToolset._call_tool_checked` as `ModelRetry` (default
`tool_error_behavior='retry'`) with the message built there; the shim builds that message with the
same calls (`_map_mcp_call_tool_result(prefer_structured=True)`, `model_response_str`) and answers
the model text of the part `build_retried_tool_return` (pydantic_ai/_output.py) makes of that
`ModelRetry` (`model_response_str()`: the error wrapped as `{"error": ...}`), `isError: true`.

Mapping to the protocol's answer: the tool result text → a text block (left out when empty); each
user-content item: strings → text blocks, `BinaryImage` → an image block with the bytes
re-encoded as base64 and its media type; any other file (audio, document) has no protocol
equivalent and is answered as a text block naming it, `[file <media_type>]`, without payload.

Usage: <venv>/bin/python shim.py
"""

import base64
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

from shim import leave, serve, validate_call_tool_result  # noqa: E402

from fastmcp.client.client import CallToolResult  # noqa: E402
from pydantic_ai import messages  # noqa: E402
from pydantic_ai._output import build_retried_tool_return  # noqa: E402
from pydantic_ai.exceptions import ModelRetry  # noqa: E402
from pydantic_ai.mcp import _map_mcp_call_tool_result  # noqa: E402


def text_block(text):
    return {"type": "text", "text": text}


def retry_text(result):
    """`MCPToolset._call_tool_checked`'s isError branch, then the retry prompt the model gets."""
    if result.structured_content is None and not result.content:
        message = "Tool 't' returned an error"
    else:
        mapped = _map_mcp_call_tool_result(result, prefer_structured=True)
        part = messages.ToolReturnPart(tool_name="t", content=mapped, tool_call_id="call_1")
        message = part.model_response_str(wrap_if_error=False) or "Tool 't' returned an error"
    retried = build_retried_tool_return(ModelRetry(message), tool_name="t", tool_call_id="call_1")
    return retried.model_response_str()


async def coerce(value):
    sdk = validate_call_tool_result(value)
    result = CallToolResult(
        content=sdk.content,
        structured_content=sdk.structured_content,
        meta=sdk.meta,
        data=None,
        is_error=sdk.is_error,
    )
    if result.is_error:
        return {"content": [text_block(retry_text(result))], "isError": True}
    mapped = _map_mcp_call_tool_result(result)
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


serve("pydantic-ai pydantic-ai-slim==2.68.0", {"coerce_tool_result": coerce})
leave()
