// Protocol shim: openclaw 2026.9.6 (build eb377ac), run on the Node 24 its e2e adapter installs.
//
// openclaw ships one bundle (node_modules/openclaw/dist/) of chunks named by content hash whose
// exports are minified: each function is found by its chunk's source name and its own `f.name`.
//
// coerce_tool_result: `projectMcpCallToolResult` (dist/mcp-content-*.mjs), reached as an embedded
// agent run reaches it: `createSessionMcpRuntime(...).callTool` (dist/agents/agent-bundle-mcp-
// runtime.js) calls the MCP SDK's `Client.callTool` (openclaw's own @modelcontextprotocol/sdk
// 1.30.0, which validates the result with `CallToolResultSchema`), and the bundle tool's execute
// (dist/agent-bundle-mcp-materialize-*.mjs) projects the result. Here the same Client runs over an
// in-memory transport (lib/case-transport.mjs). When callTool throws (the schema refused the
// result), the thrown error reaches the model as the MCP tool's wrapper makes it: the before-tool-
// call wrapper (dist/agent-tools.before-tool-call-*.mjs) replaces a network tool's error with
// `protectNetworkToolExecutionError` (dist/tool-result-error-*.mjs: the message bounded and
// wrapped in EXTERNAL_UNTRUSTED_CONTENT markers), and `executeAdaptedToolOperation`
// (dist/agent-tool-definition-adapter-*.mjs) answers `jsonResult({status: "error", tool, error})`
// (dist/tool-results-*.mjs). The tool is `t` on server `normfuzz`, so the model's name for it
// is `normfuzz__t`.
// Output mapping: the agent tool result's `content` as it is (text and image blocks), `isError`
// from openclaw's own `isToolResultError(result)` (dist/tool-result-error-*.mjs; it reads
// `details.status === "error"`), which is what the agent loop's afterToolCall hook puts on the
// provider's tool result (dist/resource-loader-*.mjs).
// A result that is not a JSON object is answered with an `error`: the MCP transport drops it
// (see CaseTransport) and the call never returns.
//
// parse_reply: `parseReplyDirectives` (dist/reply-directives-*.mjs) with no options, as the final
// reply's payloads are built (dist/payloads-*.mjs, `buildEmbeddedRunPayloads`). Mapping: `text`;
// `mediaUrls` (file: URLs already made paths by it) or []; `audioAsVoice`; `replyTo`: the tag's id,
// else "current" for [[reply_to_current]], else null; `embeds` [] and `rejectedMedia` 0 (openclaw
// reads no embeds here and rejects no media: local media is checked against the media roots only at
// delivery, `appendLocalMediaParentRoots` in dist/local-roots-*.mjs, with the media file's own
// parent folder added as a root; `roots` are therefore not used).
//
// check_media_url: the part of openclaw's remote-media decision made before DNS. A reply's http(s)
// media is fetched by `loadWebMedia` (dist/web-media-*.mjs) through `fetchWithSsrFGuard`
// (dist/fetch-guard-*.mjs): `new URL`, protocol http: or https:, then
// `resolvePinnedHostnameWithPolicy` (dist/ssrf-*.mjs), whose policy checks on the name
// (`assertHostnameAllowedWithPolicy`: blocked names, IP literals in private, special-use and legacy
// forms) come before the DNS lookup and the check of the resolved addresses. The shim makes that
// first part with the default (absent) policy and never resolves: a name that only resolves to a
// private address is allowed here and refused by openclaw after DNS.
//
// Not offered: neutralize_text (openclaw has no standalone neutralizer on this path: successful
// MCP text reaches the model as is), normalize_stream (the block pipeline needs a whole agent
// session), resolve_retry_images and sanitize_tool_names (no such functions in this build).
//
// Usage: node shim.mjs <install dir>   (the e2e install: <dir>/app/node_modules/openclaw)

import { readdirSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

import { CaseTransport, importFrom, requireObjectResult, serve } from "../lib/shim.mjs";

const dir = process.argv[2];
if (!dir) {
  process.stderr.write("usage: node shim.mjs <install dir>\n");
  process.exit(2);
}
const app = path.join(dir, "app");
const dist = path.join(app, "node_modules/openclaw/dist");

/** The function named `name` exported by a chunk `<prefix>-<hash>.mjs` of the bundle. */
async function bundled(prefix, name) {
  const pattern = new RegExp(`^${prefix}-[\\w-]+\\.mjs$`);
  for (const chunk of readdirSync(dist).filter((f) => pattern.test(f))) {
    const mod = await import(pathToFileURL(path.join(dist, chunk)).href);
    const found = Object.values(mod).find((f) => typeof f === "function" && f.name === name);
    if (found) return found;
  }
  throw new Error(`${name} not found in ${dist}/${prefix}-*.mjs`);
}

const projectMcpCallToolResult = await bundled("mcp-content", "projectMcpCallToolResult");
const isToolResultError = await bundled("tool-result-error", "isToolResultError");
const protectNetworkToolExecutionError = await bundled(
  "tool-result-error",
  "protectNetworkToolExecutionError",
);
const jsonResult = await bundled("tool-results", "jsonResult");
const parseReplyDirectives = await bundled("reply-directives", "parseReplyDirectives");
const assertHostnameAllowedWithPolicy = await bundled("ssrf", "assertHostnameAllowedWithPolicy");
const { Client } = await importFrom(app, "@modelcontextprotocol/sdk/client/index.js");

const SERVER = "normfuzz";
const TOOL = "t";
let current;
const client = new Client({ name: "openclaw-bundle-mcp", version: "0.0.0" }, { capabilities: {} });
await client.connect(new CaseTransport(() => current));

async function coerce(input) {
  requireObjectResult(input);
  current = input;
  let result;
  try {
    const raw = await client.callTool({ name: TOOL, arguments: {} });
    result = projectMcpCallToolResult(raw, { mcpServer: SERVER, mcpTool: TOOL });
  } catch (err) {
    // describeToolExecutionError (agent-tool-definition-adapter): the message, else String(err).
    const error = protectNetworkToolExecutionError(err, "Tool execution failed.");
    const message = error instanceof Error && error.message?.trim() ? error.message : String(error);
    result = jsonResult({ status: "error", tool: `${SERVER}__${TOOL}`, error: message });
  }
  return { content: result.content, isError: isToolResultError(result) };
}

function parseReply(input) {
  const parsed = parseReplyDirectives(input.text);
  return {
    text: parsed.text,
    mediaUrls: parsed.mediaUrls ?? [],
    audioAsVoice: parsed.audioAsVoice === true,
    replyTo: parsed.replyToId ?? (parsed.replyToCurrent ? "current" : null),
    embeds: [],
    rejectedMedia: 0,
  };
}

function checkMediaUrl(input) {
  let url;
  try {
    url = new URL(input.url);
  } catch {
    return { allowed: false, reason: "Invalid URL: must be http or https" };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return { allowed: false, reason: "Invalid URL: must be http or https" };
  }
  try {
    assertHostnameAllowedWithPolicy(url.hostname, undefined);
  } catch (err) {
    return { allowed: false, reason: err instanceof Error ? err.message : String(err) };
  }
  return { allowed: true, reason: "allowed before DNS (openclaw then checks the resolved addresses)" };
}

serve("openclaw 2026.9.6", {
  coerce_tool_result: coerce,
  parse_reply: parseReply,
  check_media_url: checkMediaUrl,
});
