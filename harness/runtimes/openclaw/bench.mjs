// openclaw's own MCP result coercion timed on the benchmark documents (`normfuzz bench-anchor`,
// run by `cargo xtask bench --anchor openclaw` on the runtime's installed Node).
//
// Usage: node bench.mjs <runtime cache> <docs dir> <runs>
// Prints one JSON line per document: {"name", "bytes", "ns"}, ns being the best of <runs> runs
// of the mean time of one parse + projectMcpCallToolResult + stringify.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [cache, docsDir, runsArg] = process.argv.slice(2);
const runs = Number(runsArg ?? 5);

// The bundle names its chunks by content hash and exports minified names: find the chunk by its
// source file's name and the function by its own name.
const dist = join(cache, "app/node_modules/openclaw/dist");
const chunks = readdirSync(dist).filter((f) => /^mcp-content-[\w-]+\.mjs$/.test(f));
let project;
for (const chunk of chunks) {
  const mod = await import(pathToFileURL(join(dist, chunk)).href);
  project ??= Object.values(mod).find(
    (f) => typeof f === "function" && f.name === "projectMcpCallToolResult",
  );
}
if (!project) {
  console.error(`projectMcpCallToolResult not found in ${dist} (chunks: ${chunks.join(", ")})`);
  process.exit(2);
}

const coerce = (text) => JSON.stringify(project(JSON.parse(text)));
const manifest = JSON.parse(readFileSync(join(docsDir, "manifest.json"), "utf8"));
for (const { name, file } of manifest) {
  const text = readFileSync(join(docsDir, file), "utf8");
  if (!coerce(text).startsWith('{"content":[')) {
    console.error(`${name}: unexpected output`);
    process.exit(2);
  }
  // Enough iterations per run for ~50 ms, after a warm-up that lets the JIT settle.
  const warm = process.hrtime.bigint();
  let iters = 0;
  while (process.hrtime.bigint() - warm < 300_000_000n) {
    coerce(text);
    iters++;
  }
  const perRun = Math.max(1, Math.round(iters / 6));
  let best = Infinity;
  for (let r = 0; r < runs; r++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < perRun; i++) coerce(text);
    best = Math.min(best, Number(process.hrtime.bigint() - start) / perRun);
  }
  console.log(JSON.stringify({ name, bytes: Buffer.byteLength(text), ns: best }));
}
