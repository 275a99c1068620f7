// A small syntax highlighter for fenced code: python, js/ts, bash/sh and json. Each
// language is a list of [class, sticky regex] rules tried in order at each position;
// whatever no rule matches stays plain text. Output is text nodes and <span>s only.

const KEYWORDS = {
  python:
    "and as assert async await break class continue def del elif else except finally for " +
    "from global if import in is lambda nonlocal not or pass raise return try while with yield match case",
  js:
    "async await break case catch class const continue debugger default delete do else export " +
    "extends finally for from function if import in instanceof let new of return static super " +
    "switch this throw try typeof var void while with yield interface type enum implements " +
    "private public protected readonly as",
  bash:
    "if then else elif fi for while until do done case esac in function return local export " +
    "readonly declare unset shift exit break continue",
};
const LITERALS = {
  python: "True False None self",
  js: "true false null undefined NaN Infinity",
  bash: "true false",
};

const words = (list) => new RegExp(`\\b(?:${list.split(" ").join("|")})\\b`, "y");
const NUMBER = /\b(?:0[xXbBoO][\da-fA-F_]+|\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?)\b/y;

const RULES = {
  python: [
    ["com", /#[^\n]*/y],
    ["str", /[rbfuRBFU]{0,2}("""[\s\S]*?(?:"""|$)|'''[\s\S]*?(?:'''|$))/y],
    ["str", /[rbfuRBFU]{0,2}("(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?)/y],
    ["dec", /@[\w.]+/y],
    ["kw", words(KEYWORDS.python)],
    ["lit", words(LITERALS.python)],
    ["num", NUMBER],
    ["fn", /[A-Za-z_]\w*(?=\()/y],
  ],
  js: [
    ["com", /\/\/[^\n]*|\/\*[\s\S]*?(?:\*\/|$)/y],
    ["str", /`(?:\\.|[^`\\])*`?|"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?/y],
    ["kw", words(KEYWORDS.js)],
    ["lit", words(LITERALS.js)],
    ["num", NUMBER],
    ["fn", /[A-Za-z_$][\w$]*(?=\()/y],
  ],
  bash: [
    ["com", /(?:^|(?<=\s))#[^\n]*/y],
    ["str", /"(?:\\.|[^"\\])*"?|'[^']*'?/y],
    ["var", /\$\{[^}\n]*\}?|\$[\w@#?$!*-]/y],
    ["kw", words(KEYWORDS.bash)],
    ["lit", words(LITERALS.bash)],
    ["opt", /(?<=\s)--?[\w-]+/y],
  ],
  json: [
    ["key", /"(?:\\.|[^"\\\n])*"(?=\s*:)/y],
    ["str", /"(?:\\.|[^"\\\n])*"?/y],
    ["lit", /\b(?:true|false|null)\b/y],
    ["num", /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y],
  ],
};

const ALIASES = {
  py: "python", python: "python", python3: "python",
  js: "js", javascript: "js", mjs: "js", cjs: "js", jsx: "js",
  ts: "js", typescript: "js", tsx: "js",
  sh: "bash", bash: "bash", shell: "bash", zsh: "bash", console: "bash", shellsession: "bash",
  json: "json", jsonc: "json", json5: "json",
};

const MAX_HIGHLIGHT = 200000; // longer code is shown plain: the regexes are per character

/** The language a fence's info string names, or null (shown plain). */
export function languageOf(info) {
  const word = (info || "").trim().split(/\s+/)[0].toLowerCase();
  return ALIASES[word] || null;
}

// A streaming reply is rendered again every frame: its finished code blocks come back
// unchanged each time, so their highlighting is kept (a copy is handed out: nodes move).
const CACHE_SIZE = 32;
const cache = new Map(); // `${language}\n${code}` -> DocumentFragment, oldest first

/** A DocumentFragment of `code` with spans of class `tok-<kind>`. */
export function highlight(code, language) {
  const key = `${language}\n${code}`;
  let done = cache.get(key);
  if (!done) {
    done = tokenise(code, language);
    cache.set(key, done);
    if (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value);
  }
  return done.cloneNode(true);
}

function tokenise(code, language) {
  const fragment = document.createDocumentFragment();
  const rules = RULES[language];
  if (!rules || code.length > MAX_HIGHLIGHT) {
    fragment.append(code);
    return fragment;
  }
  let plain = "";
  let pos = 0;
  while (pos < code.length) {
    const hit = matchAt(rules, code, pos);
    if (!hit) {
      plain += code[pos];
      pos += 1;
      continue;
    }
    if (plain) fragment.append(plain);
    plain = "";
    const span = document.createElement("span");
    span.className = `tok-${hit.kind}`;
    span.textContent = hit.text;
    fragment.append(span);
    pos += hit.text.length;
  }
  if (plain) fragment.append(plain);
  return fragment;
}

function matchAt(rules, code, pos) {
  // a word rule must not start inside a word (`format` is not `for` + `mat`)
  if (/\w/.test(code[pos]) && pos > 0 && /\w/.test(code[pos - 1])) return null;
  for (const [kind, regex] of rules) {
    regex.lastIndex = pos;
    const match = regex.exec(code);
    if (match && match[0].length > 0) return { kind, text: match[0] };
  }
  return null;
}
