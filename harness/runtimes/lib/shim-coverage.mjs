// The SUT protocol's coverage extension (docs/spec/sut-protocol.md, "Coverage"), for Node shims.
//
// normfuzz names what to measure in NORMFUZZ_COVERAGE (or the shim in `Coverage.fromEnv`'s
// argument, when the variable is unset): one scope per line (or comma),
// `<file glob>` or `<file glob>:<function name>`, the glob matched against the end of a script's
// path (`dist/mcp-content-*.mjs:projectMcpCallToolResult`; a `Class.method` name matches V8's
// `method`). Without it nothing is measured and the handshake offers nothing.
//
// V8's precise coverage with block granularity (`node:inspector`, in process): importing this
// module starts it, before the runtime's code is compiled. Each take reports the functions that
// ran since the previous one (and resets the counts), each as nested ranges whose innermost
// count says whether a position ran; the positions that ran accumulate per unit. Call counts
// are on: in binary mode (`callCount: false`) Node 20 and 24 leave out of a take a function
// that ran again after an earlier take, so a block first reached then is never reported. A line is
// reached when its first non-blank character ran. A branch is a block range V8 reported inside
// the unit: V8 lists a block only once some take saw it not run, so the branch total grows as the
// run goes (`branchTotal` in the answers) and the handshake sends `branches: null`.

import { readFileSync } from "node:fs";
import path from "node:path";
import { Session } from "node:inspector";
import { fileURLToPath } from "node:url";

const VERSION = 1;
// A take costs about 9 ms in a large bundle (openclaw's: V8 walks every function): takes are
// made after an answer only while they have cost less than this share of the time since the
// start, and always after the last answer of a chunk of requests, so the coverage an answer
// reports may have been reached by an earlier answer of its chunk.
const TAKE_SHARE = 0.1;
let session;

/** `session.post`, which answers synchronously for the in-process session. */
function post(method, params = {}) {
  let error;
  let result;
  session.post(method, params, (err, res) => {
    error = err;
    result = res;
  });
  if (error) throw error;
  return result;
}

// Started at import, before the runtime's code loads: a function that ran before the start
// gets no block ranges, and a script loaded before it is not listed until its functions run.
// `Coverage.fromEnv` stops it when nothing is named.
session = new Session();
session.connect();
post("Profiler.enable");
post("Profiler.startPreciseCoverage", { callCount: true, detailed: true });

function stop() {
  post("Profiler.stopPreciseCoverage");
  post("Profiler.disable");
  session.disconnect();
}

/** A glob (`*` within a path segment) as a RegExp matched against the end of a path. */
function globTail(glob) {
  const body = glob.replace(/^\/+/, "").split("*").map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`(^|/)${body.join("[^/]*")}$`);
}

/** [start, end, count] segments, disjoint and sorted, from a take's properly nested ranges. */
function flatten(ranges) {
  const sorted = [...ranges].sort((a, b) => a.startOffset - b.startOffset || b.endOffset - a.endOffset);
  const out = [];
  const stack = [];
  let at = -1;
  const emitTo = (end) => {
    while (stack.length && at < end) {
      const top = stack[stack.length - 1];
      const stop = Math.min(end, top.endOffset);
      if (stop > at) out.push([at, stop, top.count]);
      at = stop;
      if (at >= top.endOffset) stack.pop();
    }
    at = Math.max(at, end);
  };
  for (const range of sorted) {
    emitTo(range.startOffset);
    stack.push(range);
    at = range.startOffset;
  }
  emitTo(Infinity);
  return out;
}

class Unit {
  constructor(name, file, source, start, end) {
    Object.assign(this, { name, file, start, end });
    // Line number -> offset of its first non-blank character, for the unit's non-blank lines.
    this.lines = new Map();
    let offset = 0;
    source.split("\n").forEach((text, i) => {
      const lineEnd = offset + text.length;
      const first = offset + text.search(/\S/);
      if (text.trim() && lineEnd > start && first < end) this.lines.set(i + 1, Math.max(first, start));
      offset = lineEnd + 1;
    });
    this.ran = []; // disjoint [start, end) intervals that ran, sorted
    this.seenLines = new Set();
    this.blocks = new Set(); // "start-end" of every block range seen
    this.seenBlocks = new Set();
    this.newLines = [];
    this.newBlocks = [];
    this.grew = false;
  }

  hasRun(offset) {
    return this.ran.some(([s, e]) => s <= offset && offset < e);
  }

  /** Folds one take's ranges of this unit in; what it newly reached waits for `drain`. */
  fold(ranges) {
    for (const r of ranges) {
      const id = `${r.startOffset}-${r.endOffset}`;
      if (r.startOffset > this.start && !this.blocks.has(id) && !r.isFunction) {
        this.blocks.add(id);
        this.grew = true;
      }
    }
    for (const [s, e, count] of flatten(ranges)) {
      if (count > 0) this.ran.push([Math.max(s, this.start), Math.min(e, this.end)]);
    }
    this.ran.sort((a, b) => a[0] - b[0]);
    this.ran = this.ran.reduce((merged, [s, e]) => {
      const last = merged[merged.length - 1];
      if (last && s <= last[1]) last[1] = Math.max(last[1], e);
      else merged.push([s, e]);
      return merged;
    }, []);
    for (const [line, offset] of this.lines) {
      if (!this.seenLines.has(line) && this.hasRun(offset)) {
        this.seenLines.add(line);
        this.newLines.push(line);
      }
    }
    for (const id of this.blocks) {
      if (!this.seenBlocks.has(id) && this.hasRun(Number(id.split("-")[0]))) {
        this.seenBlocks.add(id);
        this.newBlocks.push(id);
      }
    }
  }

  /** What was newly reached since the last drain, as an answer's entry; null if nothing. */
  drain() {
    if (!this.newLines.length && !this.newBlocks.length && !this.grew) return null;
    const entry = { lines: this.newLines, branches: this.newBlocks };
    if (this.grew) entry.branchTotal = this.blocks.size;
    this.newLines = [];
    this.newBlocks = [];
    this.grew = false;
    return entry;
  }
}

export class Coverage {
  /**
   * The units NORMFUZZ_COVERAGE (else `fallback`, a shim's own scopes) names among the scripts
   * loaded by now, or null when neither names any.
   */
  static fromEnv(fallback = "") {
    const spec = process.env.NORMFUZZ_COVERAGE?.trim() ? process.env.NORMFUZZ_COVERAGE : fallback;
    if (!spec.trim()) {
      stop();
      return null;
    }
    const scopes = spec
      .split(/[\n,]/)
      .map((s) => s.trim())
      .filter(Boolean)
      .map((s) => {
        const colon = s.lastIndexOf(":");
        return colon > 0 ? [globTail(s.slice(0, colon)), s.slice(colon + 1)] : [globTail(s), null];
      });
    const units = [];
    // The first take: what ran while the runtime loaded (a file's top level) counts too.
    const scripts = post("Profiler.takePreciseCoverage").result;
    for (const script of scripts) {
      if (!script.url.startsWith("file:")) continue;
      const file = fileURLToPath(script.url);
      for (const [glob, fn] of scopes) {
        if (!glob.test(file)) continue;
        const source = readFileSync(file, "utf8");
        const wanted = fn?.split(".").pop();
        for (const f of script.functions) {
          if (fn ? f.functionName !== wanted : f.ranges[0].startOffset !== 0) continue;
          const [{ startOffset, endOffset }] = f.ranges;
          units.push(new Unit(`${path.basename(file)}:${fn ?? "(file)"}`, file, source, startOffset, endOffset));
        }
      }
    }
    if (!units.length) {
      process.stderr.write(`NORMFUZZ_COVERAGE names nothing loaded: ${JSON.stringify(spec)}\n`);
      stop();
      return null;
    }
    const coverage = new Coverage(units);
    coverage.fold(scripts);
    return coverage;
  }

  constructor(units) {
    this.units = units;
    this.started = performance.now();
    this.takeMs = 0;
  }

  offer() {
    return {
      version: VERSION,
      units: this.units.map((u) => ({ name: u.name, file: u.file, lines: [...u.lines.keys()], branches: null })),
    };
  }

  /**
   * What the code run since the last take newly reached, per unit index; null if nothing, or
   * when taking now would pass `TAKE_SHARE` of the time and `last` (the chunk's last answer)
   * is not set.
   */
  take(last = true) {
    const now = performance.now();
    if (!last && this.takeMs > TAKE_SHARE * (now - this.started)) return null;
    this.fold(post("Profiler.takePreciseCoverage").result);
    this.takeMs += performance.now() - now;
    const found = {};
    this.units.forEach((unit, i) => {
      const entry = unit.drain();
      if (entry) found[i] = entry;
    });
    return Object.keys(found).length ? found : null;
  }

  /** Folds a take's ranges into each unit they fall in. */
  fold(scripts) {
    for (const unit of this.units) {
      const ranges = [];
      for (const script of scripts) {
        if (!script.url.startsWith("file:") || fileURLToPath(script.url) !== unit.file) continue;
        for (const f of script.functions) {
          f.ranges.forEach((r, k) => {
            if (r.startOffset >= unit.start && r.endOffset <= unit.end) ranges.push({ ...r, isFunction: k === 0 });
          });
        }
      }
      if (ranges.length) unit.fold(ranges);
    }
  }
}
