// e2e agent for the Vercel AI SDK (`ai@7.0.173`, `@ai-sdk/mcp@2.0.99`): one `generateText` turn
// with the MCP client's tools (`createMCPClient` over `Experimental_StdioMCPTransport`, the mock
// MCP server) and a model client pointed at the mock providers. The tool result reaches the model
// through `mcpToModelOutput` (the tools' `toModelOutput`), then the provider package's converter
// (`convertToOpenAIChatMessages`, `convertToOpenAIResponsesInput`,
// `convertToAnthropicMessagesPrompt`, `convertToGoogleGenerativeAIMessages`,
// `convertToAmazonBedrockChatMessages`, `convertToOllamaChatMessages`). Bedrock authenticates with
// an API key (a bearer token, so no SigV4 credentials are looked up); `generateText` takes the
// non-streaming endpoints (`/converse`, `/api/chat` with `stream: false`).
//
// Fallback cases (`e2e --scenario fallback`, issue 26): the AI SDK has no model fallback of its
// own; its users take the community wrapper `ai-fallback` (`createFallback({ models })`,
// ai-fallback@3.0.0, LanguageModelV4), with its default `shouldRetryThisError`. The user's image
// is an image part of the user message.

import { API_KEY, MODEL, importFrom, printReply, turnConfig } from "../lib/agent.mjs";

const config = turnConfig();
const { generateText, streamText, stepCountIs } = await importFrom(config.dir, "ai");
const { createMCPClient } = await importFrom(config.dir, "@ai-sdk/mcp");
const { Experimental_StdioMCPTransport } = await importFrom(config.dir, "@ai-sdk/mcp/mcp-stdio");

async function model(api, baseURL, name = MODEL) {
  const options = { baseURL, apiKey: API_KEY };
  switch (api) {
    case "openai-chat":
      return (await importFrom(config.dir, "@ai-sdk/openai")).createOpenAI(options).chat(name);
    case "openai-responses":
      return (await importFrom(config.dir, "@ai-sdk/openai")).createOpenAI(options).responses(name);
    case "anthropic":
      return (await importFrom(config.dir, "@ai-sdk/anthropic")).createAnthropic(options)(name);
    case "gemini":
      return (await importFrom(config.dir, "@ai-sdk/google")).createGoogleGenerativeAI(options)(name);
    case "bedrock":
      return (await importFrom(config.dir, "@ai-sdk/amazon-bedrock")).createAmazonBedrock(options)(name);
    case "ollama":
      return (await importFrom(config.dir, "ollama-ai-provider-v2")).createOllama({ baseURL })(name);
    default:
      throw new Error(`unknown api ${api}`);
  }
}

const client = await createMCPClient({
  transport: new Experimental_StdioMCPTransport({ command: config.mcp.command, args: config.mcp.args }),
});
try {
  let chosen = await model(config.api, config.baseUrl, config.model ?? MODEL);
  if (config.fallback) {
    const { createFallback } = await importFrom(config.dir, "ai-fallback");
    const fb = config.fallback;
    chosen = createFallback({ models: [chosen, await model(fb.api, fb.baseUrl, fb.model)] });
  }
  const image = config.userImage;
  const input = image
    ? {
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: config.prompt },
              { type: "image", image: image.data, mediaType: image.mediaType },
            ],
          },
        ],
      }
    : { prompt: config.prompt };
  const options = {
    model: chosen,
    tools: await client.tools(),
    ...input,
    // The tool call, then the reply; a third step would be the runtime's own retry (a fallback
    // case: the fallback's own tool call comes first).
    stopWhen: stepCountIs(config.fallback ? 4 : 3),
    maxRetries: 0,
  };
  if (config.stream) {
    // A mid-stream failure case: `streamText` streams each step; an error part is rethrown so
    // the turn fails as `generateText`'s would.
    let failure;
    const result = streamText({ ...options, onError: ({ error }) => (failure ??= error) });
    const text = await result.text;
    if (failure) throw failure;
    printReply(text);
  } else {
    printReply((await generateText(options)).text);
  }
} finally {
  await client.close();
}
