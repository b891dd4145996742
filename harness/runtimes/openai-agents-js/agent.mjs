// e2e agent for the OpenAI Agents SDK for JavaScript (`@openai/agents@0.20.0`): one `run` of an
// `Agent` with an `MCPServerStdio` (the mock MCP server) and an OpenAI client pointed at the mock
// providers, through `OpenAIChatCompletionsModel` or `OpenAIResponsesModel`.

import { API_KEY, MODEL, importFrom, printReply, turnConfig } from "../lib/agent.mjs";

const config = turnConfig();
const agents = await importFrom(config.dir, "@openai/agents");
const { OpenAI } = await importFrom(config.dir, "openai");

const client = new OpenAI({ baseURL: config.baseUrl, apiKey: API_KEY, maxRetries: 0 });
const models = {
  "openai-chat": () => new agents.OpenAIChatCompletionsModel(client, MODEL),
  "openai-responses": () => new agents.OpenAIResponsesModel(client, MODEL),
};
if (!models[config.api]) throw new Error(`unknown api ${config.api}`);

const server = new agents.MCPServerStdio({
  name: "normfuzz",
  command: config.mcp.command,
  args: config.mcp.args,
});
await server.connect();
try {
  const agent = new agents.Agent({
    name: "normfuzz",
    instructions: "Use the tools you are given.",
    model: models[config.api](),
    mcpServers: [server],
  });
  // The tool call, then the reply; a third model call would be the runtime's own retry.
  const result = await agents.run(agent, config.prompt, { maxTurns: 3 });
  printReply(result.finalOutput);
} finally {
  await server.close();
}
