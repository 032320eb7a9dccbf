// The model's questions (an `ask_user_question` call) on its tool card: each question with its
// options as buttons and a box for the person's own words; "Answer" sends them, "Decline"
// declines. One question with a single choice is answered by clicking an option.

import { button, el } from "./dom.js";

/** The questions of a call's arguments, or null when they are not the tool's shape. */
export function questionsOf(args) {
  const questions = args && typeof args === "object" ? args.questions : null;
  if (!Array.isArray(questions) || !questions.length) return null;
  return questions.every((q) => q && typeof q.question === "string") ? questions : null;
}

/** The questions drawn; `send(answers)` (a promise; `answers` null declines) makes them
 *  answerable — given only while the session runs here. */
export function questionBox(questions, send) {
  const box = el("div", "questions");
  box.setAttribute("role", "group");
  box.setAttribute("aria-label", questions.length === 1 ? "Question" : "Questions");
  const parts = questions.map((q) => question(q, Boolean(send)));
  box.append(...parts.map((part) => part.node));
  if (!send) return box;

  const choices = el("div", "choices");
  const enable = (on) => box.querySelectorAll("button").forEach((b) => { b.disabled = !on; });
  const submit = (answers) => {
    enable(false);
    choices.querySelector(".error")?.remove();
    send(answers).catch((error) => {
      enable(true);
      choices.append(el("span", "error", error.message));
    });
  };
  const answerAll = () => submit(parts.map((part) => part.answer()));
  choices.append(button("Answer", answerAll, "allow"), button("Decline", () => submit(null), "deny"));
  box.append(choices);

  const quick = parts.length === 1 && !questions[0].multi_select; // a click answers
  for (const part of parts) {
    part.text.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.isComposing) {
        event.preventDefault();
        answerAll();
      }
    });
    if (quick) part.options.forEach((option) => option.addEventListener("click", answerAll));
  }
  return box;
}

/** The question can no longer be answered (answered, or its turn ended). */
export function closeQuestions(card) {
  card.querySelectorAll(".questions button").forEach((b) => { b.disabled = true; });
  card.querySelectorAll(".questions .choices, .questions .answer-text").forEach((n) => n.remove());
}

function question(q, open) {
  const node = el("div", "user-question");
  node.setAttribute("role", "group");
  node.setAttribute("aria-label", q.question);
  const head = el("p", "question-text");
  if (q.header) head.append(el("span", "question-header", q.header), " ");
  head.append(q.question);
  node.append(head);

  const options = (Array.isArray(q.options) ? q.options : [])
    .filter((o) => o && typeof o.label === "string")
    .map((o) => option(o, open));
  if (options.length) {
    const row = el("div", "options");
    row.append(...options);
    node.append(row);
  }
  for (const chosen of options) {
    chosen.addEventListener("click", () => press(chosen, options, Boolean(q.multi_select)));
  }
  const text = el("input", "answer-text");
  text.setAttribute("aria-label", "Your answer");
  text.placeholder = options.length ? "Or your own answer" : "Your answer";
  if (open) node.append(text);
  const answer = () => ({
    selected: options.filter((o) => o.getAttribute("aria-pressed") === "true")
      .map((o) => o.dataset.label),
    text: text.value.trim(),
  });
  return { node, options, text, answer };
}

function option(o, open) {
  const node = el("button", "option");
  node.type = "button";
  node.dataset.label = o.label;
  node.setAttribute("aria-pressed", "false");
  node.append(el("span", "option-label", o.label));
  if (o.description) node.append(el("small", "option-about", o.description));
  node.disabled = !open;
  return node;
}

/** Several: the option toggles; one: it becomes the choice (as a radio button does). */
function press(chosen, options, several) {
  const on = !several || chosen.getAttribute("aria-pressed") !== "true";
  if (!several) options.forEach((o) => o.setAttribute("aria-pressed", "false"));
  chosen.setAttribute("aria-pressed", String(on));
}
