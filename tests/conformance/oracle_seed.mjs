// Preloaded by generate.py (`node --import oracle_seed.mjs oracle.mjs ...`) so regenerating the
// golden data gives the same bytes every time.
//
// The reference draws entry ids from crypto.randomUUID() and the random half of its UUIDv7 session
// ids from crypto.getRandomValues(). Both are replaced here by a SHA-256 counter stream seeded with
// $PI_ORACLE_SEED (generate.py passes the case name). Nothing else changes: the reference code runs
// as published, it just rolls "random" numbers that repeat from run to run. Timestamps are frozen
// by the oracle itself when an op script has a "clock".
import crypto from "node:crypto";
import { syncBuiltinESMExports } from "node:module";

const seed = process.env.PI_ORACLE_SEED || "pisession";
let counter = 0;

function randomBytes(n) {
  const out = new Uint8Array(n);
  let filled = 0;
  while (filled < n) {
    const block = crypto.createHash("sha256").update(`${seed}:${counter++}`).digest();
    const take = Math.min(block.length, n - filled);
    out.set(block.subarray(0, take), filled);
    filled += take;
  }
  return out;
}

crypto.randomUUID = () => {
  const b = randomBytes(16);
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = Buffer.from(b).toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};
// session-manager.js does `import { randomUUID } from "crypto"`: named imports of built-in modules
// only see a patched property after this call.
syncBuiltinESMExports();

Object.defineProperty(globalThis.crypto, "getRandomValues", {
  value: (array) => {
    new Uint8Array(array.buffer, array.byteOffset, array.byteLength).set(randomBytes(array.byteLength));
    return array;
  },
  configurable: true,
  writable: true,
});
