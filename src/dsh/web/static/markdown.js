// A small Markdown renderer for model answers: headings, paragraphs, lists (nested by
// indentation), block quotes, fenced code (highlighted), tables and rules; code spans, bold,
// italics, strikethrough and links. The text is escaped first, and links keep only http(s)
// and mailto targets, so an answer can never inject markup into the page.

import { escapeHtml, highlight } from "./highlight.js";

const FENCE = /^\s*(`{3,}|~{3,})\s*([\w+#.-]*)/;
const HEADING = /^(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^\s*([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^\s*>/;
const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const TABLE_RULE = /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/;

/** Markdown `source` as HTML. */
export function markdown(source) {
  return blocks(String(source).replace(/\r\n?/g, "\n").split("\n"));
}

function blocks(lines) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let match;
    if (!line.trim()) {
      i += 1;
    } else if ((match = line.match(FENCE))) {
      i = fenced(lines, i, match, out);
    } else if ((match = line.match(HEADING))) {
      const level = match[1].length;
      out.push(`<h${level}>${inline(match[2])}</h${level}>`);
      i += 1;
    } else if (RULE.test(line)) {
      out.push("<hr>");
      i += 1;
    } else if (QUOTE.test(line)) {
      const body = [];
      while (i < lines.length && QUOTE.test(lines[i])) body.push(lines[i++].replace(/^\s*> ?/, ""));
      out.push(`<blockquote>${blocks(body)}</blockquote>`);
    } else if (ITEM.test(line)) {
      i = list(lines, i, out);
    } else if (isTable(lines, i)) {
      i = table(lines, i, out);
    } else {
      const body = [line];
      i += 1;
      while (i < lines.length && lines[i].trim() && !startsBlock(lines, i)) body.push(lines[i++]);
      out.push(`<p>${inline(body.join("\n"))}</p>`);
    }
  }
  return out.join("");
}

function startsBlock(lines, i) {
  const line = lines[i];
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) ||
    ITEM.test(line) || isTable(lines, i);
}

function fenced(lines, i, match, out) {
  const fence = match[1];
  const body = [];
  i += 1;
  while (i < lines.length && !lines[i].trim().startsWith(fence)) body.push(lines[i++]);
  const lang = escapeHtml(match[2]);
  out.push(`<pre><code data-lang="${lang}">${highlight(body.join("\n"), match[2])}</code></pre>`);
  return i + 1; // past the closing fence (or the end, while it streams)
}

function indentOf(line) {
  return line.length - line.trimStart().length;
}

function list(lines, i, out) {
  const first = lines[i].match(ITEM);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const inner = indent + first[2].length + 1;
  const items = [];
  while (i < lines.length) {
    const line = lines[i];
    const match = line.match(ITEM);
    if (match && match[1].length === indent && /\d/.test(match[2]) === ordered) {
      items.push([match[3]]);
    } else if (line.trim() && indentOf(line) > indent) {
      items[items.length - 1].push(line.slice(Math.min(indentOf(line), inner)));
    } else if (!line.trim() && i + 1 < lines.length && indentOf(lines[i + 1]) > indent) {
      items[items.length - 1].push("");
    } else {
      break;
    }
    i += 1;
  }
  const tag = ordered ? "ol" : "ul";
  const start = ordered ? parseInt(first[2], 10) : 1;
  const open = start !== 1 ? `<${tag} start="${start}">` : `<${tag}>`;
  const body = items.map((item) => {
    return `<li>${item.length === 1 ? inline(item[0]) : blocks(item)}</li>`;
  });
  out.push(`${open}${body.join("")}</${tag}>`);
  return i;
}

function isTable(lines, i) {
  return lines[i].includes("|") && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1]);
}

function cells(line) {
  return line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
}

function table(lines, i, out) {
  const head = cells(lines[i]).map((c) => `<th>${inline(c)}</th>`).join("");
  const rows = [];
  i += 2;
  while (i < lines.length && lines[i].includes("|") && lines[i].trim()) {
    rows.push(`<tr>${cells(lines[i++]).map((c) => `<td>${inline(c)}</td>`).join("")}</tr>`);
  }
  out.push(`<table><thead><tr>${head}</tr></thead><tbody>${rows.join("")}</tbody></table>`);
  return i;
}

const CODE_SPAN = /(`+)([\s\S]*?[^`])\1(?!`)/g;

/** Inline Markdown: code spans are literal; the rest is escaped, then emphasised. */
export function inline(text) {
  let out = "";
  let last = 0;
  for (const match of text.matchAll(CODE_SPAN)) {
    out += emphasis(escapeHtml(text.slice(last, match.index)));
    out += `<code>${escapeHtml(match[2].trim())}</code>`;
    last = match.index + match[0].length;
  }
  return out + emphasis(escapeHtml(text.slice(last)));
}

function emphasis(html) {
  return html
    .replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (all, label, url) =>
      /^(https?:|mailto:)/i.test(url)
        ? `<a href="${url}" target="_blank" rel="noopener noreferrer">${label}</a>`
        : label)
    .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, "<strong>$1</strong>")
    .replace(/__(?=\S)([\s\S]*?\S)__/g, "<strong>$1</strong>")
    .replace(/(^|[^*\w])\*(?=[^\s*])([^*]*?[^\s*])\*(?![*\w])/g, "$1<em>$2</em>")
    .replace(/(^|[^_\w])_(?=[^\s_])([^_]*?[^\s_])_(?![_\w])/g, "$1<em>$2</em>")
    .replace(/~~(?=\S)([\s\S]*?\S)~~/g, "<del>$1</del>");
}
