// An MCP client transport (the SDK's `Transport` shape: start, send, close, onmessage) backed by
// an in-memory server with one tool `t` whose `tools/call` result is `result()`. Self-contained
// (no imports): the Node shims use it through shim.mjs, and `normfuzz upstream` pastes it into
// each standalone repro script.
//
// A result that is not a JSON object is refused, as a real transport refuses it: the MCP SDK's
// stdio and HTTP transports parse every message with JSONRPCMessageSchema and drop one whose
// `result` is not an object, so the call never returns (until the client's request timeout).
export class CaseTransport {
  constructor(result) {
    this.result = result;
    this.onmessage = undefined;
    this.onclose = undefined;
    this.onerror = undefined;
  }
  async start() {}
  async close() {
    this.onclose?.();
  }
  async send(message) {
    if (message.id === undefined || message.method === undefined) return;
    let result;
    switch (message.method) {
      case "initialize":
        result = {
          protocolVersion: message.params?.protocolVersion ?? "2025-06-18",
          capabilities: { tools: {} },
          serverInfo: { name: "normfuzz", version: "1" },
        };
        break;
      case "tools/list":
        result = { tools: [{ name: "t", inputSchema: { type: "object" } }] };
        break;
      case "tools/call":
        result = this.result();
        break;
      default:
        this.reply({ jsonrpc: "2.0", id: message.id, error: { code: -32601, message: "not found" } });
        return;
    }
    this.reply({ jsonrpc: "2.0", id: message.id, result });
  }
  reply(message) {
    queueMicrotask(() => this.onmessage?.(message));
  }
}
