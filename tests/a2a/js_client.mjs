// The official @a2a-js/sdk client against `dsh a2a`: the card, one message sent.
// node js_client.mjs BASE_URL TOKEN → one JSON line: the card's name and the task.
import { randomUUID } from "node:crypto";

import { Role, TaskState } from "@a2a-js/sdk";
import { ClientFactory } from "@a2a-js/sdk/client";

const [base, token] = process.argv.slice(2);
const client = await new ClientFactory().createFromUrl(base);
const card = await (await fetch(`${base}/.well-known/agent-card.json`)).json();
const message = {
  messageId: randomUUID(),
  role: Role.ROLE_USER,
  parts: [{ content: { $case: "text", value: "Hi from node" } }],
};
const options = { serviceParameters: { authorization: `Bearer ${token}` } };
const task = await client.sendMessage({ message }, options);
const text = (task.artifacts ?? []).flatMap((a) => a.parts.map((p) => p.content?.value ?? ""));
const state = TaskState[task.status?.state] ?? String(task.status?.state);
console.log(JSON.stringify({ card: card.name, version: client.protocolVersion, state, text }));
