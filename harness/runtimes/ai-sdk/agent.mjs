// e2e agent for the Vercel AI SDK (`ai@7.0.173`, `@ai-sdk/mcp@2.0.99`): one `generateText` turn
// with the MCP client's tools (`createMCPClient` over `Experimental_StdioMCPTransport`, the mock
// MCP server) and a model client pointed at the mock providers. The tool result reaches the model
// through `mcpToModelOutput` (the tools' `toModelOutput`), then the provider package's converter
// (`convertToOpenAIChatMessages`, `convertToOpenAIResponsesInput`,
// `convertToAnthropicMessagesPrompt`, `convertToGoogleGenerativeAIMessages`,
// `convertToAmazonBedrockChatMessages`, `convertToOllamaChatMessages`). Bedrock authenticates with
// an API key (a bearer token, so no SigV4 credentials are looked up); `generateText` takes the
// non-streaming endpoints (`/converse`, `/api/chat` with `stream: false`).

import { API_KEY, MODEL, importFrom, printReply, turnConfig } from "../lib/agent.mjs";

const config = turnConfig();
const { generateText, stepCountIs } = await importFrom(config.dir, "ai");
const { createMCPClient } = await importFrom(config.dir, "@ai-sdk/mcp");
const { Experimental_StdioMCPTransport } = await importFrom(config.dir, "@ai-sdk/mcp/mcp-stdio");

async function model(api, baseURL) {
  const options = { baseURL, apiKey: API_KEY };
  switch (api) {
    case "openai-chat":
      return (await importFrom(config.dir, "@ai-sdk/openai")).createOpenAI(options).chat(MODEL);
    case "openai-responses":
      return (await importFrom(config.dir, "@ai-sdk/openai")).createOpenAI(options).responses(MODEL);
    case "anthropic":
      return (await importFrom(config.dir, "@ai-sdk/anthropic")).createAnthropic(options)(MODEL);
    case "gemini":
      return (await importFrom(config.dir, "@ai-sdk/google")).createGoogleGenerativeAI(options)(MODEL);
    case "bedrock":
      return (await importFrom(config.dir, "@ai-sdk/amazon-bedrock")).createAmazonBedrock(options)(MODEL);
    case "ollama":
      return (await importFrom(config.dir, "ollama-ai-provider-v2")).createOllama({ baseURL })(MODEL);
    default:
      throw new Error(`unknown api ${api}`);
  }
}

const client = await createMCPClient({
  transport: new Experimental_StdioMCPTransport({ command: config.mcp.command, args: config.mcp.args }),
});
try {
  const result = await generateText({
    model: await model(config.api, config.baseUrl),
    tools: await client.tools(),
    prompt: config.prompt,
    // The tool call, then the reply; a third step would be the runtime's own retry.
    stopWhen: stepCountIs(3),
    maxRetries: 0,
  });
  printReply(result.text);
} finally {
  await client.close();
}
