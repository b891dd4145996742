// Protocol shim: Vercel AI SDK, `@ai-sdk/mcp@2.0.99` with `ai@7.0.173`.
//
// Code under test: `mcpToModelOutput` in @ai-sdk/mcp/dist/index.js (not exported; it is the
// `toModelOutput` of every tool `MCPClient.toolsFromDefinitions` builds), reached the way an app
// reaches it: `createMCPClient` over an in-memory transport, the tool's `execute` (which calls
// `callTool`, validating the result with the client's own `CallToolResultSchema`), then the tool's
// `toModelOutput`. When `execute` throws (the schema refused the result), `ai`'s
// `createToolModelOutput` (ai/dist/index.js, not exported) sends `{type: "error-text", value:
// getErrorMessage(error)}`; the shim answers that text as the one block, `isError: true`.
//
// Mapping of the LanguageModel tool-result output to the protocol's answer:
// - `text` → one text block; `json` → one text block, the value as JSON (how providers send it);
// - `content`: `text` parts → text blocks; `file` parts (only made from MCP `image` blocks, with
//   the block's `mimeType` and `data` unchecked) → image blocks with that data and type, which
//   is what a provider adapter puts into the request;
// - `isError`: the AI SDK has no error flag on a successful `execute` (an MCP `isError` result is
//   returned, not thrown), so the answer is `isError: false` except for the error-text case.
// A result that is not a JSON object is answered with an `error`: the MCP transport drops it
// (see CaseTransport) and the tool call never returns.
//
// Usage: node shim.mjs <install dir>   (the npm prefix holding node_modules/@ai-sdk/mcp)

import { CaseTransport, errorText, importFrom, requireObjectResult, serve } from "../lib/shim.mjs";

const dir = process.argv[2];
if (!dir) {
  process.stderr.write("usage: node shim.mjs <install dir>\n");
  process.exit(2);
}
const { createMCPClient } = await importFrom(dir, "@ai-sdk/mcp");

let current;
const client = await createMCPClient({ transport: new CaseTransport(() => current) });
const tools = client.toolsFromDefinitions({
  tools: [{ name: "t", inputSchema: { type: "object" } }],
});
const tool = tools.t;

// ai's getErrorMessage (ai/dist/index.js): what `error-text` carries.
function getErrorMessage(error) {
  if (error == null) return "unknown error";
  if (typeof error === "string") return error;
  if (error instanceof Error) return error.message;
  return JSON.stringify(error);
}

async function coerce(input) {
  requireObjectResult(input);
  current = input;
  let output;
  try {
    output = await tool.execute({}, { toolCallId: "call_1", messages: [] });
  } catch (err) {
    return { content: [{ type: "text", text: getErrorMessage(err) }], isError: true };
  }
  const model = await tool.toModelOutput({ toolCallId: "call_1", input: {}, output });
  return fromModelOutput(model);
}

function fromModelOutput(model) {
  switch (model.type) {
    case "text":
      return { content: [{ type: "text", text: model.value }], isError: false };
    case "json":
      return { content: [{ type: "text", text: JSON.stringify(model.value) }], isError: false };
    case "content":
      return {
        content: model.value.map((part) => {
          if (part.type === "text") return { type: "text", text: part.text };
          if (part.type === "file" && part.data?.type === "data") {
            return { type: "image", data: part.data.data, mimeType: part.mediaType };
          }
          throw new Error(`unexpected model output part ${JSON.stringify(part.type)}`);
        }),
        isError: false,
      };
    default:
      throw new Error(`unexpected model output ${errorText(model.type)}`);
  }
}

serve("ai-sdk @ai-sdk/mcp@2.0.99", { coerce_tool_result: coerce });
