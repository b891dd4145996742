// Protocol shim: OpenAI Agents SDK for JavaScript, `@openai/agents@0.20.0` (`@openai/agents-core`
// 0.20.0, with `@modelcontextprotocol/client@2.4.0`).
//
// Code under test: the `invoke` that `mcpToFunctionTool` (agents-core dist/mcp.js) builds (the
// server's `callTool` content, one block alone as that block, else the array), run through the
// function tool's own `invoke` (errors become `defaultToolErrorFunction`'s text), then
// `getToolCallOutputItem` (dist/runner/toolExecution.js, internal), which turns the tool's output
// into the `function_call_result` the model gets: MCP `text` and `image` blocks become
// `input_text` and `input_image` items (`normalizeStructuredToolOutputs`), and an output with any
// other block becomes one text, `toSmartString` of the whole array. The server is a stand-in
// that calls the MCP SDK `Client.callTool` (which validates the result) over an in-memory
// transport and returns its `content`, as the SDK's stdio server (`dist/shims/mcp-server/node.js`)
// does.
//
// Mapping of the `function_call_result` output to the protocol's answer:
// - `{type: "text", text}` → one text block; `input_text` → text blocks;
// - `input_image` with a `data:<type>;base64,<data>` URL → an image block with that type and data;
//   an image whose MCP block had no media type is sent as its bare `data` and has no protocol
//   equivalent: answered as an image block with the data and no media type;
// - `input_file` has no protocol equivalent: a text block `[file <file or url>]` without payload;
// - `isError`: the SDK ignores MCP `isError` (the content goes out as a normal result), so the
//   answer is `isError: false`, except `true` for the error text of a call that threw.
// A result that is not a JSON object is answered with an `error`: the MCP transport drops it (see
// CaseTransport) and the tool call never returns.
//
// Usage: node shim.mjs <install dir>

import { createRequire } from "node:module";
import path from "node:path";

import { CaseTransport, importFrom, parseDataUrl, requireObjectResult, serve } from "../lib/shim.mjs";

const dir = process.argv[2];
if (!dir) {
  process.stderr.write("usage: node shim.mjs <install dir>\n");
  process.exit(2);
}
const require = createRequire(path.join(dir, "package.json"));
const core = require("@openai/agents-core");
// Internal module: the package's exports map hides it, so it is loaded by its file.
const { getToolCallOutputItem } = require(
  path.join(dir, "node_modules/@openai/agents-core/dist/runner/toolExecution.js"),
);
const { Client } = await importFrom(dir, "@modelcontextprotocol/client");

let current;
const client = new Client({ name: "normfuzz-shim", version: "1" });
await client.connect(new CaseTransport(() => current));
const server = {
  name: "normfuzz",
  async callTool(name, args) {
    return (await client.callTool({ name, arguments: args ?? {} })).content;
  },
};
const tool = core.mcpToFunctionTool({ name: "t", inputSchema: { type: "object" } }, server, false);
const toolCall = { type: "function_call", callId: "call_1", name: "t", arguments: "{}" };
const ERROR_TEXT = "An error occurred while running the tool. Please try again.";

async function coerce(input) {
  requireObjectResult(input);
  current = input;
  const output = await tool.invoke(new core.RunContext(), "{}", { toolCall });
  const item = getToolCallOutputItem(toolCall, output);
  if (!Array.isArray(item.output)) {
    const text = item.output.text;
    // Only the error function answers a string: MCP content is a block or an array of them.
    return { content: [{ type: "text", text }], isError: output === ERROR_TEXT };
  }
  return { content: item.output.map(block), isError: false };
}

function block(item) {
  switch (item.type) {
    case "input_text":
      return { type: "text", text: item.text };
    case "input_image": {
      if (typeof item.image !== "string") throw new Error(`input_image without a string image`);
      const parsed = parseDataUrl(item.image);
      return parsed
        ? { type: "image", data: parsed.data, mimeType: parsed.mimeType }
        : { type: "image", data: item.image };
    }
    case "input_file": {
      const file = typeof item.file === "string" ? item.file : item.file?.url ?? item.file?.id;
      const shown = typeof file === "string" && file.startsWith("data:") ? file.slice(0, file.indexOf(",")) : file;
      return { type: "text", text: `[file ${shown}]` };
    }
    default:
      throw new Error(`unexpected function_call_result item ${JSON.stringify(item.type)}`);
  }
}

serve("openai-agents-js @openai/agents@0.20.0", { coerce_tool_result: coerce });
