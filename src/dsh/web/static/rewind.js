// The Rewind panel of a prompt: what its turn changed in the workspace (the turn's diff),
// then code / conversation / both, the diff of the rewind first, Apply, and Undo after it.

import { button, el } from "./dom.js";
import { diffHtml } from "./highlight.js";

const MODES = [["code", "Code"], ["conversation", "Conversation"], ["both", "Both"]];

function files(changes) {
  return changes.map((c) => `${c.status} ${c.path}`).join(", ");
}

function patch(text) {
  const pre = el("pre", "diff");
  pre.innerHTML = diffHtml(text.replace(/\n$/, "").split("\n"));
  return pre;
}

function summary(report) {
  const lines = [];
  if (report.mode !== "conversation") {
    lines.push(`files: ${files(report.restored) || "none to change"}`);
    if (report.kept.length) {
      lines.push(`kept (changed outside dsh since then): ${report.kept.join(", ")}`);
    }
  }
  if (report.toSeq !== null) lines.push("conversation: the next prompt continues from there");
  return lines.map((line) => el("div", "rewind-line", line));
}

/** The panel for prompt `turn`; `actions.rewind(body)` and `actions.turnDiff(turn)` return
 *  promises of the server's JSON. */
export function rewindPanel(turn, actions) {
  const panel = el("div", "rewind-panel");
  panel.dataset.turn = turn;
  const changed = el("div", "rewind-changed", "…");
  const result = el("div", "rewind-result");
  const modes = el("div", "choices");
  panel.append(el("div", "who", `Rewind to before prompt ${turn}`), changed, modes, result);

  const fail = (error) => result.replaceChildren(el("div", "rewind-error", error.message));
  actions.turnDiff(turn).then((diff) => {
    const what = diff.changes.length ? `this turn changed ${files(diff.changes)}` : "this turn changed no file";
    changed.replaceChildren(el("div", "rewind-line", what));
    if (diff.patch) changed.append(patch(diff.patch));
  }, (error) => changed.replaceChildren(el("div", "rewind-error", error.message)));

  const undo = () => actions.rewind({ undo: true }).then((report) => {
    result.replaceChildren(el("div", "rewind-done", "rewind undone"), ...summary(report));
  }, fail);

  const apply = (mode, force) => actions.rewind({ turn, mode, force }).then((report) => {
    result.replaceChildren(el("div", "rewind-done", "rewound"), ...summary(report),
      button("Undo", undo, "undo"));
  }, fail);

  const plan = (mode) => actions.rewind({ turn, mode, dry_run: true }).then((report) => {
    const shown = [el("div", "rewind-line", `would rewind ${mode}:`), ...summary(report)];
    if (report.patch) shown.push(patch(report.patch));
    shown.push(button("Apply", () => apply(mode, false), "apply"));
    if (report.kept.length) {
      shown.push(button("Apply, taking those back too", () => apply(mode, true), "apply-force"));
    }
    result.replaceChildren(...shown);
  }, fail);

  for (const [mode, label] of MODES) modes.append(button(label, () => plan(mode), `mode-${mode}`));
  return panel;
}
