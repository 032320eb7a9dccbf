// Escaping, and a small highlighter: comments, strings, numbers and keywords of the languages
// answers use most, plus unified diffs. Everything it returns is escaped HTML.

const ENTITIES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ENTITIES[c]);
}

const DOUBLE = /"(?:\\.|[^"\\\n])*"/.source;
const SINGLE = /'(?:\\.|[^'\\\n])*'/.source;
const words = (list) => new Set(list.split(" "));

const LANGUAGES = {
  python: {
    comment: /#.*/.source,
    string: `"""[\\s\\S]*?"""|'''[\\s\\S]*?'''|${DOUBLE}|${SINGLE}`,
    keywords: words(
      "and as assert async await break class continue def del elif else except False finally " +
        "for from global if import in is lambda None nonlocal not or pass raise return True " +
        "try while with yield match case self",
    ),
  },
  js: {
    comment: /\/\/.*|\/\*[\s\S]*?\*\//.source,
    string: `\`(?:\\\\.|[^\`\\\\])*\`|${DOUBLE}|${SINGLE}`,
    keywords: words(
      "async await break case catch class const continue default delete do else export " +
        "extends false finally for from function if import in instanceof interface let new " +
        "null of return static super switch this throw true try type typeof undefined var " +
        "void while yield",
    ),
  },
  c: {
    comment: /\/\/.*|\/\*[\s\S]*?\*\//.source,
    string: `${DOUBLE}|${SINGLE}`,
    keywords: words(
      "auto bool break case char class const continue default do double else enum extern " +
        "false fn float for func go if impl import int let long match mut package pub public " +
        "private return self static struct switch true type use var void while",
    ),
  },
  sh: {
    comment: /(?<![\w$])#.*/.source,
    string: `${DOUBLE}|${SINGLE}`,
    keywords: words(
      "if then else elif fi for while until do done case esac function in return local " +
        "export cd echo exit set unset source",
    ),
  },
};

const ALIASES = {
  py: "python", python: "python", python3: "python",
  js: "js", javascript: "js", mjs: "js", ts: "js", typescript: "js", jsx: "js", tsx: "js",
  json: "js",
  c: "c", h: "c", cpp: "c", "c++": "c", java: "c", go: "c", rust: "c", rs: "c",
  sh: "sh", bash: "sh", shell: "sh", zsh: "sh", console: "sh",
};

const patterns = new Map();

function pattern(name) {
  if (!patterns.has(name)) {
    const spec = LANGUAGES[name];
    const source =
      `(${spec.comment})|(${spec.string})|(\\b\\d[\\d_]*(?:\\.\\d+)?\\b)|([A-Za-z_$][\\w$]*)`;
    patterns.set(name, new RegExp(source, "g"));
  }
  return patterns.get(name);
}

/** `code` as HTML, its tokens in `tok-*` spans when `lang` is known. */
export function highlight(code, lang = "") {
  const key = lang.toLowerCase();
  if (key === "diff" || key === "patch") return diffHtml(code.split("\n"));
  const name = ALIASES[key];
  if (!name) return escapeHtml(code);
  const keywords = LANGUAGES[name].keywords;
  let out = "";
  let last = 0;
  for (const match of code.matchAll(pattern(name))) {
    const [text, comment, string, number, word] = match;
    const kind = comment ? "c" : string ? "s" : number ? "n" : keywords.has(word) ? "k" : "";
    out += escapeHtml(code.slice(last, match.index));
    out += kind ? `<span class="tok-${kind}">${escapeHtml(text)}</span>` : escapeHtml(text);
    last = match.index + text.length;
  }
  return out + escapeHtml(code.slice(last));
}

/** Unified diff lines as HTML, one span per line (added, removed, hunk, file). */
export function diffHtml(lines) {
  return lines
    .map((line) => {
      const kind = /^(\+\+\+|---)/.test(line) ? "file"
        : line.startsWith("@@") ? "hunk"
        : line.startsWith("+") ? "add"
        : line.startsWith("-") ? "del"
        : "ctx";
      return `<span class="diff-${kind}">${escapeHtml(line) || " "}</span>`;
    })
    .join(""); // each line is a block
}
