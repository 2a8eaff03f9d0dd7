// Pi 1.6.0's resolveCliModel (its --model flag) on a fixed model list: writes golden/model_flag.json.
//   NODE22 tests/conformance/model_flag.mjs "$(cat CASES.json)" > tests/conformance/golden/model_flag.json
// (the cases are the "model", "thinking", "authed" of each golden record).
import os from "node:os";
const { resolveCliModel } = await import(
  `${os.homedir()}/.cache/pi-oracle/node_modules/@earendil-works/pi-coding-agent/dist/core/model-resolver.js`
);
export const models = [
  { provider: "acme", id: "claude-sonnet-4-5", name: "Claude Sonnet 4.5", reasoning: false },
  { provider: "acme", id: "claude-sonnet-4-5-20250929", name: "Claude Sonnet 4.5 dated", reasoning: false },
  { provider: "acme", id: "Claude-Opus-4", name: "Opus", reasoning: true },
  { provider: "acme", id: "claude-haiku-4-5", reasoning: false },
  { provider: "beta", id: "claude-sonnet-4-5", name: "Sonnet on beta", reasoning: false },
  { provider: "beta", id: "gpt-x", name: "GPT X", reasoning: true },
  { provider: "beta", id: "gpt-x-mini", reasoning: false },
  { provider: "gate/way", id: "zai/glm-5", reasoning: false },
  { provider: "gate", id: "other", reasoning: false },
];
const cases = JSON.parse(process.argv[2]);
const out = [];
for (const [model, thinking, authed] of cases) {
  const r = resolveCliModel({ cliModel: model, cliThinking: thinking ?? undefined, modelRuntime: { getModels: () => models, hasConfiguredAuth: (p) => authed.includes(p) } });
  out.push({ model, thinking, authed, key: r.model ? `${r.model.provider}/${r.model.id}` : null, reasoning: r.model?.reasoning ?? null, name: r.model?.name ?? null, thinkingLevel: r.thinkingLevel ?? null, warning: r.warning ?? null, error: r.error ?? null });
}
console.log(JSON.stringify({ models, cases: out }, null, 1));
