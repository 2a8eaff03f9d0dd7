// Per-character collation weights as Node's ICU orders names with String.prototype.localeCompare
// (Pi breaks ties between session files so): read a JSON list of code points on stdin, print for
// each [codePoint, primary, secondary, tertiary] ranks (primary 0: no primary weight, a mark).
import { readFileSync } from "fs";

const points = JSON.parse(readFileSync(0, "utf8"));
const base = new Intl.Collator(undefined, { sensitivity: "base" });
const accent = new Intl.Collator(undefined, { sensitivity: "accent" });
const full = new Intl.Collator(undefined);
const chars = points.map((p) => String.fromCodePoint(p));
const out = [];
const marks = chars.filter((c) => base.compare(c, "") === 0 && accent.compare(c, "") !== 0);
const letters = chars.filter((c) => base.compare(c, "") !== 0);

function groups(items, compare) {
  const sorted = [...items].sort(compare);
  const result = [];
  for (const item of sorted) {
    const last = result[result.length - 1];
    if (last && compare(last[0], item) === 0) last.push(item);
    else result.push([item]);
  }
  return result;
}

groups(letters, base.compare).forEach((primaryGroup, p) => {
  groups(primaryGroup, accent.compare).forEach((secondaryGroup, s) => {
    groups(secondaryGroup, full.compare).forEach((tertiaryGroup, t) => {
      for (const c of tertiaryGroup) out.push([c.codePointAt(0), p + 1, s, t]);
    });
  });
});
groups(marks, (a, b) => accent.compare("a" + a, "a" + b)).forEach((group, s) => {
  for (const c of group) out.push([c.codePointAt(0), 0, 1000 + s, 0]);
});
out.sort((a, b) => a[0] - b[0]);
console.log(JSON.stringify({ locale: full.resolvedOptions().locale, icu: process.versions.icu, weights: out }));
