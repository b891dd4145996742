// e2e agent for LangChain.js (`@langchain/mcp-adapters@1.1.4`, `@langchain/core@1.4.0`,
// `@langchain/langgraph@1.7.3`): a LangGraph `createReactAgent` turn with the tools of a
// `MultiServerMCPClient` (stdio, the mock MCP server) and a chat model pointed at the mock
// providers: `ChatOpenAI` (Chat Completions, or the Responses API with `useResponsesApi`),
// `ChatAnthropic` or `ChatOllama` (Ollama's /api/chat; it streams). Every package is loaded
// through `importFrom` (one module format, so the adapters and the models share one
// @langchain/core).
//
// Fallback cases (`e2e --scenario fallback`, issue 26): `primary.withFallbacks([fallback])`, each
// model with the tools bound, as a dynamic `llm` (a function): a `RunnableWithFallbacks` has no
// `bindTools`, so `createReactAgent({ llm: primary.withFallbacks(...) })` throws (its `_bindTools`,
// dist/prebuilt/react_agent_executor.js). The user's image is an `image_url` part.

import { API_KEY, MODEL, importFrom, printReply, turnConfig } from "../lib/agent.mjs";

const config = turnConfig();
const { MultiServerMCPClient } = await importFrom(config.dir, "@langchain/mcp-adapters");
const { createReactAgent } = await importFrom(config.dir, "@langchain/langgraph/prebuilt");

async function model(api, baseURL, name = MODEL) {
  const openai = async (extra) => {
    const { ChatOpenAI } = await importFrom(config.dir, "@langchain/openai");
    return new ChatOpenAI({ model: name, apiKey: API_KEY, maxRetries: 0, configuration: { baseURL }, ...extra });
  };
  switch (api) {
    case "openai-chat":
      return openai({});
    case "openai-responses":
      return openai({ useResponsesApi: true });
    case "anthropic": {
      const { ChatAnthropic } = await importFrom(config.dir, "@langchain/anthropic");
      return new ChatAnthropic({ model: name, apiKey: API_KEY, maxRetries: 0, anthropicApiUrl: baseURL });
    }
    case "ollama": {
      const { ChatOllama } = await importFrom(config.dir, "@langchain/ollama");
      return new ChatOllama({ model: name, baseUrl: baseURL, maxRetries: 0 });
    }
    default:
      throw new Error(`unknown api ${api}`);
  }
}

const client = new MultiServerMCPClient({
  mcpServers: { normfuzz: { transport: "stdio", command: config.mcp.command, args: config.mcp.args } },
});
try {
  const tools = await client.getTools();
  let llm = await model(config.api, config.baseUrl, config.model ?? MODEL);
  if (config.fallback) {
    const fb = config.fallback;
    const [primary, fallback] = [llm, await model(fb.api, fb.baseUrl, fb.model)];
    llm = async () => primary.bindTools(tools).withFallbacks([fallback.bindTools(tools)]);
  }
  const image = config.userImage;
  const content = image
    ? [
        { type: "text", text: config.prompt },
        { type: "image_url", image_url: { url: `data:${image.mediaType};base64,${image.data}` } },
      ]
    : config.prompt;
  const agent = createReactAgent({ llm, tools });
  // Up to four tool calls of the mock model (hostile cases), each a model call and a tool step,
  // then the reply; a fallback case's two failed attempts fit too. As langchain-py's driver.
  const state = { messages: [{ role: "user", content }] };
  let result;
  if (config.stream) {
    // A mid-stream failure case: `streamMode: "messages"` makes each model call stream; the
    // last "values" chunk is the final state.
    const stream = await agent.stream(state, { recursionLimit: 10, streamMode: ["messages", "values"] });
    for await (const [mode, chunk] of stream) {
      if (mode === "values") result = chunk;
    }
  } else {
    result = await agent.invoke(state, { recursionLimit: 10 });
  }
  const last = result.messages.at(-1);
  printReply(typeof last.content === "string" ? last.content : last.text);
} finally {
  await client.close();
}
