// What every Node protocol shim of the runtime matrix shares: the SUT protocol loop
// (docs/spec/sut-protocol.md), package loading from the runtime's cache folder, and an in-memory
// MCP server transport so a runtime's own MCP client receives each case as a `tools/call` result.
//
// Lines are split on "\n" only (no `readline`: it also splits at U+2028/U+2029, which requests
// may hold unescaped in a runtime's output and the harness escapes in requests anyway).

import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import path from "node:path";

import { Coverage } from "./shim-coverage.mjs";

export { CaseTransport } from "./case-transport.mjs";

/** Imports `name` as installed under `dir` (an npm prefix with node_modules). */
export async function importFrom(dir, name) {
  const require = createRequire(path.join(dir, "package.json"));
  let resolved;
  try {
    resolved = require.resolve(name);
  } catch {
    // ESM-only packages without a "require" condition: resolve the package folder by hand.
    resolved = path.join(dir, "node_modules", name);
  }
  return import(pathToFileURL(resolved).href);
}

/** The message of anything thrown, bounded (a ZodError can be megabytes long). */
export function errorText(err) {
  const text = err && typeof err === "object" && "message" in err ? `${err.name ?? "Error"}: ${err.message}` : String(err);
  return text.length > 2000 ? `${text.slice(0, 2000)}...` : text;
}

/**
 * Runs the protocol: writes the handshake, then answers each request line in order with
 * `handlers[op](input)` (sync or async). A thrown error becomes an `error` answer. With
 * NORMFUZZ_COVERAGE set the handshake offers the coverage extension and each answer carries the
 * coverage it added (shim-coverage.mjs).
 */
export function serve(name, handlers) {
  const coverage = Coverage.fromEnv();
  const handshake = { normfuzz: 1, name, ops: Object.keys(handlers) };
  if (coverage) handshake.coverage = coverage.offer();
  process.stdout.write(`${JSON.stringify(handshake)}\n`);
  // The pieces of the line being read: joined once at its "\n" (a multi-megabyte request
  // arrives in many chunks), then decoded, so a character split across chunks stays whole.
  let partial = [];
  let queue = Promise.resolve();
  process.stdin.on("data", (chunk) => {
    const lines = [];
    let start = 0;
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      partial.push(chunk.subarray(start, nl));
      lines.push(Buffer.concat(partial).toString("utf8"));
      partial = [];
      start = nl + 1;
    }
    if (start < chunk.length) partial.push(chunk.subarray(start));
    if (lines.length === 0) return;
    queue = queue.then(async () => {
      const out = [];
      for (const [i, line] of lines.entries()) {
        if (line.trim() === "") continue;
        out.push(await answer(line, handlers, coverage, i === lines.length - 1));
      }
      process.stdout.write(out.join(""));
    });
  });
  // Writes to a pipe are asynchronous: exit only once the last answer has been handed over
  // (an MCP client may hold timers that would otherwise keep the process alive).
  process.stdin.on("end", () => queue.then(() => process.stdout.write("", () => process.exit(0))));
}

async function answer(line, handlers, coverage, last) {
  let req;
  try {
    req = JSON.parse(line);
  } catch (err) {
    // Deeper than V8's parser goes (a RangeError): the MCP SDK's transport, which parses with
    // the same JSON.parse, drops such a message too. The id comes first in every request.
    const id = /^\s*\{\s*"id"\s*:\s*(\d+)/.exec(line)?.[1];
    if (!(err instanceof RangeError) || id === undefined) {
      process.stderr.write(`unparsable request: ${errorText(err)}\n`);
      process.exit(3);
    }
    return `{"id":${id},"error":"request nested too deeply to parse"}\n`;
  }
  try {
    const handler = handlers[req.op];
    if (!handler) throw new Error(`op ${req.op} not offered`);
    const output = await handler(req.input);
    return `${JSON.stringify({ id: req.id, output, ...covered(coverage, last) })}\n`;
  } catch (err) {
    return `${JSON.stringify({ id: req.id, error: errorText(err), ...covered(coverage, last) })}\n`;
  }
}

/** `{coverage}` with what was newly reached by the chunk's answers so far, or nothing. */
function covered(coverage, last) {
  const found = coverage?.take(last);
  return found ? { coverage: found } : {};
}

/** True for a JSON object (what a JSON-RPC `result` must be). */
export function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * Throws for a case that is not a JSON object: the MCP transport drops such a `result` (see
 * CaseTransport), so the runtime's tool call never returns and the shim answers an `error`.
 */
export function requireObjectResult(input) {
  if (!isObject(input)) {
    throw new Error("the MCP transport drops a result that is not an object; the call never returns");
  }
}

/** `data:<type>;base64,<data>` → {mimeType, data}, or null for any other URL. */
export function parseDataUrl(url) {
  if (typeof url !== "string" || !url.startsWith("data:")) return null;
  const sep = url.indexOf(";base64,");
  if (sep === -1) return null;
  return { mimeType: url.slice(5, sep), data: url.slice(sep + 8) };
}
