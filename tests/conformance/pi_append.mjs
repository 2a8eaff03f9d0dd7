// Pi writing into a session another program has open: `node pi_append.mjs FILE 'ENTRIES_JSON' [CLOCK_MS]`
// opens FILE with Pi 1.6.0's SessionManager.open (its leaf: the last entry) and appends each entry
// of the JSON array as Pi would: {"message": {...}} with appendMessage, {"custom": [type, data]} with
// appendCustomEntry. Prints the new entries' ids as a JSON array. With CLOCK_MS, Date is frozen there
// and moves 1 ms per reading (as the oracle's clock); preload oracle_seed.mjs for repeatable ids.
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

const [file, entriesJson, clock] = process.argv.slice(2);
if (clock !== undefined) {
  const RealDate = Date;
  let now = Number(clock);
  globalThis.Date = class extends RealDate {
    constructor(...a) { if (a.length === 0) { super(now); now += 1; } else super(...a); }
    static now() { const t = now; now += 1; return t; }
  };
}
const home = process.env.PI_ORACLE_HOME || join(homedir(), ".cache", "pi-oracle");
const smPath = join(home, "node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js");
if (!existsSync(smPath)) {
  console.error(`pi_append: reference package missing at ${smPath}`);
  process.exit(2);
}
const { SessionManager } = await import(smPath);
const sm = SessionManager.open(file);
const ids = JSON.parse(entriesJson).map((e) =>
  e.message !== undefined ? sm.appendMessage(e.message) : sm.appendCustomEntry(e.custom[0], e.custom[1]));
process.stdout.write(JSON.stringify(ids) + "\n");
