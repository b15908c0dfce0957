// The TypeScript SDK's own client, told of a change to the tools on the stream it opens by
// GET after `notifications/initialized` (2025-11-25): lists the tools, waits until that
// stream is open, calls a tool that adds a tool at run time, waits for
// `notifications/tools/list_changed`, lists again, and prints one JSON object of what it
// saw for the Python test to check. The Python test bounds how long this may take.
// Usage: node ts_sdk_list_changed.mjs <url> <tool that adds a tool>
// The key comes from WORKBENCH_KEY (never on a command line).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, adder] = process.argv.slice(2);
let opened;
const streamOpen = new Promise((resolve) => (opened = resolve));
// The transport's own fetch, watched: the GET's answer says the stream is open.
async function watchedFetch(input, init) {
  const response = await fetch(input, init);
  if (init?.method === "GET") {
    opened(response.status);
  }
  return response;
}
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${process.env.WORKBENCH_KEY}` } },
  fetch: watchedFetch,
});
const client = new Client({ name: "workbench-ts-test", version: "0" });
let told;
const changed = new Promise((resolve) => (told = resolve));
client.setNotificationHandler(ToolListChangedNotificationSchema, (notification) =>
  told(notification.method),
);
await client.connect(transport);
const before = (await client.listTools()).tools.map((tool) => tool.name);
const streamStatus = await streamOpen;
const added = await client.callTool({ name: adder, arguments: {} });
const notification = await changed;
const after = (await client.listTools()).tools.map((tool) => tool.name);
await client.close();
process.stdout.write(
  JSON.stringify({
    protocolVersion: transport.protocolVersion,
    listChanged: client.getServerCapabilities()?.tools?.listChanged ?? null,
    streamStatus,
    added,
    notification,
    before,
    after,
  }),
);
