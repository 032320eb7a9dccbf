// The transcript of one session, drawn from the events the server streams: the session log
// as typed events (JSON `{seq, type: <dsh.events class>, …}`), each applied once, in order.

import { button, el } from "./dom.js";
import { diffHtml } from "./highlight.js";
import { markdown } from "./markdown.js";
import { closeQuestions, questionBox, questionsOf } from "./questions.js";
import { rewindPanel } from "./rewind.js";

const LONG_OUTPUT = 24; // lines shown before an output folds
const LIVE_CHARS = 8192; // how much of a running call's output its card keeps (the end)
const LIVE_LINES = 12; // lines of it the card shows


function tokens(count) {
  if (count < 1000) return String(count);
  return count < 100000 ? `${(count / 1000).toFixed(1)}k` : `${Math.round(count / 1000)}k`;
}

function plural(count, word) {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

/** `↑ 1.2k in (80% cached) · ↓ 340 out · 2 requests · 1 tool call · $0.0031 (session
 *  $0.0207)` (the cost when priced), or "" without usage. */
export function usageLine(usage) {
  if (!usage || (!usage.input_tokens && !usage.output_tokens)) return "";
  let input = `↑ ${tokens(usage.input_tokens)} in`;
  if (usage.cache_read_tokens && usage.input_tokens) {
    input += ` (${Math.round((100 * usage.cache_read_tokens) / usage.input_tokens)}% cached)`;
  }
  const parts = [input, `↓ ${tokens(usage.output_tokens)} out`, plural(usage.requests, "request"),
    plural(usage.tool_calls, "tool call")];
  if (usage.cost_usd != null) {
    let cost = `$${usage.cost_usd.toFixed(4)}`;
    const session = usage.session_cost_usd;
    if (session != null && session > usage.cost_usd + 0.00005) cost += ` (session $${session.toFixed(4)})`;
    parts.push(cost);
  }
  return parts.join(" · ");
}

export class Transcript {
  /** `actions`: `answer(callId, answer, reason)` (an approval), `reply(callId, answers)`
   *  (the model's questions), `fork(seq)`, `rewind(body)` and `turnDiff(turn)`, each
   *  returning a promise. */
  constructor(root, actions) {
    this.root = root;
    this.actions = actions;
    this.lastSeq = -1;
    this.live = null; // open in this server? (the stream's first `state` message says)
    this.running = false;
    this.title = ""; // the latest session/title
    this.prompt = ""; // the first prompt (the title until there is one)
    this.turn = null; // the section of the open (or last) turn
    this.steps = new Map(); // "turn:step" → {node, blocks: Map(key → block)}
    this.cards = new Map(); // call id → tool card
    this.inbox = { "next-turn": [], "next-step": [] };
    this.dirty = new Set();
    this.onchange = () => {};
  }

  /** Apply one streamed event (an event seen before is ignored). */
  add(event) {
    if (event.seq <= this.lastSeq) return;
    this.lastSeq = event.seq;
    const stick = this.atBottom();
    if (event.log_type === "session/title") this.title = event.title;
    this[`on${event.type}`]?.(event);
    if (stick) this.root.scrollTop = this.root.scrollHeight;
    this.onchange(event);
  }

  atBottom() {
    const root = this.root;
    return root.scrollHeight - root.scrollTop - root.clientHeight < 80;
  }

  container() {
    return this.turn ?? this.root;
  }

  // -- turns and messages ------------------------------------------------------------------

  onTurnStartEvent(event) {
    this.turn = el("section", "turn");
    this.turn.dataset.turn = event.turn;
    this.root.append(this.turn);
    this.running = true;
  }

  onTurnEndEvent(event) {
    this.running = false;
    const footer = el("footer", `turn-end ${event.reason}`);
    const budget = event.reason === "aborted" && event.detail?.startsWith("budget reached");
    const outcome = budget ? "stopped" : event.reason === "aborted" ? "cancelled" : event.reason;
    footer.append(el("span", "outcome", event.detail ? `${outcome}: ${event.detail}` : outcome));
    const usage = usageLine(event.usage);
    if (usage) footer.append(el("span", "usage", usage));
    this.container().append(footer);
    for (const card of this.cards.values()) {
      card.querySelector(".approval .choices")?.remove();
      closeQuestions(card);
    }
  }

  onUserMessageEvent(event) {
    if (event.source_kind !== "user") return; // injected context, reminders, summaries
    const container = this.container();
    const prompt = !container.querySelector(".msg.user");
    this.prompt ||= event.text;
    const node = el("div", prompt ? "msg user" : "msg user steering");
    node.dataset.seq = event.seq;
    const who = el("div", "who", prompt ? "You" : "You (while it ran)");
    if (prompt && this.turn) {
      const fork = button("Fork", () => this.actions.fork(event.seq), "fork");
      fork.title = "A new session from before this prompt, with it in the message box";
      const turn = Number(this.turn.dataset.turn);
      const rewind = button("Rewind", () => this.toggleRewind(node, turn), "fork rewind");
      rewind.title = "Take the files, the conversation or both back to before this prompt";
      who.append(fork, rewind);
    }
    const body = el("div", "md");
    body.innerHTML = markdown(event.text);
    node.append(who, body);
    container.append(node);
  }


  toggleRewind(node, turn) {
    const open = node.querySelector(".rewind-panel");
    if (open) open.remove();
    else node.append(rewindPanel(turn, this.actions));
  }

  onRewindCodeEvent(event) {
    const what = event.undo ? "the last rewind of the files was undone"
      : `files rewound to before prompt ${event.turn}`;
    this.root.append(el("div", "notice rewound", `${what} (${event.restored.length} changed)`));
  }

  onRewindConversationEvent(event) {
    const what = event.undo ? "the last rewind of the conversation was undone"
      : `conversation rewound to before prompt ${event.turn}: the next prompt continues from there`;
    this.root.append(el("div", "notice rewound", what));
  }

  // -- the answer, streamed ----------------------------------------------------------------

  step(turn, step) {
    const key = `${turn}:${step}`;
    let found = this.steps.get(key);
    if (!found) {
      found = { node: el("div", "step"), blocks: new Map() };
      this.steps.set(key, found);
      this.container().append(found.node);
    }
    return found;
  }

  block(step, kind, key) {
    let found = step.blocks.get(key);
    if (!found) {
      found = { kind, text: "", body: el("div", "md") };
      if (kind === "reasoning") {
        const details = el("details", "reasoning");
        details.append(el("summary", "", "Reasoning"), found.body);
        step.node.append(details);
      } else {
        found.body.classList.add("answer");
        step.node.append(found.body);
      }
      step.blocks.set(key, found);
    }
    return found;
  }

  onTextDeltaEvent(event) {
    this.delta(event, "text");
  }

  onReasoningDeltaEvent(event) {
    this.delta(event, "reasoning");
  }

  delta(event, kind) {
    const block = this.block(this.step(event.turn, event.step), kind, `${kind}:${event.index}`);
    block.text += event.text;
    this.dirty.add(block);
    if (this.dirty.size === 1) requestAnimationFrame(() => this.flush());
  }

  flush() {
    for (const block of this.dirty) block.body.innerHTML = markdown(block.text);
    this.dirty.clear();
  }

  /** The committed answer replaces what streamed (a log without chunks has only this). */
  onAssistantMessageEvent(event) {
    const step = this.step(event.turn, event.step);
    step.node.replaceChildren();
    step.blocks.clear();
    event.blocks.forEach((part, i) => {
      const block = this.block(step, part.kind, `final:${i}`);
      block.text = part.text;
      block.body.innerHTML = markdown(part.text);
    });
    if (event.interrupted) step.node.append(el("div", "note", "(interrupted)"));
  }

  // -- tools -------------------------------------------------------------------------------

  onToolCallEvent(event) {
    const card = el("article", "tool running");
    card.dataset.call = event.call_id;
    const header = el("header");
    header.append(el("span", "tool-name", event.name));
    const target = toolTarget(event.name, event.arguments);
    if (target) header.append(el("code", "tool-target", target));
    header.append(el("span", "tool-status", "running"));
    const questions = event.name === "ask_user_question" ? questionsOf(event.arguments) : null;
    const input = questions ? this.questions(event.call_id, questions) : toolInput(event, target);
    if (questions) card.classList.add("question-card");
    input.classList.add("tool-input");
    card.append(header, input);
    this.cards.set(event.call_id, card);
    this.container().append(card);
  }

  /** The model's questions; answerable while the turn runs in this server. */
  questions(callId, questions) {
    const open = this.live && this.running;
    return questionBox(questions, open ? (answers) => this.actions.reply(callId, answers) : null);
  }

  /** A running call's progress (not logged: `{callId, name, elapsedMs, output, message?,
   *  fraction?}`): the end of its output in the card, and how long it has run. */
  progress(event) {
    const card = this.cards.get(event.callId);
    if (!card || !card.classList.contains("running")) return;
    const stick = this.atBottom();
    let live = card.querySelector(".live-output");
    if (!live) {
      live = el("pre", "live-output");
      live.setAttribute("aria-live", "polite");
      live.dataset.output = "";
      card.append(live);
    }
    const output = (live.dataset.output + event.output).slice(-LIVE_CHARS);
    live.dataset.output = output;
    live.textContent = output.replace(/\n$/, "").split("\n").slice(-LIVE_LINES).join("\n");
    let status = `running · ${Math.floor(event.elapsedMs / 1000)} s`;
    if (event.message) status += ` · ${event.message}`;
    if (event.fraction != null) status += ` (${Math.round(event.fraction * 100)}%)`;
    card.querySelector(".tool-status").textContent = status;
    if (stick) this.root.scrollTop = this.root.scrollHeight;
  }

  onToolResultEvent(event) {
    const card = this.cards.get(event.call_id);
    if (!card) return;
    card.querySelector(".live-output")?.remove(); // the result below holds all of it
    closeQuestions(card);
    card.classList.remove("running");
    card.classList.add(event.is_error ? "failed" : "done");
    card.querySelector(".tool-status").textContent = event.is_error ? "failed" : "done";
    card.append(output(event.text, event.is_error));
  }

  onApprovalAskedEvent(event) {
    const card = this.cards.get(event.call_id);
    if (!card) return;
    card.classList.add("asking");
    const box = el("div", "approval");
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", `Approve ${event.tool}`);
    box.append(el("span", "question", `Allow ${event.tool}?`));
    if (this.live && this.running) box.append(this.choices(event.call_id));
    else box.append(el("span", "note", "waiting for approval"));
    card.querySelector(".tool-input").after(box);
  }

  choices(callId) {
    const choices = el("div", "choices");
    const reason = el("input", "reason");
    reason.setAttribute("aria-label", "Reason");
    reason.placeholder = "Reason (optional; the model reads it)";
    const answer = (kind) => () => {
      choices.querySelectorAll("button").forEach((b) => { b.disabled = true; });
      this.actions.answer(callId, kind, reason.value).catch((error) => {
        choices.querySelectorAll("button").forEach((b) => { b.disabled = false; });
        choices.append(el("span", "error", error.message));
      });
    };
    choices.append(
      button("Allow", answer("once"), "allow"),
      button("Allow for this session", answer("always"), "allow"),
      reason,
      button("Deny", answer("deny"), "deny"),
    );
    return choices;
  }

  onApprovalDecidedEvent(event) {
    const card = this.cards.get(event.call_id);
    const box = card?.querySelector(".approval");
    if (!box) return;
    card.classList.remove("asking");
    const said = {
      once: "allowed once",
      always: "allowed for this session",
      deny: event.by === "answerer" ? "denied" : `denied (${event.by})`,
    }[event.decision] ?? event.decision;
    box.replaceChildren(el("span", "decision", event.reason ? `${said}: ${event.reason}` : said));
  }

  // -- the rest of the log -----------------------------------------------------------------

  onInboxSplicedEvent(event) {
    const queue = this.inbox[event.target];
    if (queue) queue.splice(event.start, event.removed_count, ...event.inserted);
  }

  onRetryEvent(event) {
    const seconds = (event.delay_ms / 1000).toFixed(1);
    const text = `retrying in ${seconds}s (attempt ${event.retry}): ${event.message}`;
    this.container().append(el("div", "notice", text));
  }

  onCompactionSummaryEvent(event) {
    this.container().append(el("div", "notice", `compacted into a summary: ${event.receipt}`));
  }

  onModelSwitchEvent(event) {
    const effort = event.reasoning_effort ? ` (reasoning ${event.reasoning_effort})` : "";
    const why = event.fallback ? ` after a failure (${event.fallback})` : "";
    const text = `switched to ${event.model}${effort}${why}: the next request re-pays the cached prompt prefix once`;
    this.container().append(el("div", "notice", text));
  }

  onTodoWriteEvent(event) {
    const list = el("ul", "todos");
    for (const todo of event.todos) list.append(el("li", todo.status, todo.content));
    const card = el("div", "todo-card");
    card.append(el("div", "who", "Todo list"), list);
    this.container().append(card);
  }
}

function toolTarget(name, args) {
  if (!args || typeof args !== "object") return "";
  const value = args.file_path ?? args.path ?? args.pattern ?? args.url ?? "";
  return name === "bash" ? "" : String(value);
}

function toolInput(event, target) {
  const args = event.arguments;
  if (event.diff) {
    const pre = el("pre", "diff");
    pre.innerHTML = diffHtml(event.diff);
    if (!event.diff_complete) pre.title = "From the call's arguments (the file was not seen)";
    return pre;
  }
  if (event.name === "bash" && args && typeof args.command === "string") {
    return el("pre", "command", `$ ${args.command}`);
  }
  const keys = args && typeof args === "object" ? Object.keys(args) : [];
  const onlyTarget = target && keys.length === 1; // already in the header
  const text = typeof args === "string" ? args : JSON.stringify(args, null, 2);
  return el("pre", "arguments", onlyTarget || !keys.length ? "" : text);
}

function output(text, failed) {
  const lines = text.split("\n");
  const pre = el("pre", failed ? "output error" : "output", text);
  if (lines.length <= LONG_OUTPUT) return pre;
  const details = el("details", "long-output");
  details.append(el("summary", "", `${lines.length} lines of output`), pre);
  return details;
}
