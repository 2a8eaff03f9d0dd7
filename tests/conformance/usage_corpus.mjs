// A Pi-written corpus for the usage report, for generate_usage.py.
//   node --import oracle_seed.mjs usage_corpus.mjs OUT_DIR
// Writes, with Pi 1.6.0's own SessionManager and a clock set per step, sessions under
// OUT_DIR/sessions/--<cwd>--/ in three projects: assistant messages (responseModel and not),
// `usage` entries, tool results with usage, compactions and branch summaries with usage, side
// branches, usage at 23:xx UTC (a different day in other time zones), forks (forkFrom, and a fork
// of a fork into another project), and branched sessions (createBranchedSession) that go on
// spending. Prints {"files": [relative paths in creation order]}.
import { readdirSync } from "node:fs";
import { homedir } from "node:os";
import { join, relative } from "node:path";

const home = process.env.PI_ORACLE_HOME || join(homedir(), ".cache", "pi-oracle");
const core = join(home, "node_modules/@earendil-works/pi-coding-agent/dist/core");
const { SessionManager } = await import(join(core, "session-manager.js"));

const out = process.argv[2];
const sessions = join(out, "sessions");
const dirOf = (cwd) => join(sessions, `--${cwd.replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`);

const RealDate = Date;
let now = 0;
class FakeDate extends RealDate {
  constructor(...a) { if (a.length === 0) { super(now); now += 1; } else super(...a); }
  static now() { const t = now; now += 1; return t; }
}
globalThis.Date = FakeDate;
const at = (iso) => { now = RealDate.parse(iso); };

const PRICES = {
  "anthropic/claude-sonnet-4-5": [3, 15, 0.3, 3.75],
  "anthropic/claude-opus-4-1": [15, 75, 1.5, 18.75],
  "openai/gpt-5": [1.25, 10, 0.125, 0],
  "google/gemini-2.5-pro": [1.25, 10, 0.31, 0],
  "fake/summarizer": [1, 2, 0, 0],
};
function usage(model, input, output, cacheRead = 0, cacheWrite = 0) {
  const [pi, po, pr, pw] = PRICES[model];
  const cost = { input: (input * pi) / 1e6, output: (output * po) / 1e6, cacheRead: (cacheRead * pr) / 1e6, cacheWrite: (cacheWrite * pw) / 1e6 };
  cost.total = cost.input + cost.output + cost.cacheRead + cost.cacheWrite;
  return { input, output, cacheRead, cacheWrite, totalTokens: input + output + cacheRead + cacheWrite, cost };
}
const user = (sm, text) => sm.appendMessage({ role: "user", content: text, timestamp: Date.now() });
function assistant(sm, model, tokens, extra = {}) {
  const [provider, ...rest] = model.split("/");
  return sm.appendMessage({
    role: "assistant", content: [{ type: "text", text: `answer from ${model}` }], api: "anthropic-messages",
    provider, model: rest.join("/"), usage: usage(model, ...tokens), stopReason: "stop", timestamp: Date.now(), ...extra,
  });
}
function toolCall(sm, model, tokens, callId) {
  const [provider, ...rest] = model.split("/");
  return sm.appendMessage({
    role: "assistant", content: [{ type: "toolCall", id: callId, name: "task", arguments: { prompt: "look" } }],
    api: "anthropic-messages", provider, model: rest.join("/"), usage: usage(model, ...tokens), stopReason: "toolUse", timestamp: Date.now(),
  });
}
const toolResult = (sm, callId, u) => sm.appendMessage({
  role: "toolResult", toolCallId: callId, toolName: "task", content: [{ type: "text", text: "sub-agent done" }], isError: false,
  timestamp: Date.now(), ...(u ? { usage: u } : {}),
});

const SONNET = "anthropic/claude-sonnet-4-5";
const OPUS = "anthropic/claude-opus-4-1";
const GPT = "openai/gpt-5";
const GEMINI = "google/gemini-2.5-pro";
const A = "/work/proj-a", B = "/work/proj-b", C = "/work/proj-c";

// A1: everything Pi counts, a side branch, and turns either side of midnight UTC.
at("2026-11-02T22:50:00.000Z");
const a1 = SessionManager.create(A, dirOf(A));
user(a1, "plan the refactor");
const a1first = assistant(a1, SONNET, [1200, 300, 0, 5000], { responseModel: "claude-sonnet-4-5-20250929" });
user(a1, "delegate the search");
const call = toolCall(a1, SONNET, [900, 120, 5000, 0], "call-1");
toolResult(a1, "call-1", usage(GPT, 4000, 800, 1000, 0));
a1.appendUsage("subagent", "openai", "gpt-5", usage(GPT, 2500, 400), "search helper");
at("2026-11-02T23:40:00.000Z");
assistant(a1, SONNET, [700, 900, 6000, 0]);
a1.appendCompaction("summary of the plan", a1first, 9000, { readFiles: [], modifiedFiles: [] }, false, usage("fake/summarizer", 8000, 500));
at("2026-11-03T00:20:00.000Z");
user(a1, "continue");
const a1tip = assistant(a1, OPUS, [1500, 2000, 0, 7000]);
a1.branch(call);
a1.branchWithSummary(call, "abandoned path", { readFiles: [], modifiedFiles: [] }, false, usage("fake/summarizer", 3000, 200));
user(a1, "try the other way");
assistant(a1, SONNET, [600, 400, 6500, 0], { responseModel: null });
a1.appendUsage("embedding", "openai", "text-embedding-3-small", { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } });
const a1path = a1.getSessionFile();

// A2: a fork of A1 (every entry copied), then its own spend two days later.
at("2026-11-05T09:00:00.000Z");
const a2 = SessionManager.forkFrom(a1path, A, dirOf(A));
user(a2, "pick up from the fork");
assistant(a2, SONNET, [800, 600, 8000, 0], { responseModel: "claude-sonnet-4-5-20250929" });
a2.appendUsage("subagent", "openai", "gpt-5", usage(GPT, 1000, 100));
const a2path = a2.getSessionFile();

// C1: a fork of the fork, into another project (copies followed through two parents).
at("2026-11-06T15:00:00.000Z");
const c1 = SessionManager.forkFrom(a2path, C, dirOf(C));
user(c1, "port it to project c");
assistant(c1, GEMINI, [3000, 700, 0, 0]);

// A3: a branched session from A1's first tip (Pi's createBranchedSession), spending on after it.
at("2026-11-07T10:00:00.000Z");
const a3 = SessionManager.open(a1path, dirOf(A));
a3.appendLabelChange(a1first, "start");
a3.createBranchedSession(a1tip);
user(a3, "branch off the opus answer");
assistant(a3, OPUS, [1000, 1500, 7000, 0]);
at("2026-11-07T23:59:59.000Z");
a3.appendCompaction("branched summary", null, 12000, undefined, false, usage("fake/summarizer", 5000, 300));

// B1..B4: another project, several days, three providers; B4 holds no usage at all.
const days = ["2026-11-03T08:00:00.000Z", "2026-11-04T12:00:00.000Z", "2026-11-10T23:30:00.000Z"];
const models = [GPT, GEMINI, SONNET];
for (let i = 0; i < days.length; i++) {
  at(days[i]);
  const b = SessionManager.create(B, dirOf(B));
  user(b, `task ${i}`);
  assistant(b, models[i], [2000 + i * 100, 500 + i * 10, i * 1000, 0]);
  user(b, "and more");
  assistant(b, models[(i + 1) % 3], [1500, 250, 0, 0], i === 0 ? { responseModel: "gemini-2.5-pro-preview-06-05" } : {});
  if (i === 2) b.appendUsage("review", "anthropic", "claude-opus-4-1", usage(OPUS, 4000, 900));
}
at("2026-11-11T08:00:00.000Z");
const b4 = SessionManager.create(B, dirOf(B));
user(b4, "hello");
b4.appendMessage({ role: "assistant", content: [{ type: "text", text: "aborted" }], api: "anthropic-messages", provider: "anthropic",
  model: "claude-sonnet-4-5", usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
  stopReason: "aborted", timestamp: Date.now() });

const files = [];
for (const folder of readdirSync(sessions).sort()) {
  for (const name of readdirSync(join(sessions, folder)).sort()) files.push(relative(out, join(sessions, folder, name)));
}
process.stdout.write(JSON.stringify({ files }) + "\n");
