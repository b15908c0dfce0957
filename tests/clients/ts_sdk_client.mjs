// The TypeScript SDK's own client against one MCP endpoint, as a Node client would use it:
// Streamable HTTP, the API key in a header. Lists tools, resources and prompts, calls a
// tool, reads a resource and gets a prompt (each named in argv), and prints one JSON
// object of what it saw for the Python test to check.
// Usage: node ts_sdk_client.mjs <url> <tool> <arguments JSON> <resource uri> <prompt> <arguments JSON>
// The key comes from WORKBENCH_KEY (never on a command line).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, tool, toolArguments, uri, prompt, promptArguments] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${process.env.WORKBENCH_KEY}` } },
});
const client = new Client({ name: "workbench-ts-test", version: "0" });
await client.connect(transport);
const seen = {
  protocolVersion: transport.protocolVersion,
  server: client.getServerVersion(),
  instructions: client.getInstructions(),
  tools: (await client.listTools()).tools,
  resources: (await client.listResources()).resources.map((resource) => resource.uri),
  prompts: (await client.listPrompts()).prompts.map((one) => one.name),
  called: await client.callTool({ name: tool, arguments: JSON.parse(toolArguments) }),
  read: await client.readResource({ uri }),
  prompt: await client.getPrompt({ name: prompt, arguments: JSON.parse(promptArguments) }),
};
await client.close();
process.stdout.write(JSON.stringify(seen));
