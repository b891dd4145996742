// Captures one real MCP server's tool results for corpus/real-servers/ (`cargo xtask
// capture-servers` runs it once per server of servers.toml, with the packages it installed).
//
//   node capture.mjs SPEC_JSON
//
// SPEC_JSON: {"server", "version", "sdk": the SDK's package folder, "command": the server's argv
// (`${fixture}` is replaced by the fixture folder made here)}. Prints one JSON line per call:
// {"server", "version", "tool", "arguments", "result"}.
//
// The official client (`@modelcontextprotocol/sdk` Client) runs the session: handshake,
// tools/list, each call, and the server's own requests (roots, sampling, elicitation). `result`
// is the JSON-RPC result as the server wrote it: the transport below keeps every line it reads
// before the SDK validates it, so what the SDK would drop or reject is still recorded. Every tool
// the server lists must be called, or the capture fails.
//
// Values that change per run are replaced (and only those), so a re-capture diffs cleanly:
// the fixture's path by /capture/fixture, the loopback page server's port by 8000, the date of
// an ISO time by 2026-01-01 (its time of day too when it is the clock's: within an hour of now)
// and a weekday by Thursday, JavaScript's date strings by 2026-01-01's, a local time of day
// ("7:45:07 PM") by 12:00:00 AM, task ids by zeros; in text and in base64 blobs of text
// (`stable` below). corpus/README.md lists them.

import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { mkdtempSync, writeFileSync, rmSync, mkdirSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const spec = JSON.parse(process.argv[2]);
const sdk = (path) => import(pathToFileURL(join(spec.sdk, "dist/esm", path)).href);
const { Client } = await sdk("client/index.js");
const types = await sdk("types.js");

const FIXTURE_NAME = "/capture/fixture";
const PAGE_PORT = "8000";
const fixture = mkdtempSync(join(tmpdir(), "normfuzz-capture-"));

/** The SDK's Transport over the server's stdio, keeping each response as read. */
class RawStdio {
  constructor(argv) {
    this.argv = argv;
    this.responses = new Map();
    this.methods = new Map();
  }
  async start() {
    // A fixed environment: get-env prints it, and nothing of this machine's should reach the
    // corpus (nor a proxy setting reach the fetch server).
    this.child = spawn(this.argv[0], this.argv.slice(1), {
      stdio: ["pipe", "pipe", "inherit"],
      env: { HOME: fixture, LANG: "C.UTF-8", TZ: "UTC" },
    });
    this.child.on("exit", (code, signal) => {
      if (!this.closing) this.onerror?.(new Error(`server exited (${code ?? signal})`));
      this.onclose?.();
    });
    let buffer = "";
    this.child.stdout.setEncoding("utf8");
    this.child.stdout.on("data", (chunk) => {
      buffer += chunk;
      let end;
      while ((end = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + 1);
        if (!line.trim()) continue;
        let message;
        try {
          message = JSON.parse(line);
        } catch {
          process.stderr.write(`not JSON from the server: ${line.slice(0, 200)}\n`);
          continue;
        }
        if (message.id !== undefined && !("method" in message)) {
          this.responses.set(message.id, JSON.parse(line));
        }
        this.onmessage?.(message);
      }
    });
  }
  async send(message) {
    if (message.method !== undefined && message.id !== undefined) {
      this.methods.set(message.id, message.method);
    }
    this.child.stdin.write(JSON.stringify(message) + "\n");
  }
  async close() {
    this.closing = true;
    this.child.kill();
  }
  /** The raw response to the last request of `method` sent. */
  last(method) {
    const ids = [...this.methods].filter(([, m]) => m === method).map(([id]) => id);
    return this.responses.get(ids.at(-1));
  }
}

/** Replaces what changes per run; see the header. */
function stable(value) {
  return JSON.parse(stableText(JSON.stringify(stableBlobs(value))));
}

/** The replacements of `stable` inside each base64 `blob` that is UTF-8 text. */
function stableBlobs(value) {
  if (Array.isArray(value)) return value.map(stableBlobs);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, v]) => {
      if (key === "blob" && typeof v === "string") {
        const text = Buffer.from(v, "base64").toString("utf8");
        if (Buffer.from(text, "utf8").toString("base64") === v) {
          return [key, Buffer.from(stableText(text), "utf8").toString("base64")];
        }
      }
      return [key, stableBlobs(v)];
    }),
  );
}

function stableText(text) {
  text = text.split(fixture).join(FIXTURE_NAME);
  text = text.replace(/127\.0\.0\.1:\d+/g, `127.0.0.1:${PAGE_PORT}`);
  // ISO times: an instant within an hour of now is the clock's (get_current_time, a task's
  // createdAt): all of it goes; any other keeps its time of day (convert_time's 16:30) and only
  // the date, today's, goes.
  text = text.replace(/(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)?/g, (m, _d, time, frac, zone) => {
    const clock = Math.abs(Date.parse(zone ? m : m + "Z") - Date.now()) < 3_600_000;
    const fixed = frac ? "." + "0".repeat(frac.length - 1) : "";
    return `2026-01-01T${clock ? "00:00:00" + fixed : time + (frac ?? "")}${zone ?? ""}`;
  });
  text = text.replace(/(day_of_week\\?": ?\\?")\w+/g, "$1Thursday");
  // A task's random id (a task-only tool called without a task answers with its task).
  text = text.replace(/("taskId":")[0-9a-f]+"/g, (_, key) => key + "0".repeat(32) + '"');
  // Dates as JavaScript prints them (get_file_info's times), and the clock's local time
  // (everything's dynamic resources are "created at 7:45:07 PM").
  text = text.replace(
    /\w{3} \w{3} \d\d \d{4} \d\d:\d\d:\d\d GMT[+-]\d{4} \([^)]*\)/g,
    "Thu Jan 01 2026 00:00:00 GMT+0000 (Coordinated Universal Time)",
  );
  text = text.replace(/\b\d{1,2}:\d\d:\d\d [AP]M\b/g, "12:00:00 AM");
  return text;
}

const client = new Client(
  { name: "normfuzz-capture", version: "1" },
  {
    capabilities: {
      roots: { listChanged: true },
      sampling: {},
      elicitation: { form: {}, url: {} },
    },
  },
);
client.setRequestHandler(types.ListRootsRequestSchema, () => ({
  roots: [{ uri: `file://${fixture}`, name: "fixture" }],
}));
client.setRequestHandler(types.CreateMessageRequestSchema, () => ({
  model: "normfuzz-capture",
  role: "assistant",
  content: { type: "text", text: "A sampled answer." },
  stopReason: "endTurn",
}));
// Accepts a form with two fields, declines anything else (a URL elicitation).
client.setRequestHandler(types.ElicitRequestSchema, (request) =>
  request.params.mode === "url"
    ? { action: "decline" }
    : { action: "accept", content: { name: "Ada Lovelace", check: true } },
);

const transport = new RawStdio(
  spec.command.map((word) => word.replaceAll("${fixture}", fixture)).map((word, i) =>
    i === 0 && word === "node" ? process.execPath : word,
  ),
);
const called = new Set();
let lines = 0;

function record(tool, args, raw) {
  if (raw === undefined) throw new Error(`${tool}: no response read`);
  if (raw.error !== undefined) {
    // A JSON-RPC error is no CallToolResult: nothing for the corpus, but said.
    process.stderr.write(`${spec.server} ${tool}: JSON-RPC error ${JSON.stringify(raw.error)}\n`);
    return;
  }
  const line = { server: spec.server, version: spec.version, tool, arguments: args, result: raw.result };
  process.stdout.write(JSON.stringify(stable(line)) + "\n");
  lines += 1;
}

/** Calls `tool` through the client and records the raw result, whatever the SDK made of it. */
async function call(tool, args) {
  called.add(tool);
  try {
    await client.callTool({ name: tool, arguments: args }, undefined, { timeout: 60_000 });
  } catch (err) {
    process.stderr.write(`${spec.server} ${tool}: the client said: ${err.message}\n`);
  }
  record(tool, args, transport.last("tools/call"));
}

/** A tool that runs only as a task: created, polled and read through the client's task API. */
async function callTask(tool, args) {
  called.add(tool);
  for await (const message of client.experimental.tasks.callToolStream({ name: tool, arguments: args })) {
    if (message.type === "error") {
      process.stderr.write(`${spec.server} ${tool}: the client said: ${message.error.message}\n`);
    }
  }
  record(tool, args, transport.last("tasks/result"));
}

const PNG_1X1 =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

/** A 8 kHz mono 16-bit WAV of `samples` silent samples. */
function wav(samples) {
  const data = samples * 2;
  const b = Buffer.alloc(44 + data);
  b.write("RIFF", 0);
  b.writeUInt32LE(36 + data, 4);
  b.write("WAVEfmt ", 8);
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20);
  b.writeUInt16LE(1, 22);
  b.writeUInt32LE(8000, 24);
  b.writeUInt32LE(16000, 28);
  b.writeUInt16LE(2, 32);
  b.writeUInt16LE(16, 34);
  b.write("data", 36);
  b.writeUInt32LE(data, 40);
  return b;
}

/** The fixture (the filesystem server's folder, every server's HOME): a text file, a PNG, a JSON file, a WAV, a PDF, a subfolder. */
function makeFixture() {
  const files = {
    "notes.txt": "first line\nMEDIA: ./pixel.png\nthird line\n",
    "data.json": JSON.stringify({ name: "fixture", values: [1, 2, 3], nested: { ok: true } }, null, 2),
    "pixel.png": Buffer.from(PNG_1X1, "base64"),
    "tone.wav": wav(8),
    "doc.pdf": "%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n",
    "sub/inner.md": "# Inner\n\nA nested file.\n",
  };
  mkdirSync(join(fixture, "sub"));
  const fixed = new Date("2026-01-01T00:00:00Z");
  for (const [name, body] of Object.entries(files)) {
    writeFileSync(join(fixture, name), body);
    utimesSync(join(fixture, name), fixed, fixed);
  }
}

const f = (name) => join(fixture, name);
const plans = {
  async "server-everything"() {
    await call("echo", { message: "Hello from normfuzz" });
    await call("echo", { message: "line one\nMEDIA: /etc/passwd\n[[audio_as_voice]]" });
    await call("echo", {});
    for (const messageType of ["error", "success", "debug"]) {
      await call("get-annotated-message", { messageType, includeImage: messageType === "success" });
    }
    await call("get-env", {});
    await call("get-resource-links", { count: 4 });
    await call("get-resource-links", { count: 11 });
    await call("get-resource-reference", { resourceType: "Text", resourceId: 1 });
    await call("get-resource-reference", { resourceType: "Blob", resourceId: 2 });
    await call("get-resource-reference", { resourceType: "text", resourceId: 1 });
    for (const location of ["New York", "Chicago", "Los Angeles"]) {
      await call("get-structured-content", { location });
    }
    await call("get-structured-content", { location: "Paris" });
    await call("get-sum", { a: 2, b: 3.5 });
    await call("get-sum", { a: "2", b: 3 });
    await call("get-tiny-image", {});
    const gz = Buffer.from("hello, normfuzz\n".repeat(8)).toString("base64");
    await call("gzip-file-as-resource", { name: "hello.txt.gz", data: `data:text/plain;base64,${gz}` });
    await call("gzip-file-as-resource", {
      name: "hello-inline.txt.gz",
      data: `data:text/plain;base64,${gz}`,
      outputType: "resource",
    });
    // Refused before any fetch: not http, https or data.
    await call("gzip-file-as-resource", { name: "x.gz", data: "ftp://127.0.0.1/x" });
    await call("toggle-simulated-logging", {});
    await call("toggle-simulated-logging", {});
    await call("toggle-subscriber-updates", {});
    await call("toggle-subscriber-updates", {});
    await call("trigger-long-running-operation", { duration: 1, steps: 2 });
    await call("get-roots-list", {});
    await call("trigger-elicitation-request", {});
    await call("trigger-url-elicitation", { url: "https://example.com/consent", elicitationId: "e-1" });
    await call("trigger-url-elicitation", {
      url: "https://example.com/consent",
      elicitationId: "e-2",
      errorPath: true,
    });
    await call("trigger-sampling-request", { prompt: "Say hello", maxTokens: 20 });
    await callTask("simulate-research-query", { topic: "MCP tool results", ambiguous: false });
    await call("simulate-research-query", { topic: "called without a task" });
  },
  async "server-filesystem"() {
    await call("list_allowed_directories", {});
    await call("read_text_file", { path: f("notes.txt") });
    await call("read_text_file", { path: f("notes.txt"), head: 1 });
    await call("read_text_file", { path: f("data.json"), tail: 2 });
    await call("read_text_file", { path: "/etc/hostname" });
    await call("read_text_file", { path: f("missing.txt") });
    await call("read_file", { path: f("data.json") });
    await call("read_media_file", { path: f("pixel.png") });
    await call("read_media_file", { path: f("tone.wav") });
    await call("read_media_file", { path: f("doc.pdf") });
    await call("read_multiple_files", { paths: [f("notes.txt"), f("data.json"), f("missing.txt")] });
    await call("write_file", { path: f("written.txt"), content: "written by the capture\n" });
    await call("edit_file", {
      path: f("written.txt"),
      edits: [{ oldText: "written", newText: "edited" }],
      dryRun: true,
    });
    await call("edit_file", { path: f("written.txt"), edits: [{ oldText: "edited", newText: "x" }] });
    await call("edit_file", { path: f("written.txt"), edits: [{ oldText: "written", newText: "edited" }] });
    await call("create_directory", { path: f("made/deeper") });
    await call("list_directory", { path: fixture });
    await call("list_directory_with_sizes", { path: fixture, sortBy: "size" });
    await call("directory_tree", { path: fixture });
    await call("directory_tree", { path: fixture, excludePatterns: ["*.png", "made"] });
    await call("move_file", { source: f("written.txt"), destination: f("sub/moved.txt") });
    await call("move_file", { source: f("missing.txt"), destination: f("nowhere.txt") });
    await call("search_files", { path: fixture, pattern: "**/*.md" });
    await call("search_files", { path: fixture, pattern: "nothing-matches" });
    await call("get_file_info", { path: f("pixel.png") });
    await call("list_directory", { path: "/" });
  },
  async "mcp-server-time"() {
    await call("get_current_time", { timezone: "UTC" });
    await call("get_current_time", { timezone: "Asia/Kathmandu" });
    await call("get_current_time", { timezone: "Mars/Olympus_Mons" });
    await call("convert_time", { source_timezone: "America/New_York", time: "16:30", target_timezone: "Asia/Tokyo" });
    await call("convert_time", { source_timezone: "Europe/London", time: "09:05", target_timezone: "Australia/Lord_Howe" });
    await call("convert_time", { source_timezone: "UTC", time: "25:99", target_timezone: "UTC" });
  },
  async "mcp-server-fetch"() {
    // The only pages fetched: this loopback server's.
    const pages = {
      "/robots.txt": ["text/plain", "User-agent: *\nDisallow: /private\n"],
      "/article": [
        "text/html",
        "<html><head><title>Article</title></head><body><article><h1>Real server page</h1>" +
          "<p>First paragraph with a <a href=\"/next\">link</a>.</p>" +
          "<p>MEDIA: /etc/passwd</p><img src=\"/pixel.png\" alt=\"pixel\"></article></body></html>",
      ],
      "/data.json": ["application/json", "{\"items\":[1,2,3],\"ok\":true}"],
      "/long.txt": ["text/plain", "0123456789\n".repeat(600)],
    };
    const http = createServer((req, res) => {
      const page = pages[req.url];
      if (!page) {
        res.writeHead(404, { "content-type": "text/plain" }).end("not found");
        return;
      }
      res.writeHead(200, { "content-type": page[0] }).end(page[1]);
    });
    await new Promise((ok) => http.listen(0, "127.0.0.1", ok));
    const base = `http://127.0.0.1:${http.address().port}`;
    try {
      await call("fetch", { url: `${base}/article` });
      await call("fetch", { url: `${base}/article`, raw: true });
      await call("fetch", { url: `${base}/data.json` });
      await call("fetch", { url: `${base}/long.txt`, max_length: 1000 });
      await call("fetch", { url: `${base}/long.txt`, max_length: 1000, start_index: 6000 });
      await call("fetch", { url: `${base}/missing` });
      await call("fetch", { url: `${base}/private/page` });
      await call("fetch", { url: "not a url" });
    } finally {
      http.close();
    }
  },
};

try {
  const plan = plans[spec.server];
  if (!plan) throw new Error(`no call plan for ${spec.server}; known: ${Object.keys(plans).join(", ")}`);
  makeFixture();
  await client.connect(transport);
  const { tools } = await client.listTools();
  await plan();
  const missed = tools.map((t) => t.name).filter((name) => !called.has(name));
  if (missed.length > 0) {
    throw new Error(`${spec.server} lists tools the plan does not call: ${missed.join(", ")}`);
  }
  process.stderr.write(`${spec.server}@${spec.version}: ${tools.length} tools, ${lines} results\n`);
} finally {
  await client.close();
  rmSync(fixture, { recursive: true, force: true });
}
