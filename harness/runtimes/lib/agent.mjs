// What every Node e2e agent script (harness/runtimes/<name>/agent.mjs) shares: its arguments,
// the turn's config (written by `normfuzz e2e-turn` from the adapter's `[config]` template) and
// its one line of output, the final reply as JSON for the adapter's `[output]` pointers.
//
// Usage of an agent: node agent.mjs <install dir> <turn config> <prompt>

import { readFileSync } from "node:fs";

export { importFrom } from "./shim.mjs";

/** `{dir, prompt, api, baseUrl, mcp: {command, args}}`; exits 2 on a usage error. */
export function turnConfig() {
  const [dir, configPath, prompt] = process.argv.slice(2);
  if (!dir || !configPath || !prompt) {
    process.stderr.write("usage: node agent.mjs <install dir> <turn config> <prompt>\n");
    process.exit(2);
  }
  return { dir, prompt, ...JSON.parse(readFileSync(configPath, "utf8")) };
}

/** Prints the final reply; an agent that cannot finish throws instead (exit 1, its stderr). */
export function printReply(text) {
  process.stdout.write(`${JSON.stringify({ text })}\n`);
}

/** The model id the mock providers answer to (any id works; one name keeps captures alike). */
export const MODEL = "mock-model";
/** The API key every client sends; the mocks accept any. */
export const API_KEY = "mock-local";
