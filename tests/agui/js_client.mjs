// The official @ag-ui/client HttpAgent against dsh web's AG-UI endpoint: one run.
// node js_client.mjs URL TOKEN THREAD TEXT → one JSON line: the event types, the new
// messages, the state after the run.
import { HttpAgent } from "@ag-ui/client";

const [url, token, threadId, text] = process.argv.slice(2);
const agent = new HttpAgent({
  url,
  threadId,
  headers: { authorization: `Bearer ${token}` },
  initialMessages: [{ id: "user-1", role: "user", content: text }],
});
const types = [];
const { newMessages } = await agent.runAgent(
  { runId: "run-1" },
  { onEvent: ({ event }) => { types.push(event.type); } },
);
const messages = newMessages.map((m) => ({ role: m.role, content: m.content ?? null }));
console.log(JSON.stringify({ types, messages, state: agent.state }));
