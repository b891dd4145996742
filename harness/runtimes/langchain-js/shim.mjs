// Protocol shim: LangChain.js MCP adapters, `@langchain/mcp-adapters@1.1.4` (with
// `@langchain/core@1.4.0`, `@langchain/langgraph@1.7.3`, `@modelcontextprotocol/sdk@1.32.2`).
//
// Code under test: `_convertCallToolResult` and `_toolOutputToContentBlocks` in
// @langchain/mcp-adapters/dist/tools.js (internal), reached the way an app reaches them:
// `loadMcpTools` (default options) over a real MCP SDK `Client` on an in-memory transport, then
// the tool's `invoke` with a tool call, which returns the `ToolMessage` the model gets (content
// only: the artifact, which holds embedded resources and `structuredContent`, never reaches the
// model). When `invoke` throws (`isError` results throw a `ToolException` with the text blocks
// joined; the SDK's `CallToolResultSchema` refuses malformed results), LangGraph's `ToolNode`
// (@langchain/langgraph/dist/prebuilt/tool_node.js, `handleToolErrors` on by default) sends
// `Error: ${e.message}\n Please fix your mistakes.` with status `error`; the shim answers that
// text, `isError: true`.
//
// Mapping of the ToolMessage content to the protocol's answer:
// - a string → one text block; `text` blocks → text blocks;
// - `image_url` blocks (a `data:<mimeType>;base64,<data>` URL built from the MCP image as is) →
//   image blocks with that type and data;
// - `audio` and `file` blocks have no protocol equivalent: LangChain hands them to the chat model
//   integration as audio or document input. The shim answers a text block naming them without
//   their payload: `[audio <mime_type>]`, `[file <mime_type> <url>]`; a `file` whose source is
//   text is answered with that text.
// A result that is not a JSON object is answered with an `error`: the MCP SDK's transports drop
// it (see CaseTransport) and the tool call never returns.
//
// Usage: node shim.mjs <install dir>

import { CaseTransport, importFrom, parseDataUrl, requireObjectResult, serve } from "../lib/shim.mjs";

const dir = process.argv[2];
if (!dir) {
  process.stderr.write("usage: node shim.mjs <install dir>\n");
  process.exit(2);
}
const { loadMcpTools } = await importFrom(dir, "@langchain/mcp-adapters");
const { Client } = await importFrom(dir, "@modelcontextprotocol/sdk/client/index.js");

let current;
const client = new Client({ name: "normfuzz-shim", version: "1" });
await client.connect(new CaseTransport(() => current));
const [tool] = await loadMcpTools("normfuzz", client);

async function coerce(input) {
  requireObjectResult(input);
  current = input;
  let message;
  try {
    message = await tool.invoke({ name: tool.name, args: {}, id: "call_1", type: "tool_call" });
  } catch (err) {
    return {
      content: [{ type: "text", text: `Error: ${err.message}\n Please fix your mistakes.` }],
      isError: true,
    };
  }
  return { content: blocks(message.content), isError: message.status === "error" };
}

function blocks(content) {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return content.map((block) => {
    switch (block.type) {
      case "text":
        return { type: "text", text: block.text };
      case "image_url": {
        const url = typeof block.image_url === "string" ? block.image_url : block.image_url?.url;
        const parsed = parseDataUrl(url);
        if (!parsed) throw new Error(`image_url block without a data URL: ${String(url).slice(0, 80)}`);
        return { type: "image", data: parsed.data, mimeType: parsed.mimeType };
      }
      case "audio":
        return { type: "text", text: label("audio", block.mime_type) };
      case "file":
        if (block.source_type === "text") return { type: "text", text: block.text };
        return { type: "text", text: label("file", block.mime_type, block.url) };
      default:
        throw new Error(`unexpected ToolMessage block ${JSON.stringify(block.type)}`);
    }
  });
}

// `[kind mime_type url]`, leaving out the parts the block lacks.
function label(kind, ...parts) {
  return `[${[kind, ...parts.filter((p) => p !== undefined && p !== null)].join(" ")}]`;
}

serve("langchain-js @langchain/mcp-adapters@1.1.4", { coerce_tool_result: coerce });
