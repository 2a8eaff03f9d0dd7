// Pi 1.6.0's automatic compaction check, run as Pi runs it before the next prompt:
// `AgentSession.prototype._checkCompaction(lastAssistant, false)` (from `_prepareRun`), the published
// code itself, on a session opened with Pi's SessionManager.open.
//
//   node check_compaction.mjs 'JOBS_JSON'
//
// JOBS: [{file, settings: {enabled, reserveTokens, keepRecentTokens}, windows: [N, ...]}]. Prints one JSON
// array: per job {decisions: {N: reason or null}, tokens}. The AgentSession around the check is a stand-in
// holding what the check reads: the session manager, the settings, the agent's messages (the session's
// context, as after a resume) and a current model that is not the messages' model, so Pi's recovery from a
// model's overflow error (which needs that model) is left out. `_runAutoCompaction` records the reason
// instead of compacting. `tokens` is the context size Pi compared, found from its decisions: Pi compacts
// when tokens > window - reserve, so the largest window at which it compacts is tokens + reserve - 1
// (null when it compacts at no window: it did not count).
import { copyFileSync, mkdtempSync } from "node:fs";
import { register } from "node:module";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";

// agent-session.js imports Pi's HTTP client (undici), which needs a newer Node; the check never uses it.
const stub = "data:text/javascript," + encodeURIComponent(
  "export const EnvHttpProxyAgent = class {}, Client = class {}, Pool = class {}, Agent = class {}, ProxyAgent = class {};" +
  " export function setGlobalDispatcher() {} export function install() {} export function fetch() {} export default {};");
register("data:text/javascript," + encodeURIComponent(
  `export async function resolve(s, c, next) { return s === "undici" ? { url: ${JSON.stringify(stub)}, shortCircuit: true } : next(s, c); }`));

const home = process.env.PI_ORACLE_HOME || join(homedir(), ".cache", "pi-oracle");
const core = join(home, "node_modules/@earendil-works/pi-coding-agent/dist/core");
const { SessionManager } = await import(join(core, "session-manager.js"));
const { AgentSession } = await import(join(core, "agent-session.js"));

async function decide(file, settings, contextWindow) {
  const copy = join(mkdtempSync(join(tmpdir(), "pi-check-")), "session.jsonl");
  copyFileSync(file, copy);
  const sessionManager = SessionManager.open(copy);
  const messages = sessionManager.buildSessionContext().messages;
  const last = messages.findLast((m) => m.role === "assistant");
  if (!last) return null; // _prepareRun checks only when there is an assistant message
  let reason = null;
  const session = {
    settingsManager: { getCompactionSettings: () => settings },
    model: { provider: "stand-in", id: "not-the-messages-model", contextWindow, maxTokens: 64000 },
    _modelForMessage: AgentSession.prototype._modelForMessage,
    _findPersistedMessageEntryId: AgentSession.prototype._findPersistedMessageEntryId,
    _entryIdsByMessage: new Map(),
    sessionManager,
    agent: { state: { messages } },
    _runAutoCompaction: async (why) => { reason = why; return false; },
  };
  await AgentSession.prototype._checkCompaction.call(session, last, false);
  return reason;
}

const jobs = JSON.parse(process.argv[2]);
const out = [];
for (const job of jobs) {
  const decisions = {};
  for (const w of job.windows) decisions[w] = await decide(job.file, job.settings, w);
  let tokens = null;
  if (await decide(job.file, job.settings, 0)) {
    let lo = 0, hi = 2 ** 40; // compacts at lo, not at hi
    if (await decide(job.file, job.settings, hi)) throw new Error(`compacts at every window: ${job.file}`);
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (await decide(job.file, job.settings, mid)) lo = mid; else hi = mid;
    }
    tokens = lo - job.settings.reserveTokens + 1; // tokens > lo - reserve, and not > lo + 1 - reserve
  }
  out.push({ decisions, tokens });
}
process.stdout.write(JSON.stringify(out) + "\n");
