// Pi's own JSONL export of a session's active branch, for generate_export.py.
//   node export_jsonl.mjs CLOCK_MS FILE...
// Opens a temporary copy of each FILE with Pi's SessionManager.open and prints, as one JSON array,
// {name, fileAfterOpen, jsonl} where jsonl is serializeSessionBranch(manager) with Date frozen at
// CLOCK_MS, or {name, error}.
import { copyFileSync, mkdtempSync, readFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { basename, join } from "node:path";

const home = process.env.PI_ORACLE_HOME || join(homedir(), ".cache", "pi-oracle");
const core = join(home, "node_modules/@earendil-works/pi-coding-agent/dist/core");
const { SessionManager } = await import(join(core, "session-manager.js"));
const { serializeSessionBranch } = await import(join(core, "session-export.js"));

const [clock, ...files] = process.argv.slice(2);
const RealDate = Date;
let now = Number(clock);
class FakeDate extends RealDate {
  constructor(...a) { if (a.length === 0) { super(now); now += 1; } else super(...a); }
  static now() { const t = now; now += 1; return t; }
}
globalThis.Date = FakeDate;

const out = [];
for (const file of files) {
  const dir = mkdtempSync(join(tmpdir(), "pi-export-"));
  const copy = join(dir, basename(file));
  copyFileSync(file, copy);
  try {
    const sm = SessionManager.open(copy, dir);
    const fileAfterOpen = readFileSync(copy, "utf8");
    now = Number(clock);
    out.push({ name: basename(file), fileAfterOpen, jsonl: serializeSessionBranch(sm) });
  } catch (error) {
    out.push({ name: basename(file), error: String(error && error.message).split(copy).join("$FILE") });
  }
}
process.stdout.write(JSON.stringify(out));
