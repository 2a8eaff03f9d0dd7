#!/usr/bin/env node
// Writes realistic benchmark sessions WITH THE REFERENCE Pi SessionManager (npm
// @earendil-works/pi-coding-agent 1.6.0, installed by ../../shared/pi-oracle/setup.sh), so every file is
// byte-for-byte what Pi itself writes: SessionManager.create(cwd, dir) followed by append* / branch* calls.
//
//   node benchmarks/make_sessions.mjs [--out benchmarks/data] [--entries 2000 20000 200000]
//        [--large 20000] [--dir300 300] [--catalog 3000] [--only large,scale,dir300,catalog] [--seed 1] [--memory-above N]
//
// Output (in --out, default benchmarks/data next to this script):
//   large.jsonl            20,000 entries (~17 MB): the main benchmark session
//   scale-<N>.jsonl        the same generator at each --entries size
//   dir300/                300 small sessions (20-200 entries, a few cwds, some named), as SessionManager.list scans
//   catalog-<N>/sessions/  with --catalog N: N sessions (60-720 entries) over 12 projects, as Pi's agent dir lays them
//                          out (--only catalog writes just these)
// and prints a JSON summary on stdout (also written to summary.json there).
//
// Deterministic: content comes from a seeded PRNG, Date is frozen (and advanced by the generator to model a
// real session's pacing), crypto.randomUUID (entry ids) is replaced by a generator seeded per session, and the
// session id (a UUIDv7 like Pi's) is derived from the same seed and passed as the `id` option. Each session's
// bytes depend only on its own seed, size and cwd: scale-20000.jsonl is byte-identical to large.jsonl.
//
// By default every session is written by the persisted manager itself (one appendFileSync per entry). With
// --memory-above N, sessions larger than N entries are built with SessionManager.inMemory() and the same append
// calls, then written from the header + getEntries() with JSON.stringify per line: byte-identical to what the
// persisted manager writes (its first flush and every appendFileSync write `${JSON.stringify(entry)}\n`; checked:
// same md5 for scale-200000 both ways), and slightly faster. The 200k session takes ~45 s either way, most of it in
// the reference's own O(path) work per context edit (getBranch) and per compaction (buildSessionProjection).
import { createRequire, syncBuiltinESMExports } from "node:module";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

// ---------------------------------------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------------------------------------
function parseArgs(argv) {
  const o = { out: join(here, "data"), entries: [2000, 20000, 200000], large: 20000, dir300: 300, catalog: 0, only: null, seed: 1, memoryAbove: Infinity };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => { if (i + 1 >= argv.length) throw new Error(`${a} needs a value`); return argv[++i]; };
    if (a === "--out") o.out = resolve(next());
    else if (a === "--entries") {
      o.entries = [];
      while (i + 1 < argv.length && !argv[i + 1].startsWith("--")) o.entries.push(...argv[++i].split(",").filter(Boolean).map(Number));
    } else if (a === "--large") o.large = Number(next());
    else if (a === "--dir300") o.dir300 = Number(next());
    else if (a === "--catalog") o.catalog = Number(next());
    else if (a === "--only") o.only = new Set(next().split(","));
    else if (a === "--seed") o.seed = Number(next());
    else if (a === "--memory-above") o.memoryAbove = Number(next());
    else if (a === "-h" || a === "--help") {
      console.log("usage: node make_sessions.mjs [--out DIR] [--entries N ...] [--large N] [--dir300 COUNT] [--only large,scale,dir300] [--seed S] [--memory-above N]");
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  for (const n of [...o.entries, o.large, o.dir300, o.catalog]) if (!Number.isInteger(n) || n < 0) throw new Error(`bad count ${n}`);
  return o;
}
const opts = parseArgs(process.argv.slice(2));
const want = (what) => !opts.only || opts.only.has(what);

// ---------------------------------------------------------------------------------------------------------
// Determinism: seeded PRNG, frozen clock, seeded ids
// ---------------------------------------------------------------------------------------------------------
function sfc32(a, b, c, d) {
  return function () {
    a |= 0; b |= 0; c |= 0; d |= 0;
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
}
function makeRng(seed) {
  const r = sfc32(0x9e3779b9, 0x243f6a88 ^ seed, 0xb7e15162, seed * 2654435761);
  for (let i = 0; i < 20; i++) r();
  return r;
}

// Entry ids (randomUUID().slice(0, 8)) and session ids (uuidv7 via crypto.getRandomValues) from a seeded stream.
let idRng = makeRng(opts.seed ^ 0x5eed);
const nodeCrypto = require("node:crypto");
const HEX = "0123456789abcdef";
nodeCrypto.randomUUID = function seededRandomUUID() {
  let s = "";
  for (let i = 0; i < 32; i++) {
    if (i === 8 || i === 12 || i === 16 || i === 20) s += "-";
    s += i === 12 ? "4" : HEX[(idRng() * 16) | 0];
  }
  return s;
};
syncBuiltinESMExports();
// Not used while sessions get an explicit id, but keeps any other uuidv7() call deterministic too.
globalThis.crypto.getRandomValues = function seededGetRandomValues(arr) {
  const bytes = new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (idRng() * 256) | 0;
  return arr;
};

// Frozen clock, as in oracle.mjs: every reading advances 1 ms; the generator moves it forward to model pacing.
const clock = { now: Date.UTC(2025, 5, 2, 9, 14, 3, 118) };
{
  const RealDate = Date;
  class FakeDate extends RealDate {
    constructor(...a) { if (a.length === 0) { super(clock.now); clock.now += 1; } else super(...a); }
    static now() { const t = clock.now; clock.now += 1; return t; }
  }
  globalThis.Date = FakeDate;
}

// ---------------------------------------------------------------------------------------------------------
// The reference
// ---------------------------------------------------------------------------------------------------------
const piHome = process.env.PI_ORACLE_HOME || join(homedir(), ".cache", "pi-oracle");
const pkgDir = join(piHome, "node_modules/@earendil-works/pi-coding-agent");
const smPath = join(pkgDir, "dist/core/session-manager.js");
if (!existsSync(smPath)) {
  console.error(`make_sessions: reference package missing at ${smPath}; run shared/pi-oracle/setup.sh first`);
  process.exit(2);
}
const { SessionManager } = await import(smPath);
const piVersion = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")).version;

// ---------------------------------------------------------------------------------------------------------
// Content
// ---------------------------------------------------------------------------------------------------------
const WORDS = ("invoice ledger account session token cache request handler config payload retry queue worker schema record " +
  "batch client event metric buffer parser router billing order customer price tax report export import migration " +
  "timeout limit cursor page filter index snapshot version manifest bundle plugin adapter provider registry stream " +
  "chunk frame socket header body status error result option setting context state store reducer effect hook").split(" ");
const VERBS = "load save fetch parse build apply merge resolve validate render update create delete compute normalize flush sync emit handle format".split(" ");
const TYPES = "Invoice Ledger Account Session Token Request Response Config Payload Record Batch Client Event Metric Order Customer Money Report Cursor Snapshot".split(" ");
const PROSE = ("the a this that we it should would could must can will then so because when if while after before " +
  "function test file module call value case path branch change fix bug failing passes error output line type " +
  "import config build run check update refactor rename move extract keep remove add handle return async await " +
  "promise retry timeout cache invoice ledger totals rounding currency tax report export migration schema index " +
  "query field column row batch worker queue event handler client server request response status code").split(" ");
const NON_ASCII = [
  "Prüfe die Eingabe — naïve Zeitstempel sind UTC",
  "注意: この値はキャッシュされます",
  "café ☕ résumé déjà vu",
  "returns ≤ 0 on failure → caller retries",
  "handles “smart quotes” and ‘apostrophes’",
  "release notes 🚀 ✨ 🐛",
  "Ελληνικά: δοκιμή μονάδας",
  "данные клиента не изменяются",
  "Größe in µs, ± 5 %",
  "修复: 金额四舍五入错误",
  "✓ 143 passed ✗ 1 failed",
  "São Paulo, Zürich, Kraków, Åre",
];
const COMMENTS = [
  "TODO: handle partial refunds", "keep in sync with the API schema", "avoid N+1 queries here", "see ADR-0007",
  "guard against negative totals", "FIXME: flaky under load", "rounding is banker's rounding", "cached for 5 minutes",
  "legacy path, remove after migration", "the provider returns cents, not units",
];
const MODELS = [
  { provider: "anthropic", api: "anthropic-messages", id: "claude-sonnet-4-5", cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 }, callPrefix: "toolu_01" },
  { provider: "anthropic", api: "anthropic-messages", id: "claude-opus-4-1", cost: { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 }, callPrefix: "toolu_01" },
  { provider: "openai", api: "openai-responses", id: "gpt-5", cost: { input: 1.25, output: 10, cacheRead: 0.125, cacheWrite: 0 }, callPrefix: "call_" },
  { provider: "google", api: "google-generative-ai", id: "gemini-2.5-pro", cost: { input: 1.25, output: 10, cacheRead: 0.31, cacheWrite: 0 }, callPrefix: "gc_" },
];
const THINKING_LEVELS = ["minimal", "low", "medium", "high", "off", "xhigh"];
const B62 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const B64 = B62 + "+/";

const TOOL_DEFS = [
  { name: "read", description: "Read the contents of a file. Supports text files and images (jpg, png, gif, webp). Images are sent as attachments. For text files, output is truncated to 2000 lines or 50KB (whichever is hit first). Use offset/limit for large files.",
    parameters: { type: "object", properties: { path: { type: "string", description: "Path to the file to read (relative or absolute)" }, offset: { type: "number", description: "Line number to start reading from (1-indexed)" }, limit: { type: "number", description: "Maximum number of lines to read" } }, required: ["path"] } },
  { name: "bash", description: "Execute a bash command in the current working directory. Returns stdout and stderr. Output is truncated to last 2000 lines or 50KB (whichever is hit first). If truncated, full output is saved to a temp file. Optionally provide a timeout in seconds.",
    parameters: { type: "object", properties: { command: { type: "string", description: "Bash command to execute" }, timeout: { type: "number", description: "Timeout in seconds (optional, no default timeout)" } }, required: ["command"] } },
  { name: "edit", description: "Edit a file by replacing exact text. The oldText must match exactly (including whitespace). Use this for precise, surgical edits.",
    parameters: { type: "object", properties: { path: { type: "string", description: "Path to the file to edit (relative or absolute)" }, oldText: { type: "string", description: "Exact text to find and replace (must match exactly)" }, newText: { type: "string", description: "New text to replace the old text with" } }, required: ["path", "oldText", "newText"] } },
  { name: "write", description: "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories.",
    parameters: { type: "object", properties: { path: { type: "string", description: "Path to the file to write (relative or absolute)" }, content: { type: "string", description: "Content to write to the file" } }, required: ["path", "content"] } },
  { name: "grep", description: "Search file contents for a pattern. Returns matching lines with file paths and line numbers. Respects .gitignore.",
    parameters: { type: "object", properties: { pattern: { type: "string", description: "Search pattern (regex or literal string)" }, path: { type: "string", description: "Directory or file to search (default: current directory)" }, glob: { type: "string", description: "Filter files by glob pattern, e.g. '*.ts'" }, ignoreCase: { type: "boolean", description: "Case-insensitive search (default: false)" } }, required: ["pattern"] } },
  { name: "find", description: "Search for files by glob pattern. Returns matching file paths relative to the search directory. Respects .gitignore.",
    parameters: { type: "object", properties: { pattern: { type: "string", description: "Glob pattern to match files, e.g. '*.ts', '**/*.json'" }, path: { type: "string", description: "Directory to search in (default: current directory)" } }, required: ["pattern"] } },
  { name: "ls", description: "List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories.",
    parameters: { type: "object", properties: { path: { type: "string", description: "Directory to list (default: current directory)" }, limit: { type: "number", description: "Maximum number of entries to return (default: 500)" } } } },
];
const EXTRA_TOOLS = [
  { name: "web_fetch", description: "Fetch a URL and return its content as markdown. Use for documentation pages and issue threads.",
    parameters: { type: "object", properties: { url: { type: "string", description: "The URL to fetch" }, maxBytes: { type: "number", description: "Truncate the result after this many bytes" } }, required: ["url"] } },
  { name: "todo", description: "Maintain the session's todo list. Actions: add, done, list, clear.",
    parameters: { type: "object", properties: { action: { type: "string", enum: ["add", "done", "list", "clear"] }, text: { type: "string" }, id: { type: "number" } }, required: ["action"] } },
  { name: "subagent", description: "Delegate a self-contained task to a sub-agent with its own context window and return its final report.",
    parameters: { type: "object", properties: { task: { type: "string", description: "What the sub-agent should do" }, tools: { type: "array", items: { type: "string" } } }, required: ["task"] } },
];

class Content {
  constructor(rng, cwd) {
    this.r = rng;
    this.cwd = cwd;
    const dirs = ["src/billing", "src/ledger", "src/api", "src/api/routes", "src/core", "src/util", "tests", "tests/billing", "scripts", "docs"];
    this.files = [];
    for (let i = 0; i < 90; i++) {
      const d = this.pick(dirs);
      const ext = d.startsWith("docs") ? ".md" : d.startsWith("scripts") ? ".sh" : this.chance(0.25) ? ".py" : ".ts";
      this.files.push(`${d}/${this.camel(2)}${d.startsWith("tests") ? ".test" : ""}${ext}`);
    }
  }
  rand() { return this.r(); }
  int(a, b) { return a + Math.floor(this.r() * (b - a + 1)); }
  chance(p) { return this.r() < p; }
  pick(a) { return a[Math.floor(this.r() * a.length)]; }
  lognormInt(median, sigma, lo, hi) {
    // Box-Muller; sizes in real sessions are roughly log-normal.
    const u = 1 - this.r(), v = this.r();
    const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
    return Math.max(lo, Math.min(hi, Math.round(median * Math.exp(sigma * z))));
  }
  chars(n, alphabet = B62) { let s = ""; for (let i = 0; i < n; i++) s += alphabet[(this.r() * alphabet.length) | 0]; return s; }
  camel(n) {
    let s = this.pick(VERBS);
    for (let i = 1; i < n; i++) { const w = this.pick(WORDS); s += w[0].toUpperCase() + w.slice(1); }
    return s;
  }
  file() { return this.pick(this.files); }
  sentence(min = 6, max = 18) {
    const n = this.int(min, max);
    const w = [];
    for (let i = 0; i < n; i++) {
      const r = this.r();
      w.push(r < 0.06 ? "`" + this.camel(2) + "`" : r < 0.09 ? "`" + this.file() + "`" : this.pick(PROSE));
    }
    let s = w.join(" ");
    if (this.chance(0.04)) s += " (" + this.pick(NON_ASCII) + ")";
    return s[0].toUpperCase() + s.slice(1) + (this.chance(0.1) ? "?" : ".");
  }
  paragraph(targetChars) {
    let s = "";
    while (s.length < targetChars) s += (s ? " " : "") + this.sentence();
    return s;
  }
  codeLine(py) {
    const r = this.r();
    const v = this.pick(WORDS), T = this.pick(TYPES), f = this.camel(2), p = this.pick(WORDS);
    if (this.chance(0.07)) return (py ? "    # " : "  // ") + (this.chance(0.4) ? this.pick(NON_ASCII) : this.pick(COMMENTS));
    if (py) {
      if (r < 0.12) return `def ${f}(self, ${v}: ${T}) -> ${this.pick(TYPES)} | None:`;
      if (r < 0.3) return `    ${v} = self._${f}(${p}, retries=${this.int(1, 5)})`;
      if (r < 0.42) return `    if not ${v}.${p}:`;
      if (r < 0.52) return `        raise ValueError(f"${p} missing for {${v}.id!r}")`;
      if (r < 0.62) return `    return ${T}(${p}=${v}.${p}, total=round(${v}.total, 2))`;
      if (r < 0.7) return `from .${p} import ${T}, ${this.pick(TYPES)}`;
      if (r < 0.8) return "";
      return `    for ${p} in ${v}.${this.pick(WORDS)}s:`;
    }
    if (r < 0.1) return `export async function ${f}(${v}: ${T}, opts: ${this.pick(TYPES)}Options = {}): Promise<${this.pick(TYPES)}> {`;
    if (r < 0.28) return `  const ${v} = await this.${f}(${p}.${this.pick(WORDS)}, { retries: ${this.int(1, 5)} });`;
    if (r < 0.38) return `  if (!${v}.${p}) throw new Error(\`${p} missing for \${${v}.id}\`);`;
    if (r < 0.48) return `  return { ...${v}, ${p}: Math.round(${v}.${p} * 100) / 100 };`;
    if (r < 0.56) return `import { ${T}, ${this.pick(TYPES)} } from "./${this.pick(WORDS)}";`;
    if (r < 0.64) return "}";
    if (r < 0.72) return "";
    if (r < 0.8) return `  for (const ${p} of ${v}.${this.pick(WORDS)}s) {`;
    return `    ${v}.${p} = ${this.pick(["null", "undefined", "0", "[]", `"${this.pick(WORDS)}"`, `${this.int(1, 9999)}`])};`;
  }
  code(targetChars, py = this.chance(0.25)) {
    const lines = [];
    let n = 0;
    while (n < targetChars) { const l = this.codeLine(py); lines.push(l); n += l.length + 1; }
    return lines.join("\n");
  }
  bashCommand() {
    return this.pick([
      `npm test -- ${this.file().replace(/\.\w+$/, "")}`, "npx tsc --noEmit -p .", `git diff --stat`, `git log --oneline -n ${this.int(5, 30)}`,
      `rg -n "${this.camel(2)}" src`, `pytest -q tests/${this.pick(WORDS)} -x`, "npm run lint", `cat ${this.file()} | head -n ${this.int(20, 120)}`,
      `ls -la ${this.pick(["src", "src/billing", "tests", "scripts"])}`, `node scripts/${this.pick(WORDS)}.mjs --dry-run`,
    ]);
  }
  bashOutput(target) {
    const kind = this.int(0, 3);
    const lines = [];
    let n = 0;
    const push = (l) => { lines.push(l); n += l.length + 1; };
    if (kind === 0) {
      push(`> ${this.pick(WORDS)}@1.${this.int(0, 9)}.${this.int(0, 20)} test`);
      push("> vitest run");
      push("");
      while (n < target - 200) {
        const ok = this.chance(0.92);
        push(` ${ok ? "✓" : "✗"} ${this.file()} (${this.int(1, 40)} tests) ${this.int(3, 900)}ms`);
        if (!ok) { push(`   → expected ${this.int(0, 999)} to equal ${this.int(0, 999)}`); push(`     at ${this.camel(2)} (${this.file()}:${this.int(1, 400)}:${this.int(1, 60)})`); }
      }
      push("");
      push(` Test Files  ${this.int(0, 2)} failed | ${this.int(10, 60)} passed (${this.int(10, 62)})`);
      push(`      Tests  ${this.int(0, 4)} failed | ${this.int(100, 900)} passed (${this.int(100, 904)})`);
      push(`   Duration  ${(this.r() * 20).toFixed(2)}s`);
    } else if (kind === 1) {
      while (n < target) push(`${this.file()}(${this.int(1, 500)},${this.int(1, 80)}): error TS${this.int(2000, 2800)}: Type '${this.pick(TYPES)}' is not assignable to type '${this.pick(TYPES)}'.`);
    } else if (kind === 2) {
      while (n < target) push(`${this.chars(7, HEX)} ${this.sentence(4, 10).slice(0, -1).toLowerCase()}`);
    } else {
      while (n < target) push(this.codeLine(false));
    }
    return lines.join("\n");
  }
  bashShort() {
    const r = this.r();
    if (r < 0.3) return "(no output)";
    if (r < 0.55) return ` ${this.int(1, 9)} files changed, ${this.int(1, 300)} insertions(+), ${this.int(0, 200)} deletions(-)`;
    if (r < 0.8) return `${this.chars(7, HEX)} ${this.sentence(3, 8).slice(0, -1).toLowerCase()}\n${this.chars(7, HEX)} ${this.sentence(3, 8).slice(0, -1).toLowerCase()}`;
    return `✓ ${this.int(10, 400)} passed (${(this.r() * 9).toFixed(2)}s)`;
  }
  grepOutput(target) {
    const lines = [];
    let n = 0;
    while (n < target) { const l = `${this.file()}:${this.int(1, 900)}:${this.codeLine(this.chance(0.2))}`; lines.push(l); n += l.length + 1; }
    return lines.join("\n");
  }
  lsOutput(target) {
    const lines = [];
    let n = 0;
    while (n < target) { const l = this.chance(0.2) ? `${this.pick(WORDS)}/` : `${this.camel(2)}.${this.pick(["ts", "py", "json", "md"])}`; lines.push(l); n += l.length + 1; }
    return lines.sort().join("\n");
  }
  diff(oldText, newText, line) {
    const o = oldText.split("\n").map((l) => `-${String(line).padStart(4)} ${l}`);
    const nw = newText.split("\n").map((l) => `+${String(line).padStart(4)} ${l}`);
    return [` ${String(line - 1).padStart(4)} ${this.codeLine(false)}`, ...o, ...nw, ` ${String(line + 1).padStart(4)} ${this.codeLine(false)}`].join("\n");
  }
  summary(kind, readFiles, modifiedFiles) {
    const bullets = (k, prefix = "- ") => Array.from({ length: k }, () => prefix + this.sentence(6, 16)).join("\n");
    const body = kind === "compaction"
      ? `## Goal\n${this.sentence(10, 24)}\n\n## Constraints & Preferences\n${bullets(this.int(2, 4))}\n\n## Progress\n### Done\n${bullets(this.int(4, 9), "- [x] ")}\n\n### In Progress\n${bullets(this.int(1, 3), "- [ ] ")}\n\n### Blocked\n- ${this.chance(0.5) ? "(none)" : this.sentence()}\n\n## Key Decisions\n${bullets(this.int(2, 5), "- **" + this.camel(2) + "**: ")}\n\n## Next Steps\n${Array.from({ length: this.int(2, 5) }, (_, i) => `${i + 1}. ${this.sentence()}`).join("\n")}\n\n## Critical Context\n${bullets(this.int(2, 5))}`
      : `## Goal\n${this.sentence(8, 20)}\n\n## Progress\n### Done\n${bullets(this.int(1, 4), "- [x] ")}\n\n## Key Decisions\n${bullets(this.int(1, 3))}\n\n## Next Steps\n1. ${this.sentence()}`;
    return `${body}\n\n<read-files>\n${readFiles.join("\n")}\n</read-files>\n\n<modified-files>\n${modifiedFiles.join("\n")}\n</modified-files>`;
  }
  usage(model, input, output, cacheRead, cacheWrite) {
    const u = { input, output, cacheRead, cacheWrite, totalTokens: input + output + cacheRead + cacheWrite, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
    if (model.provider !== "anthropic") u.reasoning = Math.min(output, this.int(0, 600));
    // Same arithmetic as pi-ai calculateCost(), so the floats look like Pi's (0.000018, 0.0040350000000000004, ...).
    u.cost.input = (model.cost.input / 1000000) * u.input;
    u.cost.output = (model.cost.output / 1000000) * u.output;
    u.cost.cacheRead = (model.cost.cacheRead / 1000000) * u.cacheRead;
    u.cost.cacheWrite = (model.cost.cacheWrite * u.cacheWrite) / 1000000;
    u.cost.total = u.cost.input + u.cost.output + u.cost.cacheRead + u.cost.cacheWrite;
    u.cost.totalFromProvider = false;
    return u;
  }
}

// ---------------------------------------------------------------------------------------------------------
// The session generator: drives a reference SessionManager through a long, realistic session
// ---------------------------------------------------------------------------------------------------------
const STOP = Symbol("stop");

// How many of each occasional event a session of n entries gets (exact at 20,000: 5 compactions, 20 context
// edits, 30 labels, 4 branches, 2 branches with summary, 2 later system patches). Stochastic rounding keeps the
// expected rate for small sessions.
function eventCounts(n, c) {
  const sr = (x) => Math.floor(x + c.rand());
  const per = (k) => (n * k) / 20000;
  if (n >= 1000) {
    return { compaction: Math.max(1, Math.round(per(5))), contextEdit: Math.max(2, Math.round(per(20))), label: Math.max(3, Math.round(per(30))),
      branch: Math.max(1, Math.round(per(4))), branchSummary: Math.max(1, Math.round(per(2))), systemPatch: Math.max(1, Math.round(per(2))), rename: 1 };
  }
  return { compaction: n >= 120 ? sr(0.35) : 0, contextEdit: sr(per(20) * 4), label: sr(per(30) * 4), branch: sr(n / 300), branchSummary: sr(n / 600),
    systemPatch: sr(n / 400), rename: 0 };
}

function spread(n, count, c, lo = 0.05, hi = 0.97) {
  const out = [];
  for (let i = 0; i < count; i++) out.push(Math.floor(n * (lo + (hi - lo) * (i + 0.3 + 0.4 * c.rand()) / count)));
  return out;
}

class SessionGen {
  constructor(sm, n, c, o) {
    this.sm = sm; this.n = n; this.c = c; this.o = o;
    this.path = []; // the active branch as the generator sees it: {id, kind, size}
    this.lastCompactionIdx = -1;
    this.model = MODELS[0];
    this.thinking = "medium";
    this.ctxTokens = 14000;
    this.edited = new Set();
    this.labeled = [];
    this.readFiles = new Set();
    this.modifiedFiles = new Set();
    this.turnNo = 0;
    const k = eventCounts(n, c);
    this.counts = k;
    this.queue = [];
    const sched = (type, at) => at.forEach((x) => this.queue.push({ type, at: x }));
    sched("compaction", Array.from({ length: k.compaction }, (_, i) => Math.floor(n * (i + 1) / (k.compaction + 1) + (c.rand() - 0.5) * n * 0.04 / Math.max(1, k.compaction))));
    sched("contextEdit", spread(n, k.contextEdit, c));
    sched("label", spread(n, k.label, c, 0.02, 0.99));
    sched("branch", spread(n, k.branch, c, 0.1, 0.95));
    sched("branchSummary", spread(n, k.branchSummary, c, 0.15, 0.9));
    sched("systemPatch", spread(n, k.systemPatch, c, 0.2, 0.8));
    if (k.rename) sched("rename", [Math.floor(n * 0.6)]);
    this.queue.sort((a, b) => a.at - b.at);
  }

  count() { return this.sm.getEntryCount(); }
  tick(ms) { clock.now += Math.max(1, Math.round(ms)); }

  add(kind, size, fn) {
    if (this.count() >= this.n) throw STOP;
    const r = fn();
    const id = typeof r === "string" ? r : r.id;
    this.path.push({ id, kind, size });
    this.ctxTokens += Math.round(size / 3.6);
    return id;
  }

  run() {
    try {
      this.start();
      while (true) {
        while (this.queue.length && this.queue[0].at <= this.count()) this.event(this.queue.shift());
        this.occasional();
        this.turn();
      }
    } catch (e) {
      if (e !== STOP) throw e;
    }
  }

  start() {
    const c = this.c;
    const sections = {
      environment: `<environment>\nWorking directory: ${this.o.cwd}\nPlatform: linux\nShell: bash\nToday: 2025-06-02\nGit branch: ${c.pick(["main", "feat/async-billing", "fix/rounding"])}\n</environment>`,
      "project-context": `<project_context path="AGENTS.md">\n# ${basename(this.o.cwd)}\n\n${Array.from({ length: c.int(6, 12) }, () => "- " + c.sentence()).join("\n")}\n\n## Commands\n- test: \`npm test\`\n- typecheck: \`npx tsc --noEmit\`\n- lint: \`npm run lint\`\n</project_context>`,
      skills: `<skills>\n${Array.from({ length: c.int(3, 6) }, () => `<skill name="${c.camel(2)}">${c.sentence()}</skill>`).join("\n")}\n</skills>`,
    };
    const base = "You are an expert coding assistant operating inside pi, a coding agent harness. You help users by reading files, executing commands, editing code, and writing new files.\n\nGuidelines:\n- Use bash for file operations like ls, rg, find\n- Use read to examine files before editing\n- Use edit for precise changes (old text must match exactly)\n- Use write only for new files or complete rewrites\n- Be concise in your responses\n- Show file paths clearly when working with files";
    this.tools = TOOL_DEFS.map((t) => t.name);
    const sysTs = clock.now;
    this.add("system", 6000, () => this.sm.appendMessage({ role: "system", content: base, sections, toolsAdded: TOOL_DEFS, timestamp: sysTs }));
    this.tick(3);
    this.add("other", 120, () => this.sm.appendModelChange(this.model.provider, this.model.id));
    this.add("other", 110, () => this.sm.appendThinkingLevelChange(this.thinking));
  }

  occasional() {
    const c = this.c;
    if (this.turnNo > 0 && c.chance(0.004)) {
      this.model = c.pick(MODELS);
      this.tick(c.int(2000, 20000));
      this.add("other", 120, () => this.sm.appendModelChange(this.model.provider, this.model.id));
    }
    if (this.turnNo > 0 && c.chance(0.005)) {
      this.thinking = c.pick(THINKING_LEVELS);
      this.tick(c.int(1000, 9000));
      this.add("other", 110, () => this.sm.appendThinkingLevelChange(this.thinking));
    }
    if (c.chance(0.02)) {
      const todo = c.chance(0.5);
      const data = todo
        ? { items: Array.from({ length: c.int(1, 6) }, (_, i) => ({ id: i + 1, text: c.sentence(4, 9), done: c.chance(0.5) })) }
        : { enabled: c.chance(0.5), mode: c.pick(["plan", "act"]), updatedAt: clock.now };
      this.add("other", 250, () => this.sm.appendCustomEntry(todo ? "todo-state" : "plan-mode", data));
    }
    if (c.chance(0.012)) {
      const dirty = c.int(0, 7);
      const text = `On branch ${c.pick(["main", "feat/async-billing"])}\nChanges not staged for commit:\n${Array.from({ length: dirty }, () => `\tmodified:   ${c.file()}`).join("\n")}`;
      this.add("custom_message", text.length + 200, () => this.sm.appendCustomMessageEntry(c.pick(["git-status", "ci-result", "reminder"]), c.chance(0.8) ? text : [{ type: "text", text }], c.chance(0.7), { dirty, head: c.chars(7, HEX) }));
    }
  }

  userMessage() {
    const c = this.c;
    this.tick(c.lognormInt(40000, 1.2, 3000, 1800000));
    let text = c.paragraph(c.lognormInt(130, 0.8, 20, 1200));
    if (c.chance(0.08)) text += "\n\n```\n" + c.code(c.int(200, 900)) + "\n```";
    if (c.chance(0.05)) text += "\n\n" + c.pick(NON_ASCII);
    const ts = clock.now;
    const content = c.chance(0.85) ? text : [{ type: "text", text }];
    this.add("user", text.length + 120, () => this.sm.appendMessage({ role: "user", content, timestamp: ts }));
  }

  assistantMessage(final) {
    const c = this.c;
    const m = this.model;
    const start = clock.now;
    const content = [];
    let size = 600;
    if (this.thinking !== "off" && c.chance(final ? 0.6 : 0.35)) {
      const thinking = c.paragraph(c.lognormInt(50, 0.8, 20, 2500));
      const block = { type: "thinking", thinking };
      if (m.provider === "anthropic") block.thinkingSignature = c.chars(c.int(50, 150), B64);
      content.push(block);
      size += thinking.length + (block.thinkingSignature?.length ?? 0);
    }
    if (final || c.chance(0.25)) {
      const text = final ? c.paragraph(c.lognormInt(130, 0.7, 60, 3000)) + (c.chance(0.2) ? "\n\n```ts\n" + c.code(c.int(150, 700), false) + "\n```" : "") : c.sentence(6, 20);
      content.push({ type: "text", text });
      size += text.length;
    }
    const calls = [];
    if (!final) {
      const k = c.chance(0.6) ? 1 : c.chance(0.62) ? 2 : c.int(3, 4);
      for (let i = 0; i < k; i++) {
        const name = this.pickTool();
        const args = this.toolArgs(name);
        const call = { type: "toolCall", id: m.callPrefix + c.chars(m.callPrefix === "toolu_01" ? 22 : 24), name, arguments: args };
        content.push(call);
        calls.push(call);
        size += JSON.stringify(args).length + 60;
      }
    }
    const output = c.lognormInt(220, 0.9, 8, 8000);
    const cacheRead = Math.min(this.ctxTokens, 185000) + c.int(0, 400);
    const usage = c.usage(m, c.int(1, 12), output, cacheRead, c.int(80, 3200));
    const dur = c.lognormInt(9000, 0.6, 900, 180000);
    this.tick(dur);
    const msg = { role: "assistant", content, api: m.api, provider: m.provider, model: m.id };
    if (c.chance(0.9)) msg.responseId = (m.provider === "anthropic" ? "msg_01" : "resp_") + c.chars(22);
    if (this.thinking !== "off") msg.thinkingLevel = this.thinking;
    msg.usage = usage;
    msg.stopReason = final ? "stop" : "toolUse";
    msg.timestamp = start;
    msg.durationMs = dur;
    this.add("assistant", size, () => this.sm.appendMessage(msg));
    return calls;
  }

  pickTool() {
    const r = this.c.rand();
    const avail = this.tools;
    const name = r < 0.19 ? "read" : r < 0.51 ? "bash" : r < 0.79 ? "edit" : r < 0.87 ? "grep" : r < 0.91 ? "write" : r < 0.95 ? "ls" : r < 0.98 ? "find" : this.c.pick(avail);
    return avail.includes(name) ? name : "bash";
  }

  toolArgs(name) {
    const c = this.c;
    switch (name) {
      case "read": { const a = { path: c.file() }; if (c.chance(0.2)) { a.offset = c.int(1, 400); a.limit = c.int(40, 200); } this.readFiles.add(a.path); return a; }
      case "bash": return c.chance(0.3) ? { command: c.bashCommand(), timeout: c.pick([60, 120, 300]) } : { command: c.bashCommand() };
      case "edit": { const path = c.file(); this.modifiedFiles.add(path); return { path, oldText: c.code(c.int(10, 80), path.endsWith(".py")), newText: c.code(c.int(10, 100), path.endsWith(".py")) }; }
      case "write": { const path = c.file(); this.modifiedFiles.add(path); return { path, content: c.code(c.lognormInt(500, 0.6, 150, 6000), path.endsWith(".py")) }; }
      case "grep": return c.chance(0.5) ? { pattern: c.camel(2), path: "src" } : { pattern: `${c.pick(WORDS)}\\w+\\(`, glob: "*.ts", ignoreCase: c.chance(0.3) };
      case "find": return { pattern: `**/*${c.pick(WORDS)}*.${c.pick(["ts", "py"])}` };
      case "ls": return { path: c.pick(["src", "src/billing", "tests", "."]) };
      case "web_fetch": return { url: `https://docs.example.com/${c.pick(WORDS)}/${c.pick(WORDS)}` };
      case "todo": return { action: c.pick(["add", "done", "list"]), text: c.sentence(3, 8) };
      default: return { task: c.sentence(8, 20), tools: ["read", "bash"] };
    }
  }

  toolResult(call) {
    const c = this.c;
    const a = call.arguments;
    let text;
    let details;
    let isError = false;
    switch (call.name) {
      case "read": text = c.code(c.lognormInt(1300, 0.4, 200, 12000), String(a.path).endsWith(".py")); break;
      case "bash": text = c.chance(0.45) ? c.bashShort() : c.bashOutput(c.lognormInt(380, 0.8, 60, 12000)); if (c.chance(0.25)) details = { exitCode: c.pick([0, 1, 2]) }; break;
      case "edit": {
        const line = c.int(2, 400);
        text = `Successfully replaced text in ${a.path}.`;
        details = { diff: c.diff(a.oldText, a.newText, line), firstChangedLine: line };
        break;
      }
      case "write": text = `Successfully wrote ${Buffer.byteLength(a.content)} bytes to ${a.path}`; break;
      case "grep": text = c.grepOutput(c.lognormInt(450, 0.6, 80, 9000)); break;
      case "find": case "ls": text = c.lsOutput(c.lognormInt(250, 0.6, 40, 4000)); break;
      default: text = c.paragraph(c.lognormInt(1800, 0.5, 200, 8000));
    }
    if (c.chance(0.04)) { isError = true; text = `Error: ${c.pick(["ENOENT: no such file or directory", "Could not find the exact text", "Command exited with code 1", "Timed out after 120s"])}\n${text.slice(0, 400)}`; }
    const dur = c.lognormInt(800, 1.4, 5, 300000);
    this.tick(dur);
    const msg = { role: "toolResult", toolCallId: call.id, toolName: call.name, content: [{ type: "text", text }] };
    if (details) msg.details = details;
    msg.isError = isError;
    msg.timestamp = clock.now;
    msg.durationMs = dur;
    this.add("toolResult", text.length + 200 + (details?.diff?.length ?? 0), () => this.sm.appendMessage(msg));
  }

  turn() {
    const c = this.c;
    this.turnNo++;
    this.userMessage();
    const rounds = Math.min(14, Math.floor(-Math.log(1 - c.rand()) * 3.2));
    for (let i = 0; i < rounds; i++) {
      const calls = this.assistantMessage(false);
      for (const call of calls) this.toolResult(call);
      if (c.chance(0.01)) {
        const kind = c.pick(["cache_warm", "compaction_probe"]);
        const u = c.usage(this.model, c.int(1, 8), c.int(1, 20), Math.min(this.ctxTokens, 185000), 0);
        this.add("other", 450, () => this.sm.appendUsage(kind, this.model.provider, this.model.id, u, c.chance(0.3) ? "extension override" : undefined));
      }
    }
    this.assistantMessage(true);
    if (this.turnNo === 1 && this.o.name) {
      this.tick(200);
      this.add("other", 150, () => this.sm.appendSessionInfo(this.o.name));
    }
  }

  // Index (in this.path) of a candidate after the latest compaction, between back entries from the end.
  findBack(minBack, maxBack, pred) {
    const end = this.path.length - 1;
    const lo = Math.max(this.lastCompactionIdx + 1, end - maxBack);
    const start = end - this.c.int(minBack, maxBack);
    for (let i = start; i >= lo; i--) if (i >= 0 && pred(this.path[i], i)) return i;
    for (let i = Math.min(end, start + 1); i <= end - minBack && i >= lo; i++) if (pred(this.path[i], i)) return i;
    return -1;
  }

  event(ev) {
    const c = this.c;
    const sm = this.sm;
    switch (ev.type) {
      case "compaction": {
        let i = this.findBack(25, 70, (p) => p.kind === "user");
        if (i < 0) i = this.findBack(10, 40, (p) => p.kind !== "system");
        if (i < 0) return;
        const readFiles = [...this.readFiles].slice(-25).sort();
        const modifiedFiles = [...this.modifiedFiles].slice(-15).sort();
        const summary = c.summary("compaction", readFiles, modifiedFiles);
        const tokensBefore = Math.min(this.ctxTokens, 199000) - c.int(0, 4000);
        const usage = c.usage(this.model, c.int(8000, 40000), c.int(800, 3000), c.int(0, 120000), 0);
        this.tick(c.lognormInt(45000, 0.4, 8000, 200000));
        const idx = this.path.length;
        this.add("compaction", summary.length + 6000, () => sm.appendCompaction(summary, this.path[i].id, tokensBefore, { readFiles, modifiedFiles }, false, usage));
        this.lastCompactionIdx = idx;
        this.ctxTokens = 6000 + Math.round(summary.length / 3.6) + this.path.slice(i).reduce((s, p) => s + Math.round(p.size / 3.6), 0);
        this.readFiles.clear();
        this.modifiedFiles.clear();
        return;
      }
      case "contextEdit": {
        const editable = (p) => (p.kind === "toolResult" || p.kind === "assistant" || p.kind === "user") && !this.edited.has(p.id);
        let i = this.findBack(6, 400, (p) => editable(p) && (p.kind === "toolResult" ? p.size > 1500 : c.chance(0.15)));
        if (i < 0) i = this.findBack(1, 400, editable);
        if (i < 0) return;
        const target = this.path[i];
        this.edited.add(target.id);
        const replacement = c.chance(0.25) ? null
          : target.kind === "toolResult" ? { content: `[output elided by context-trim: ${target.size} bytes]` }
          : { content: c.chance(0.5) ? c.sentence() : [{ type: "text", text: c.sentence() }] };
        this.tick(c.int(200, 3000));
        this.add("other", 200, () => sm.appendContextEdit(target.id, replacement));
        return;
      }
      case "label": {
        if (this.labeled.length > 4 && c.chance(0.05)) {
          const id = this.labeled.splice(c.int(0, this.labeled.length - 1), 1)[0];
          if (this.path.some((p) => p.id === id) || sm.getEntry(id)) {
            this.add("other", 120, () => sm.appendLabelChange(id, undefined));
            return;
          }
        }
        const i = this.findBack(1, 120, (p) => p.kind === "user" || (p.kind === "assistant" && c.chance(0.2)));
        if (i < 0) return;
        const id = this.path[i].id;
        const label = c.pick(["checkpoint", "tests green", "before refactor", "good state", "bisect start", "release candidate", "✓ reviewed", "spike: async ledger", "try again from here"]) + (c.chance(0.4) ? ` #${c.int(1, 99)}` : "");
        this.tick(c.int(500, 5000));
        this.add("other", 140, () => sm.appendLabelChange(id, label));
        this.labeled.push(id);
        return;
      }
      case "branch": {
        // Re-edit a recent user prompt: move the leaf to that prompt's parent, the next turn continues from there.
        const i = this.findBack(8, 60, (p, j) => p.kind === "user" && j > 0);
        if (i < 0) return;
        sm.branch(this.path[i - 1].id);
        this.path.length = i;
        this.tick(c.int(5000, 60000));
        return;
      }
      case "branchSummary": {
        const i = this.findBack(15, 80, (p, j) => p.kind === "user" && j > 0);
        if (i < 0) return;
        const target = this.path[i - 1].id;
        const readFiles = [...this.readFiles].slice(-8).sort();
        const modifiedFiles = [...this.modifiedFiles].slice(-5).sort();
        const summary = c.summary("branch", readFiles, modifiedFiles);
        const usage = c.chance(0.7) ? c.usage(this.model, c.int(3000, 20000), c.int(300, 1500), 0, 0) : undefined;
        this.path.length = i;
        this.tick(c.lognormInt(20000, 0.5, 3000, 120000));
        this.add("other", summary.length + 200, () => sm.branchWithSummary(target, summary, { readFiles, modifiedFiles }, false, usage));
        return;
      }
      case "systemPatch": {
        const msg = { role: "system", content: "" };
        const r = c.rand();
        if (r < 0.4) {
          msg.sections = { environment: `<environment>\nWorking directory: ${this.o.cwd}\nPlatform: linux\nShell: bash\nToday: 2025-06-0${c.int(3, 9)}\nGit branch: ${c.pick(["main", "feat/async-billing", "fix/rounding"])}\n</environment>` };
        } else if (r < 0.75) {
          const extra = EXTRA_TOOLS.filter((t) => !this.tools.includes(t.name));
          const t = extra.length ? c.pick(extra) : EXTRA_TOOLS[0];
          msg.content = `The ${t.name} tool is now available.`;
          msg.toolsAdded = [t];
          if (!this.tools.includes(t.name)) this.tools.push(t.name);
        } else {
          msg.content = c.paragraph(200);
          msg.sections = { skills: null };
          if (this.tools.includes("find")) { msg.toolsRemoved = [{ name: "find" }]; this.tools = this.tools.filter((x) => x !== "find"); }
        }
        msg.timestamp = clock.now;
        this.add("system", 600, () => sm.appendMessage(msg));
        return;
      }
      case "rename": {
        this.add("other", 150, () => sm.appendSessionInfo(this.o.rename ?? `${this.o.name} (part 2)`));
        return;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// Writing files
// ---------------------------------------------------------------------------------------------------------
function writeLines(file, header, entries) {
  const fd = openSync(file, "w");
  try {
    let buf = [];
    let n = 0;
    const flush = () => { if (buf.length) { writeSync(fd, buf.join("")); buf = []; n = 0; } };
    for (const e of [header, ...entries]) {
      const line = `${JSON.stringify(e)}\n`;
      buf.push(line);
      n += line.length;
      if (n > 4 << 20) flush();
    }
    flush();
  } finally {
    closeSync(fd);
  }
}

// Generate one session of n entries into outFile (or keep Pi's own file name in dir when outFile is null).
// A UUIDv7 (time-ordered, as Pi's uuidv7()) from the session's own seeded stream. Passed as the `id` option
// (Pi's --session-id path) so a session's bytes do not depend on what else this process generated before it.
function sessionUuidV7(ms) {
  const b = new Uint8Array(16);
  for (let i = 0; i < 16; i++) b[i] = (idRng() * 256) | 0;
  for (let i = 5; i >= 0; i--) b[i] = Math.floor(ms / 2 ** ((5 - i) * 8)) & 0xff;
  b[6] = 0x70 | (b[6] & 0x0f);
  b[8] = 0x80 | (b[8] & 0x3f);
  const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

function makeSession({ n, seed, cwd, dir, outFile, name, rename, startMs, memory }) {
  clock.now = startMs;
  idRng = makeRng(seed ^ 0x5eed);
  const id = sessionUuidV7(startMs);
  const c = new Content(makeRng(seed), cwd);
  let sm;
  let tmpDir;
  if (memory) {
    sm = SessionManager.inMemory(cwd, { id });
  } else {
    tmpDir = outFile ? join(dirname(outFile), `.tmp-${basename(outFile)}`) : null;
    if (tmpDir) { rmSync(tmpDir, { recursive: true, force: true }); mkdirSync(tmpDir, { recursive: true }); }
    sm = SessionManager.create(cwd, tmpDir ?? dir, { id });
  }
  new SessionGen(sm, n, c, { cwd, name, rename }).run();
  let file;
  if (memory) {
    file = outFile ?? join(dir, `${sm.getHeader().timestamp.replace(/[:.]/g, "-")}_${sm.getSessionId()}.jsonl`);
    writeLines(file, sm.getHeader(), sm.getEntries());
  } else {
    const written = sm.getSessionFile();
    if (outFile) { renameSync(written, outFile); rmSync(tmpDir, { recursive: true, force: true }); file = outFile; } else file = written;
  }
  return { file, entries: sm.getEntryCount() };
}

// ---------------------------------------------------------------------------------------------------------
// Stats (read back with the reference)
// ---------------------------------------------------------------------------------------------------------
function fileStats(file, withReference = true) {
  const text = readFileSync(file, "utf8");
  const types = {};
  const roles = {};
  let lines = 0;
  let nonAscii = 0;
  for (const line of text.split("\n")) {
    if (!line) continue;
    lines++;
    const e = JSON.parse(line);
    types[e.type] = (types[e.type] ?? 0) + 1;
    if (e.type === "message") roles[e.message.role] = (roles[e.message.role] ?? 0) + 1;
  }
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 127) nonAscii++;
  const out = { file, bytes: statSync(file).size, lines, entries: lines - 1, types, messageRoles: roles, nonAsciiChars: nonAscii };
  if (withReference) {
    const sm = SessionManager.open(file);
    const branch = sm.getBranch();
    const ctx = sm.buildSessionContext();
    const onPath = {};
    for (const e of branch) onPath[e.type] = (onPath[e.type] ?? 0) + 1;
    out.leafId = sm.getLeafId();
    out.leafPathLength = branch.length;
    out.leafPathTypes = onPath;
    out.contextEntriesAtLeaf = sm.buildContextEntries().length;
    out.contextMessagesAtLeaf = ctx.messages.length;
    out.contextModel = ctx.model;
    out.thinkingLevel = ctx.thinkingLevel;
    out.sessionName = sm.getSessionName() ?? null;
    out.labelsActive = sm.getEntries().filter((e) => sm.getLabel(e.id) !== undefined).length;
    const tree = sm.getTree();
    let leaves = 0;
    const stack = [...tree];
    while (stack.length) { const nd = stack.pop(); if (nd.children.length === 0) leaves++; else stack.push(...nd.children); }
    out.treeLeaves = leaves;
    if (statSync(file).size !== out.bytes) throw new Error(`opening ${file} changed it`);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------------------
mkdirSync(opts.out, { recursive: true });
const summary = { pi_version: piVersion, node: process.version, seed: opts.seed, out: opts.out, generated: {} };
const LARGE_NAME = "Migrate billing service to async I/O";
const t00 = performance.now();

if (want("large") && opts.large > 0) {
  const t0 = performance.now();
  const r = makeSession({ n: opts.large, seed: opts.seed * 1000 + 1, cwd: "/home/dev/projects/billing-service", outFile: join(opts.out, "large.jsonl"), name: LARGE_NAME,
    rename: "Billing service: async I/O + rounding fixes", startMs: Date.UTC(2025, 5, 2, 9, 14, 3, 118), memory: opts.large > opts.memoryAbove });
  const genMs = performance.now() - t0;
  summary.generated.large = { ...fileStats(r.file), generationMs: Math.round(genMs) };
}

if (want("scale")) {
  summary.generated.scale = {};
  for (const n of opts.entries) {
    const t0 = performance.now();
    const file = join(opts.out, `scale-${n}.jsonl`);
    // Same generator and seed as large.jsonl: scale-20000 is the same session as large.jsonl.
    makeSession({ n, seed: opts.seed * 1000 + 1, cwd: "/home/dev/projects/billing-service", outFile: file, name: LARGE_NAME,
      rename: "Billing service: async I/O + rounding fixes", startMs: Date.UTC(2025, 5, 2, 9, 14, 3, 118), memory: n > opts.memoryAbove });
    const genMs = performance.now() - t0;
    summary.generated.scale[basename(file, ".jsonl")] = { ...fileStats(file), generationMs: Math.round(genMs) };
  }
}

if (want("dir300") && opts.dir300 > 0) {
  const t0 = performance.now();
  const dir = join(opts.out, "dir300");
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const cwds = ["/home/dev/projects/billing-service", "/home/dev/projects/webapp", "/home/dev/src/pisession", "/srv/tools/infra"];
  const meta = makeRng(opts.seed * 7919 + 3);
  const names = ["Fix flaky ledger test", "Add CSV export", "Upgrade to Node 20", "Investigate slow /orders", "Refactor auth middleware", "Write release notes ✨", "Rounding bug in invoices", "Cache warmer", "Docs: API overview", "Migrate to pnpm"];
  let start = Date.UTC(2025, 3, 1, 8, 0, 0, 0);
  const byCwd = {};
  let named = 0;
  let totalEntries = 0;
  for (let i = 0; i < opts.dir300; i++) {
    const n = 20 + Math.floor(meta() * 181);
    const cwd = cwds[Math.min(cwds.length - 1, Math.floor(meta() * meta() * cwds.length * 1.6))];
    const name = meta() < 0.4 ? names[Math.floor(meta() * names.length)] : undefined;
    start += Math.floor(600000 + meta() * 5 * 3600000);
    const r = makeSession({ n, seed: opts.seed * 1000 + 100 + i, cwd, dir, outFile: null, name, startMs: start, memory: false });
    byCwd[cwd] = (byCwd[cwd] ?? 0) + 1;
    if (name) named++;
    totalEntries += r.entries;
  }
  const files = readdirSync(dir).filter((f) => f.endsWith(".jsonl"));
  const bytes = files.reduce((s, f) => s + statSync(join(dir, f)).size, 0);
  summary.generated.dir300 = { dir, files: files.length, bytes, entries: totalEntries, named, sessionsByCwd: byCwd, listCwd: cwds[0], generationMs: Math.round(performance.now() - t0) };
}

// The catalog benchmark: an agent dir holding --catalog N sessions (about 330 KB each: 1 GB for 3,000) over a dozen
// projects, laid out as Pi lays them out (sessions/--<cwd>--/<timestamp>_<id>.jsonl), for listAll and the catalog.
if (opts.catalog > 0 && (!opts.only || opts.only.has("catalog"))) {
  const t0 = performance.now();
  const root = join(opts.out, `catalog-${opts.catalog}`);
  rmSync(root, { recursive: true, force: true });
  const cwds = Array.from({ length: 12 }, (_, i) => i % 3 === 2 ? `/srv/tools/tool-${i}` : `/home/dev/projects/project-${i}`);
  const meta = makeRng(opts.seed * 104729 + 11);
  const names = ["Fix flaky ledger test", "Add CSV export", "Upgrade to Node 20", "Investigate slow /orders", "Cache warmer", "Migrate to pnpm"];
  let start = Date.UTC(2024, 0, 2, 8, 0, 0, 0);
  let totalEntries = 0;
  for (let i = 0; i < opts.catalog; i++) {
    const n = 60 + Math.floor(meta() * 661);
    const cwd = cwds[Math.floor(meta() * meta() * cwds.length)];
    const dir = join(root, "sessions", `--${cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`);
    mkdirSync(dir, { recursive: true });
    const name = meta() < 0.3 ? names[Math.floor(meta() * names.length)] : undefined;
    start += Math.floor(600000 + meta() * 5 * 3600000);
    const r = makeSession({ n, seed: opts.seed * 100000 + 7 + i, cwd, dir, outFile: null, name, startMs: start, memory: false });
    totalEntries += r.entries;
  }
  let files = 0, bytes = 0;
  for (const d of readdirSync(join(root, "sessions"))) {
    for (const f of readdirSync(join(root, "sessions", d))) { files++; bytes += statSync(join(root, "sessions", d, f)).size; }
  }
  summary.generated[`catalog-${opts.catalog}`] = { agentDir: root, files, bytes, entries: totalEntries, generationMs: Math.round(performance.now() - t0) };
}

summary.totalMs = Math.round(performance.now() - t00);
const summaryText = JSON.stringify(summary, null, 2) + "\n";
writeFileSync(join(opts.out, "summary.json"), summaryText);
process.stdout.write(summaryText);
