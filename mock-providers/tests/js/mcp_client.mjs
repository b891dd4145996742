// Drives the official MCP TypeScript SDK client against the mock server, for tests/mcp_e2e.rs.
// Usage: node mcp_client.mjs stdio COMMAND [ARGS...] | node mcp_client.mjs http URL
// Prints one JSON object: what tools/list returned, the tools/call response message exactly as the
// SDK transport delivered it (parsed, before the client's schema validation), and what callTool()
// then returned or threw, plus any error the transport reported (a message it could not parse).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, target, ...args] = process.argv.slice(2);
const transport =
  mode === "stdio"
    ? new StdioClientTransport({ command: target, args, stderr: "inherit" })
    : new StreamableHTTPClientTransport(new URL(target));
const client = new Client({ name: "normfuzz-mcp-e2e", version: "0.0.0" });
await client.connect(transport);

// Protocol.connect installed these handlers; wrap them to see what reaches the client.
const received = [];
const transportErrors = [];
const deliver = transport.onmessage;
transport.onmessage = (message, extra) => {
  received.push(message);
  deliver(message, extra);
};
const reportError = transport.onerror;
transport.onerror = (err) => {
  transportErrors.push(err.message);
  reportError?.(err);
};

const out = { serverVersion: client.getServerVersion(), sessionId: transport.sessionId ?? null };
out.tools = (await client.listTools()).tools;
received.length = 0;
try {
  // A short timeout: the server answers at once, and a dropped answer otherwise costs 60 s.
  const call = { name: out.tools[0].name, arguments: {} };
  out.call = { ok: await client.callTool(call, undefined, { timeout: 3000 }) };
} catch (err) {
  const issues = err.issues?.map(({ code, path, message }) => ({ code, path, message })) ?? null;
  out.call = { error: { name: err.constructor.name, code: err.code ?? null, issues, message: err.message } };
}
out.callResponse = received[0] ?? null;
out.transportErrors = transportErrors;
if (mode === "http") {
  await transport.terminateSession();
  out.sessionAfterTerminate = transport.sessionId ?? null;
}
await client.close();
console.log(JSON.stringify(out));
