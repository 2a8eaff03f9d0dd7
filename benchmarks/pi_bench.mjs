#!/usr/bin/env node
// Times the REFERENCE Pi SessionManager (npm @earendil-works/pi-coding-agent, installed by
// shared/pi-oracle/setup.sh into PI_ORACLE_HOME, default ~/.cache/pi-oracle) on the sessions written by
// make_sessions.mjs, and prints one JSON object: per metric the median and every sample, in milliseconds.
//
//   node benchmarks/pi_bench.mjs [--data benchmarks/data] [--reps 7] [--warmup 1] [--metric NAME[,NAME...]]...
//        [--large FILE] [--dir300 DIR] [--list-cwd CWD] [--scale FILE[,FILE...]] [--agent-dir DIR]
//        [--append-count 3000] [--branch-count 1000] [--branch-ids FILE] [--seed 1] [--out FILE] [--verbose]
//
// Metrics (default: all):
//   open            SessionManager.open(large)
//   context_first   buildSessionContext() on a freshly opened manager (its first call)
//   context_repeat  buildSessionContext() called again on the same manager
//   get_tree        getTree() on an opened manager
//   get_branch      getBranch(id) over --branch-count random ids (seeded, or --branch-ids FILE), per call
//   append          appendMessage of --append-count user/assistant messages on an opened copy of large, per append
//   list            await SessionManager.list(listCwd, dir300)
//   list_all        await SessionManager.listAll() with PI_CODING_AGENT_DIR=--agent-dir (only when named)
//   open_memory     memory of opening large, measured in a fresh child process (bytes, not ms)
//   scale           for each scale file: open, context_first, get_tree, list (a directory holding only that file)
//                   (scale_open, scale_context_first, scale_get_tree, scale_list select one of them)
//
// Every timed metric runs --warmup untimed runs (default 1), then --reps samples; where state matters each sample
// gets fresh state (a new manager, a new copy of the file) and the garbage collector runs before it. The steady-state
// metrics (context_repeat, get_tree, get_branch) run their samples back to back on one manager, without forcing a
// GC in between (a forced GC leaves the caches cold and doubles a 10 ms context build here). Times come from
// process.hrtime.bigint() and are reported in ms rounded to the microsecond (per-call metrics to 0.1 µs), with the
// process CPU time of the same runs as cpu_median_ms.
import { spawnSync } from "node:child_process";
import { closeSync, copyFileSync, existsSync, fstatSync, mkdirSync, mkdtempSync, openSync, readFileSync, readSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { cpus, homedir, loadavg, tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import v8 from "node:v8";
import vm from "node:vm";

const here = dirname(fileURLToPath(import.meta.url));
const thisFile = fileURLToPath(import.meta.url);
const piHome = process.env.PI_ORACLE_HOME || join(homedir(), ".cache", "pi-oracle");
const pkgDir = join(piHome, "node_modules/@earendil-works/pi-coding-agent");
const smPath = join(pkgDir, "dist/core/session-manager.js");
if (!existsSync(smPath)) {
  console.error(`pi_bench: reference package missing at ${smPath}; run shared/pi-oracle/setup.sh first`);
  process.exit(2);
}

v8.setFlagsFromString("--expose-gc");
const gc = globalThis.gc ?? vm.runInNewContext("gc");

// ---------------------------------------------------------------------------------------------------------
// Child process: memory of one open
// ---------------------------------------------------------------------------------------------------------
if (process.argv[2] === "--child-open-memory") {
  const file = process.argv[3];
  const { SessionManager } = await import(smPath);
  gc(); gc();
  const m0 = process.memoryUsage();
  const sm = SessionManager.open(file);
  const m1 = process.memoryUsage();
  gc(); gc();
  const m2 = process.memoryUsage();
  const maxRss = process.resourceUsage().maxRSS * 1024;
  process.stdout.write(JSON.stringify({
    entries: sm.getEntryCount(),
    rssBefore: m0.rss, rssAfterOpen: m1.rss, rssAfterGc: m2.rss, maxRss,
    heapUsedBefore: m0.heapUsed, heapUsedAfterOpen: m1.heapUsed, heapUsedAfterGc: m2.heapUsed,
    externalBefore: m0.external, externalAfterGc: m2.external,
  }) + "\n");
  process.exit(0);
}

// ---------------------------------------------------------------------------------------------------------
// Arguments
// ---------------------------------------------------------------------------------------------------------
const ALL = ["open", "context_first", "context_repeat", "get_tree", "get_branch", "append", "list", "open_memory", "scale", "plan_compaction"];
const OPTIONAL = ["list_all"]; // only when asked for: needs --agent-dir (run.py --catalog)
const SCALE_PARTS = ["open", "context_first", "get_tree", "list"];
function parseArgs(argv) {
  const o = { data: join(here, "data"), reps: 7, metrics: [], large: null, dir300: null, listCwd: null, scale: null,
    appendCount: 3000, branchCount: 1000, branchIds: null, seed: 1, out: null, verbose: false, warmup: 1 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => { if (i + 1 >= argv.length) throw new Error(`${a} needs a value`); return argv[++i]; };
    if (a === "--data") o.data = resolve(next());
    else if (a === "--reps") o.reps = Number(next());
    else if (a === "--warmup") o.warmup = Number(next());
    else if (a === "--metric" || a === "--metrics") o.metrics.push(...next().split(",").filter(Boolean));
    else if (a === "--large") o.large = resolve(next());
    else if (a === "--dir300") o.dir300 = resolve(next());
    else if (a === "--list-cwd") o.listCwd = next();
    else if (a === "--agent-dir") o.agentDir = resolve(next());
    else if (a === "--scale") o.scale = next().split(",").filter(Boolean).map((p) => resolve(p));
    else if (a === "--append-count") o.appendCount = Number(next());
    else if (a === "--branch-count") o.branchCount = Number(next());
    else if (a === "--branch-ids") o.branchIds = resolve(next());
    else if (a === "--seed") o.seed = Number(next());
    else if (a === "--out") o.out = resolve(next());
    else if (a === "--verbose" || a === "-v") o.verbose = true;
    else if (a === "-h" || a === "--help") {
      const lines = readFileSync(thisFile, "utf8").split("\n").slice(1);
      console.log(lines.slice(0, lines.findIndex((l) => !l.startsWith("//"))).map((l) => l.replace(/^\/\/ ?/, "")).join("\n"));
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  if (!Number.isInteger(o.reps) || o.reps < 1) throw new Error("--reps must be a positive integer");
  if (!Number.isInteger(o.warmup) || o.warmup < 0) throw new Error("--warmup must be a non-negative integer");
  if (o.metrics.length === 0) o.metrics = [...ALL];
  for (const m of o.metrics) {
    if (!ALL.includes(m) && !OPTIONAL.includes(m) && !SCALE_PARTS.some((p) => m === `scale_${p}`)) throw new Error(`unknown metric ${m}; known: ${ALL.join(", ")}, ${SCALE_PARTS.map((p) => "scale_" + p).join(", ")}`);
  }
  o.large ??= join(o.data, "large.jsonl");
  o.dir300 ??= join(o.data, "dir300");
  if (!o.scale) {
    o.scale = existsSync(o.data)
      ? readdirSync(o.data).filter((f) => /^scale-\d+\.jsonl$/.test(f)).sort((a, b) => Number(a.match(/\d+/)[0]) - Number(b.match(/\d+/)[0])).map((f) => join(o.data, f))
      : [];
  }
  return o;
}
const opts = parseArgs(process.argv.slice(2));
const log = (...a) => { if (opts.verbose) console.error("[pi_bench]", ...a); };

const { SessionManager } = await import(smPath);
const piVersion = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")).version;

// ---------------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------------
const now = () => process.hrtime.bigint();
const ms = (t0, t1) => Number(t1 - t0) / 1e6;
const r3 = (x) => Math.round(x * 1000) / 1000;
const r4 = (x) => Math.round(x * 10000) / 10000;
function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}
function summarize(samples, round = r3, extra = {}) {
  const cpu = samples.cpu;
  return { median_ms: round(median(samples)), min_ms: round(Math.min(...samples)), max_ms: round(Math.max(...samples)), samples_ms: samples.map(round),
    ...(cpu ? { cpu_median_ms: round(median(cpu)) } : {}), ...extra };
}
// Per-call view of a sample list (and of its CPU times).
function perCall(samples, n) {
  const out = samples.map((x) => x / n);
  if (samples.cpu) out.cpu = samples.cpu.map((x) => x / n);
  return out;
}
function sfc32(a, b, c, d) {
  return function () {
    a |= 0; b |= 0; c |= 0; d |= 0;
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0; a = b ^ (b >>> 9); b = (c + (c << 3)) | 0; c = (c << 21) | (c >>> 11); c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
}
function makeRng(seed) { const r = sfc32(0x9e3779b9, 0x243f6a88 ^ seed, 0xb7e15162, seed * 2654435761); for (let i = 0; i < 20; i++) r(); return r; }
function settle() { gc(); gc(); }

// Timed samples: --warmup untimed runs, then reps samples. setup() builds fresh state (untimed), run(state) is timed,
// teardown(state) cleans up (untimed).
// Each sample list also carries .cpu: the process CPU time (user + system, all threads, µs resolution) of the same
// runs, a cross-check when other work shares the machine.
function measure(name, { setup = () => undefined, run, teardown = () => {}, reps = opts.reps, gcBetween = true }) {
  const samples = [];
  samples.cpu = [];
  for (let i = -opts.warmup; i < reps; i++) {
    const state = setup();
    if (gcBetween || i === 0) settle();
    const c0 = process.cpuUsage();
    const t0 = now();
    run(state);
    const t1 = now();
    const c1 = process.cpuUsage(c0);
    teardown(state);
    if (i >= 0) { samples.push(ms(t0, t1)); samples.cpu.push((c1.user + c1.system) / 1000); }
  }
  log(name, "median", r3(median(samples)), "ms");
  return samples;
}
async function measureAsync(name, { setup = () => undefined, run, teardown = () => {}, reps = opts.reps }) {
  const samples = [];
  samples.cpu = [];
  for (let i = -opts.warmup; i < reps; i++) {
    const state = setup();
    settle();
    const c0 = process.cpuUsage();
    const t0 = now();
    await run(state);
    const t1 = now();
    const c1 = process.cpuUsage(c0);
    teardown(state);
    if (i >= 0) { samples.push(ms(t0, t1)); samples.cpu.push((c1.user + c1.system) / 1000); }
  }
  log(name, "median", r3(median(samples)), "ms");
  return samples;
}

// Opening a v3 file that ends with a newline never writes; anything else could (migration, newline repair),
// so then every sample opens a fresh copy.
function openCouldWrite(file) {
  const fd = openSync(file, "r");
  try {
    const size = fstatSync(fd).size;
    const last = Buffer.alloc(1);
    readSync(fd, last, 0, 1, Math.max(0, size - 1));
    const head = Buffer.alloc(Math.min(size, 65536));
    readSync(fd, head, 0, head.length, 0);
    const firstLine = head.toString("utf8").split("\n")[0];
    let header;
    try { header = JSON.parse(firstLine); } catch { return true; }
    return last[0] !== 0x0a || header.type !== "session" || header.version !== 3;
  } finally {
    closeSync(fd);
  }
}
const tmpRoot = mkdtempSync(join(tmpdir(), "pi-bench-"));
process.on("exit", () => rmSync(tmpRoot, { recursive: true, force: true }));
let tmpN = 0;
function freshCopy(file) {
  const d = join(tmpRoot, `c${tmpN++}`);
  rmSync(d, { recursive: true, force: true });
  const p = join(d, basename(file));
  mkdirSync(d, { recursive: true });
  copyFileSync(file, p);
  return p;
}

function openTarget(file) {
  const could = openCouldWrite(file);
  return { could, path: () => (could ? freshCopy(file) : file) };
}

function fileInfo(file) {
  return { path: file, bytes: statSync(file).size };
}

// ---------------------------------------------------------------------------------------------------------
// Metrics on large.jsonl
// ---------------------------------------------------------------------------------------------------------
const result = {
  implementation: "pi",
  pi_version: piVersion,
  node: process.version,
  platform: `${process.platform}-${process.arch}`,
  cpus: cpus().length,
  cpu_model: cpus()[0]?.model ?? null,
  reps: opts.reps,
  unit: "ms",
  loadavg_start: loadavg(),
  files: {},
  metrics: {},
};
const want = (m) => opts.metrics.includes(m);
const needLarge = ["open", "context_first", "context_repeat", "get_tree", "get_branch", "append", "open_memory", "plan_compaction"].some(want);
if (needLarge) {
  if (!existsSync(opts.large)) throw new Error(`missing ${opts.large}; run make_sessions.mjs first`);
  result.files.large = fileInfo(opts.large);
}
const large = needLarge ? openTarget(opts.large) : null;

if (want("open")) {
  const samples = measure("open", {
    setup: () => large.path(),
    run: (p) => { globalThis.__keep = SessionManager.open(p); },
    teardown: () => { globalThis.__keep = null; },
  });
  result.metrics.open = summarize(samples, r3, { fresh_copy_each_rep: large.could });
}

if (want("plan_compaction")) {
  // What AgentSession.compact does before calling the model: prepareCompaction(getBranch(), settings).
  const comp = await import(join(pkgDir, "dist/core/compaction/index.js"));
  let kept = null;
  const samples = measure("plan_compaction", {
    setup: () => SessionManager.open(large.path()),
    run: (sm) => { kept = comp.prepareCompaction(sm.getBranch(), comp.DEFAULT_COMPACTION_SETTINGS)?.firstKeptEntryId ?? null; },
  });
  result.metrics.plan_compaction = summarize(samples, r3, { first_kept_entry_id: kept });
}

if (want("context_first")) {
  let n = 0;
  const samples = measure("context_first", {
    setup: () => SessionManager.open(large.path()),
    run: (sm) => { n = sm.buildSessionContext().messages.length; },
  });
  result.metrics.context_first = summarize(samples, r3, { context_messages: n });
}

if (want("context_repeat")) {
  const sm = SessionManager.open(large.path());
  sm.buildSessionContext(); // the first call is context_first; this metric is about the calls after it
  let n = 0;
  const samples = measure("context_repeat", { run: () => { n = sm.buildSessionContext().messages.length; }, gcBetween: false });
  result.metrics.context_repeat = summarize(samples, r3, { context_messages: n });
}

if (want("get_tree")) {
  const sm = SessionManager.open(large.path());
  let roots = 0;
  const samples = measure("get_tree", { run: () => { roots = sm.getTree().length; }, gcBetween: false });
  result.metrics.get_tree = summarize(samples, r3, { roots });
}

if (want("get_branch")) {
  const sm = SessionManager.open(large.path());
  let ids;
  if (opts.branchIds) {
    ids = readFileSync(opts.branchIds, "utf8").split("\n").map((s) => s.trim()).filter(Boolean);
  } else {
    const entries = sm.getEntries();
    const rng = makeRng(opts.seed);
    ids = Array.from({ length: opts.branchCount }, () => entries[Math.floor(rng() * entries.length)].id);
  }
  let total = 0;
  const raw = measure("get_branch", {
    run: () => { let t = 0; for (const id of ids) t += sm.getBranch(id).length; total = t; },
    gcBetween: false,
  });
  const samples = perCall(raw, ids.length);
  result.metrics.get_branch = summarize(samples, r4, { per: "call", calls_per_sample: ids.length, mean_path_length: Math.round(total / ids.length) });
}

function appendMessages(n, seed) {
  const rng = makeRng(seed + 77);
  const words = "the invoice ledger totals rounding should be recomputed after the migration so tests pass again with async handlers and retries".split(" ");
  const text = (k) => { const w = []; for (let i = 0; i < k; i++) w.push(words[Math.floor(rng() * words.length)]); return w.join(" "); };
  const out = [];
  const t0 = Date.UTC(2025, 6, 1);
  for (let i = 0; i < n; i++) {
    if (i % 2 === 0) {
      out.push({ role: "user", content: text(40 + Math.floor(rng() * 60)), timestamp: t0 + i * 1000 });
    } else {
      const input = 1 + Math.floor(rng() * 10), output = 50 + Math.floor(rng() * 500), cacheRead = 20000 + Math.floor(rng() * 100000), cacheWrite = Math.floor(rng() * 2000);
      const cost = { input: (3 / 1e6) * input, output: (15 / 1e6) * output, cacheRead: (0.3 / 1e6) * cacheRead, cacheWrite: (3.75 * cacheWrite) / 1e6, total: 0, totalFromProvider: false };
      cost.total = cost.input + cost.output + cost.cacheRead + cost.cacheWrite;
      out.push({ role: "assistant", content: [{ type: "thinking", thinking: text(30), thinkingSignature: "sig" + i }, { type: "text", text: text(60) }],
        api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5",
        usage: { input, output, cacheRead, cacheWrite, totalTokens: input + output + cacheRead + cacheWrite, cost }, stopReason: "stop", timestamp: t0 + i * 1000 });
    }
  }
  return out;
}

if (want("append")) {
  const msgs = appendMessages(opts.appendCount, opts.seed);
  const samples = perCall(measure("append", {
    setup: () => SessionManager.open(freshCopy(opts.large)),
    run: (sm) => { for (const m of msgs) sm.appendMessage(m); },
    teardown: (sm) => { rmSync(dirname(sm.getSessionFile()), { recursive: true, force: true }); },
  }), msgs.length);
  result.metrics.append = summarize(samples, r4, { per: "append", appends_per_sample: msgs.length, persisted: true });
}

if (want("open_memory")) {
  const runs = [];
  for (let i = 0; i < Math.min(opts.reps, 5); i++) {
    const p = large.path();
    const r = spawnSync(process.execPath, ["--expose-gc", thisFile, "--child-open-memory", p], { encoding: "utf8", env: process.env, maxBuffer: 1 << 20 });
    if (r.status !== 0) throw new Error(`open_memory child failed: ${r.stderr}`);
    runs.push(JSON.parse(r.stdout.trim().split("\n").pop()));
  }
  const med = (f) => Math.round(median(runs.map(f)));
  result.metrics.open_memory = {
    unit: "bytes",
    file_bytes: statSync(opts.large).size,
    rss_delta_bytes: med((x) => x.rssAfterOpen - x.rssBefore),
    peak_rss_delta_bytes: med((x) => x.maxRss - x.rssBefore),
    retained_rss_delta_bytes: med((x) => x.rssAfterGc - x.rssBefore),
    heap_used_delta_bytes: med((x) => x.heapUsedAfterOpen - x.heapUsedBefore),
    retained_heap_bytes: med((x) => x.heapUsedAfterGc - x.heapUsedBefore),
    baseline_rss_bytes: med((x) => x.rssBefore),
    samples: runs,
  };
  log("open_memory", result.metrics.open_memory.retained_heap_bytes, "bytes retained heap");
}

// ---------------------------------------------------------------------------------------------------------
// list over dir300
// ---------------------------------------------------------------------------------------------------------
function defaultListCwd(dir) {
  // The cwd of the first session in the directory (make_sessions puts /home/dev/projects/billing-service first).
  const files = readdirSync(dir).filter((f) => f.endsWith(".jsonl")).sort();
  const counts = new Map();
  for (const f of files) {
    const fd = openSync(join(dir, f), "r");
    try {
      const buf = Buffer.alloc(4096);
      const n = readSync(fd, buf, 0, buf.length, 0);
      const h = JSON.parse(buf.subarray(0, n).toString("utf8").split("\n")[0]);
      counts.set(h.cwd, (counts.get(h.cwd) ?? 0) + 1);
    } catch { /* not a session */ } finally { closeSync(fd); }
  }
  return [...counts].sort((a, b) => b[1] - a[1])[0]?.[0] ?? "/";
}

if (want("list")) {
  if (!existsSync(opts.dir300)) throw new Error(`missing ${opts.dir300}; run make_sessions.mjs first`);
  const cwd = opts.listCwd ?? defaultListCwd(opts.dir300);
  const files = readdirSync(opts.dir300).filter((f) => f.endsWith(".jsonl"));
  result.files.dir300 = { path: opts.dir300, files: files.length, bytes: files.reduce((s, f) => s + statSync(join(opts.dir300, f)).size, 0), list_cwd: cwd };
  let found = 0;
  const samples = await measureAsync("list", { run: async () => { found = (await SessionManager.list(cwd, opts.dir300)).length; } });
  result.metrics.list = summarize(samples, r3, { sessions_returned: found, files_scanned: files.length });
}

// listAll over an agent dir's sessions/ (the catalog benchmark's thousands of sessions)
if (want("list_all")) {
  if (!opts.agentDir) throw new Error("list_all needs --agent-dir");
  process.env.PI_CODING_AGENT_DIR = opts.agentDir; // Pi reads it on every call
  let found = 0;
  const samples = await measureAsync("list_all", { run: async () => { found = (await SessionManager.listAll()).length; } });
  result.metrics.list_all = summarize(samples, r3, { sessions_returned: found, agent_dir: opts.agentDir });
}

// ---------------------------------------------------------------------------------------------------------
// Scaling set
// ---------------------------------------------------------------------------------------------------------
const scaleParts = SCALE_PARTS.filter((p) => want("scale") || want(`scale_${p}`));
if (scaleParts.length) {
  result.metrics.scale = {};
  for (const file of opts.scale) {
    const key = basename(file, ".jsonl");
    const target = openTarget(file);
    const out = { path: file, bytes: statSync(file).size };
    const needOpen = scaleParts.some((p) => p !== "list");
    if (needOpen) {
      // One fresh manager per sample: the open is timed, then its first buildSessionContext(), then getTree().
      const s = { open: [], context_first: [], get_tree: [] };
      for (const k in s) s[k].cpu = [];
      let entries = 0, ctx = 0;
      for (let i = -opts.warmup; i < opts.reps; i++) {
        const p = target.path();
        settle();
        const c0 = process.cpuUsage();
        const t0 = now();
        let sm = SessionManager.open(p);
        const t1 = now();
        const c1 = process.cpuUsage();
        ctx = sm.buildSessionContext().messages.length;
        const t2 = now();
        const c2 = process.cpuUsage();
        sm.getTree();
        const t3 = now();
        const c3 = process.cpuUsage();
        entries = sm.getEntryCount();
        sm = null;
        const cpu = (a, b) => (b.user - a.user + b.system - a.system) / 1000;
        if (i >= 0) {
          s.open.push(ms(t0, t1)); s.context_first.push(ms(t1, t2)); s.get_tree.push(ms(t2, t3));
          s.open.cpu.push(cpu(c0, c1)); s.context_first.cpu.push(cpu(c1, c2)); s.get_tree.cpu.push(cpu(c2, c3));
        }
      }
      out.entries = entries;
      out.context_messages = ctx;
      for (const p of ["open", "context_first", "get_tree"]) if (scaleParts.includes(p)) out[p] = summarize(s[p]);
      log(key, "open", r3(median(s.open)), "ctx", r3(median(s.context_first)), "tree", r3(median(s.get_tree)));
    }
    if (scaleParts.includes("list")) {
      // A list-like scan of this one file: SessionManager.list over a directory that holds only (a link to) it.
      const d = join(tmpRoot, `list-${key}`);
      mkdirSync(d, { recursive: true });
      const link = join(d, basename(file));
      if (!existsSync(link)) symlinkSync(resolve(file), link);
      const header = JSON.parse(readFileSync(file, "utf8").slice(0, 65536).split("\n")[0]);
      const samples = await measureAsync(`${key} list`, { run: async () => { await SessionManager.list(header.cwd, d); } });
      out.list = summarize(samples);
    }
    result.metrics.scale[key] = out;
  }
}

result.loadavg_end = loadavg();
const text = JSON.stringify(result, null, 2) + "\n";
if (opts.out) writeFileSync(opts.out, text);
process.stdout.write(text);
