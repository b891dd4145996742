// normfuzz shim for {name}: speaks the SUT protocol (docs/spec/sut-protocol.md in normfuzz) on
// stdin/stdout and hands each case to your normalizer. Made by `normfuzz init`; yours to edit.
//
// Fill in the handlers below: each takes the op's input and returns its output (or a Promise).
// A handler left `null` is not offered, so normfuzz does not test that op. Throwing answers an
// `error` (a refusal, compared with the reference); crashing the process is a finding (B1).
// Logs go to stderr: stdout carries protocol lines only.

// Written by `normfuzz init` next to this shim; imported first, before your runtime runs.
import { Coverage } from "./shim-coverage.mjs";

// Your normalizer's files or functions, `<file glob>[:<function>]` (one per line): the report
// shows how much of them the campaign reached, with the lines it never did. Empty: not measured.
const COVERAGE = ""; // e.g. "src/normalize.js:coerceToolResult"

const handlers = {
  // An MCP CallToolResult (any JSON, malformed on purpose) -> what your runtime sends the model:
  // {content: [{type: "text", text} | {type: "image", data, mimeType}], isError}
  coerce_tool_result: null,
  // {text} -> {text}: untrusted text, with every line that reads as a `MEDIA:` directive defused.
  neutralize_text: null,
  // {url} -> {allowed, reason?}: may this URL be fetched or delivered as media?
  check_media_url: null,
  // {text, roots} -> {text, mediaUrls, audioAsVoice, replyTo, embeds, rejectedMedia}
  parse_reply: null,
  // {chunks, final, roots} -> {deliveries: [{text, mediaUrls}]}
  normalize_stream: null,
  // {attempt, previousFailure, primaryProvider, candidateProvider, images} -> {images}
  resolve_retry_images: null,
  // {names} -> {names}
  sanitize_tool_names: null,
};

// An answer longer than this is refused rather than written: normfuzz bounds answer lines
// (64 MiB by default) and a runaway output would be a protocol finding.
const MAX_ANSWER_BYTES = 16 << 20;

const offered = Object.fromEntries(Object.entries(handlers).filter(([, f]) => f));
const coverage = Coverage.fromEnv(COVERAGE);
const handshake = { normfuzz: 1, name: "{name}", ops: Object.keys(offered) };
if (coverage) handshake.coverage = coverage.offer();
process.stdout.write(`${JSON.stringify(handshake)}\n`);

async function answer(line, last) {
  const req = JSON.parse(line);
  let reply;
  try {
    const output = await offered[req.op](req.input);
    const found = coverage?.take(last);
    reply = JSON.stringify({ id: req.id, output, ...(found ? { coverage: found } : {}) });
    if (Buffer.byteLength(reply) > MAX_ANSWER_BYTES) throw new Error("answer too large");
  } catch (err) {
    reply = JSON.stringify({ id: req.id, error: String(err?.message ?? err).slice(0, 2000) });
  }
  return `${reply}\n`;
}

// Lines are split on "\n" only: `readline` also splits at U+2028/U+2029. Chunks are joined
// before decoding, so a character split across two chunks stays whole.
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
  queue = queue.then(async () => {
    for (const [i, line] of lines.entries()) {
      if (line.trim() !== "") process.stdout.write(await answer(line, i === lines.length - 1));
    }
  });
});
process.stdin.on("end", () => queue.then(() => process.stdout.write("", () => process.exit(0))));
