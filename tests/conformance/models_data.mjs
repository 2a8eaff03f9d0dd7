// Prints Pi 1.6.0's built-in chat models (per provider, in Pi's order) and the environment
// variables each built-in provider reads for its key, as JSON. Run by generate_models.py.
import { pathToFileURL } from "node:url";
import path from "node:path";

const home = process.env.PI_ORACLE_HOME || path.join(process.env.HOME, ".cache", "pi-oracle");
const aiDir = path.join(home, "node_modules", "@earendil-works", "pi-ai");
const all = await import(pathToFileURL(path.join(aiDir, "dist", "providers", "all.js")).href);
const envKeys = await import(pathToFileURL(path.join(aiDir, "dist", "env-api-keys.js")).href);
const providers = [];
for (const provider of all.builtinProviders()) {
  const models = provider.getModels().filter((m) => (m.type ?? "chat") === "chat");
  providers.push({
    id: provider.id,
    name: provider.name,
    baseUrl: provider.baseUrl ?? null,
    headers: provider.headers ?? null,
    models,
  });
}
const known = ["anthropic", "openai", "google", ...providers.map((p) => p.id)];
const envVars = {};
const probe = new Proxy({}, { get: (_t, name) => (typeof name === "string" ? "x" : undefined), has: () => true });
for (const id of new Set(known)) {
  const found = envKeys.findEnvKeys(id, probe);
  if (found) envVars[id] = found;
}
console.log(JSON.stringify({ generatedAt: all.getBuiltinModelDataGeneratedAt?.() ?? null, providers, envVars }));
