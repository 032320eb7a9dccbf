// The page: the session list, one session's transcript (its event stream), the message box.
// The address says which session is shown (`#session=<id>`); no session means a new one,
// created when the first message is sent.

import { refreshMcp, suggestInto } from "./mcp.js";
import { Transcript } from "./transcript.js";

const $ = (id) => document.getElementById(id);
const enc = encodeURIComponent;
let current = null; // {id, source: EventSource, transcript}
let sessions = [];

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  };
  const response = await fetch(path, init);
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.error || `${response.status} ${response.statusText}`);
  return data;
}

function sessionPath(id, action) {
  return `/api/sessions/${enc(id)}/${action}`;
}

function notify(text) {
  $("status").textContent = text;
}

// -- one session -----------------------------------------------------------------------------

function show(id) {
  current?.source.close();
  current = null;
  $("transcript").replaceChildren();
  if (id) {
    const transcript = new Transcript($("transcript"), { answer, reply, fork, rewind, turnDiff });
    const source = new EventSource(sessionPath(id, "events"));
    current = { id, source, transcript };
    source.onmessage = (message) => transcript.add(JSON.parse(message.data));
    source.addEventListener("progress", (message) => {
      transcript.progress(JSON.parse(message.data));
    });
    source.addEventListener("state", (message) => {
      transcript.live = JSON.parse(message.data).live;
      update();
      loadModels();
    });
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED) notify("disconnected: reload the page");
    };
    transcript.onchange = (event) => {
      update();
      if (event.type === "TurnStartEvent") current.note = "";
      if (event.type === "TurnStartEvent" || event.type === "TurnEndEvent") {
        soon(refreshSessions);
        mcpSoon();
      }
    };
  }
  update();
  drawSessions();
  loadModels();
}

// -- the model pickers -----------------------------------------------------------------------

function fill(select, values, chosen) {
  select.replaceChildren(...values.map((value) => {
    const option = document.createElement("option");
    option.value = option.textContent = value;
    option.selected = value === chosen;
    return option;
  }));
}

async function loadModels() {
  const shown = current;
  $("pickers").hidden = true;
  if (!shown?.transcript.live) return;
  try {
    const state = await api(sessionPath(shown.id, "model"));
    if (current !== shown || !state.model) return;
    fill($("model"), state.models, state.model);
    fill($("effort"), state.efforts, state.reasoning_effort);
    $("model").title = `Switching: ${state.cache_note}`;
    $("pickers").hidden = false;
  } catch (error) {
    notify(error.message);
  }
}

async function pick(body) {
  try {
    const state = await api(sessionPath(current.id, "model"), body);
    fill($("effort"), state.efforts, state.reasoning_effort);
    current.note = state.note; // shown while idle, until the next turn starts
    notify(state.note);
  } catch (error) {
    notify(error.message);
    loadModels();
  }
  mcpSoon();
}

let mcpPending = null;

function mcpSoon() {
  clearTimeout(mcpPending);
  mcpPending = setTimeout(() => refreshMcp(api, current?.id, $("mcp")), 300);
}

function update() {
  const transcript = current?.transcript;
  const listed = sessions.find((s) => s.id === current?.id);
  const named = transcript?.title || listed?.title || transcript?.prompt;
  $("title").textContent = named || (current ? current.id : "New session");
  $("cancel").hidden = !(transcript?.live && transcript.running);
  $("resume").hidden = !current || transcript?.live !== false;
  $("release").hidden = !(transcript?.live && !transcript.running);
  $("message").placeholder = transcript?.running
    ? "Steer the running turn… (Enter sends)"
    : "Ask the agent… (Enter sends, Shift+Enter for a new line)";
  if (!current) notify("");
  else if (transcript.live === false) notify("stored session: sending a message resumes it");
  else if (!transcript.running) notify(current.note || "idle");
  else if (transcript.root.querySelector(".asking .choices")) notify("waiting for approval");
  else if (transcript.root.querySelector(".question-card .choices")) notify("waiting for an answer");
  else notify("running…");
  drawPending(transcript);
}

function drawPending(transcript) {
  const items = [];
  for (const [target, label] of [["next-step", "steering"], ["next-turn", "queued"]]) {
    for (const message of transcript?.inbox[target] ?? []) {
      const item = document.createElement("li");
      item.textContent = `${label}: ${message.text}`;
      items.push(item);
    }
  }
  $("pending").replaceChildren(...items);
}

async function answer(callId, kind, reason) {
  await api(sessionPath(current.id, `approvals/${enc(callId)}`), { answer: kind, reason });
}

async function reply(callId, answers) {
  await api(sessionPath(current.id, `questions/${enc(callId)}`), { answers });
}

async function fork(seq) {
  const made = await api(sessionPath(current.id, "fork"), { seq });
  location.hash = `session=${enc(made.session_id)}`;
  $("message").value = made.prompt;
  $("message").focus();
}

function rewind(body) {
  return api(sessionPath(current.id, "rewind"), body);
}

function turnDiff(turn) {
  return api(sessionPath(current.id, `turns/${turn}/diff`));
}

// -- the message box -------------------------------------------------------------------------

async function send(event) {
  event.preventDefault();
  const box = $("message");
  const text = box.value;
  if (!text.trim()) return;
  box.value = "";
  try {
    if (current) {
      await api(sessionPath(current.id, "messages"), { text });
    } else {
      const made = await api("/api/sessions", { text });
      location.hash = `session=${enc(made.session_id)}`;
      refreshSessions();
    }
  } catch (error) {
    box.value = text;
    notify(error.message);
  }
}

function keydown(event) {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    $("composer").requestSubmit();
  }
}

// -- the session list ------------------------------------------------------------------------

let pending = null;

/** Run `task` once after a burst of calls (a replayed log starts and ends many turns). */
function soon(task) {
  clearTimeout(pending);
  pending = setTimeout(task, 300);
}

async function refreshSessions() {
  const all = $("all-workspaces").checked ? "?all=1" : "";
  try {
    sessions = (await api(`/api/sessions${all}`)).sessions;
  } catch (error) {
    notify(error.message);
  }
  drawSessions();
  update();
}

function drawSessions() {
  const items = sessions.map((session) => {
    const item = document.createElement("li");
    const link = document.createElement("button");
    link.type = "button";
    link.className = "session";
    if (session.id === current?.id) link.setAttribute("aria-current", "true");
    const title = document.createElement("span");
    title.className = "session-title";
    title.textContent = session.title || "(no prompt yet)";
    const meta = document.createElement("span");
    meta.className = "session-meta";
    const when = new Date(session.updated_at).toLocaleString();
    const turns = `${session.turns} turn${session.turns === 1 ? "" : "s"}`;
    meta.textContent = `${session.cwd ?? "-"} · ${when} · ${turns}${session.live ? " · open" : ""}`;
    link.append(title, meta);
    link.addEventListener("click", () => { location.hash = `session=${enc(session.id)}`; });
    item.append(link);
    return item;
  });
  $("sessions").replaceChildren(...items);
}

// -- wiring ----------------------------------------------------------------------------------

function route() {
  const match = location.hash.match(/^#session=(.+)$/);
  show(match ? decodeURIComponent(match[1]) : null);
}

$("composer").addEventListener("submit", send);
$("message").addEventListener("keydown", keydown);
$("cancel").addEventListener("click", () => {
  api(sessionPath(current.id, "cancel"), {}).catch((error) => notify(error.message));
});
$("release").addEventListener("click", () => {
  api(sessionPath(current.id, "release"), {}).catch((error) => notify(error.message));
});
$("resume").addEventListener("click", () => {
  api(sessionPath(current.id, "resume"), {}).catch((error) => notify(error.message));
});
$("new-session").addEventListener("click", () => {
  location.hash = "";
  $("message").focus();
});
$("all-workspaces").addEventListener("change", refreshSessions);
$("model").addEventListener("change", () => pick({ model: $("model").value }));
$("effort").addEventListener("change", () => pick({ reasoning_effort: $("effort").value }));
suggestInto($("message"), $("suggestions"));
window.addEventListener("focus", mcpSoon);
window.addEventListener("hashchange", route);
route();
refreshSessions();
