// The MCP servers in the page: a login link for a server that asks for one (sidebar), and
// the composer's suggestions — the servers' prompts as /commands, their resources as @mentions.

import { button, el } from "./dom.js";

let state = { servers: [], commands: [], mentions: [] };
const links = new Map(); // server → its login page, while the person logs in
const POLL_MS = 2000;
const redraws = []; // the suggestion lists, drawn again when the servers' offer changes

/** Fetch what the servers offer the session `id` (null: a new session). */
export async function refreshMcp(api, id, panel) {
  try {
    state = await api(`/api/mcp${id ? `?session=${encodeURIComponent(id)}` : ""}`);
  } catch {
    return;
  }
  for (const redraw of redraws) redraw();
  const waiting = state.servers.filter((server) => server.auth === "login-required");
  for (const name of links.keys()) {
    if (!waiting.some((server) => server.name === name)) links.delete(name);
  }
  panel.replaceChildren(...waiting.map((server) => loginItem(api, id, panel, server.name)));
  if (links.size) setTimeout(() => refreshMcp(api, id, panel), POLL_MS); // until it is done
}

function loginItem(api, id, panel, name) {
  const item = el("li", "mcp-login");
  item.append(el("span", null, `${name}: login required `));
  const url = links.get(name);
  if (url) {
    const link = el("a", "mcp-login-link", `Open the login page of ${name}`);
    link.href = url;
    link.target = "_blank";
    link.rel = "noopener";
    item.append(link);
  } else {
    item.append(button(`Log in to ${name}`, () => login(api, id, panel, name, item)));
  }
  return item;
}

async function login(api, id, panel, name, item) {
  try {
    const started = await api(`/api/mcp/${encodeURIComponent(name)}/login`, {});
    if (!started.url) {
      item.replaceChildren(el("span", null, started.message));
      return;
    }
    links.set(name, started.url);
    await refreshMcp(api, id, panel);
  } catch (error) {
    item.replaceChildren(el("span", "mcp-error", error.message));
  }
}

/** The suggestions for the text before the caret: [{text, meta}]. */
function suggestions(before) {
  const word = before.match(/(?:^|\s)(@\S*)$/)?.[1];
  if (word) {
    return state.mentions
      .filter((m) => m.text.startsWith(word))
      .map((m) => ({ text: m.text, meta: m.description, replace: word.length }));
  }
  if (before.startsWith("/") && !/\s/.test(before)) {
    return state.commands
      .filter((c) => `/${c.name}`.startsWith(before))
      .map((c) => ({ text: `/${c.name} `, meta: `${c.usage} — ${c.description}`, replace: before.length }));
  }
  return [];
}

/** Keep the list under the message box in step with what is typed; a click or Tab picks. */
export function suggestInto(box, list) {
  const pick = (choice) => {
    const caret = box.selectionStart;
    const start = caret - choice.replace;
    box.value = box.value.slice(0, start) + choice.text + box.value.slice(caret);
    box.selectionStart = box.selectionEnd = start + choice.text.length;
    list.replaceChildren();
    box.focus();
  };
  const draw = () => {
    if (document.activeElement !== box) return;
    const found = suggestions(box.value.slice(0, box.selectionStart)).slice(0, 8);
    list.replaceChildren(...found.map((choice) => {
      const item = el("li", "suggestion");
      item.append(el("code", null, choice.text.trim()), el("span", "meta", choice.meta));
      item.addEventListener("mousedown", (event) => { event.preventDefault(); pick(choice); });
      return item;
    }));
    list.choices = found;
  };
  box.addEventListener("input", draw);
  redraws.push(draw);
  box.addEventListener("keydown", (event) => {
    if (event.key === "Tab" && list.choices?.length) {
      event.preventDefault();
      pick(list.choices[0]);
    } else if (event.key === "Escape") {
      list.replaceChildren();
    }
  });
  box.addEventListener("blur", () => list.replaceChildren());
}
