// Renders Markdown with the viewer's own renderer under Node, without a browser:
//   node render_markdown.mjs VIEWER_JS < {"name": "markdown", ...}  ->  {"name": "html", ...}
// viewer.js runs as on a page with no session; every DOM call answers with a do-nothing stub, so
// it starts and exposes window.pisessionViewer.markdown (what the page renders messages with).
import fs from 'node:fs';
import vm from 'node:vm';
const src = fs.readFileSync(process.argv[2], 'utf8');
const stub = new Proxy(function () {}, {
  get: (t, k) => (k === Symbol.toPrimitive ? () => '' : k === Symbol.iterator ? function* () {} : k === 'length' ? 0 : stub),
  set: () => true,
  apply: () => stub,
  construct: () => stub,
});
const data = { entries: [], parent: [], order: [], labels: {}, header: null, leaf: -1 };
const document = new Proxy({}, { get: (t, k) => (k === 'getElementById' ? (id) => (id === 'pisession-data' ? { textContent: JSON.stringify(data) } : stub) : stub) });
const window = new Proxy({}, { get: (t, k) => (k in t ? t[k] : stub), set: (t, k, v) => { t[k] = v; return true; } });
const context = vm.createContext({ document, window, localStorage: { getItem: () => null, setItem() {} }, location: { hash: '' }, history: stub, navigator: stub, addEventListener() {}, requestAnimationFrame() {}, setTimeout, clearTimeout, getComputedStyle: () => stub, matchMedia: () => stub, console });
vm.runInContext(src, context);
const { markdown } = window.pisessionViewer;
const inputs = JSON.parse(fs.readFileSync(0, 'utf8'));
const out = {};
for (const [name, text] of Object.entries(inputs)) out[name] = markdown(text);
process.stdout.write(JSON.stringify(out));
