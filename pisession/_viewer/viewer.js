// pisession session viewer. Everything is built here, from the JSON in #pisession-data; session
// text only ever reaches the page through esc() or the Markdown renderer, which escapes first.
(function () {
  'use strict';
  // The session is embedded as JSON, or (larger sessions) as zlib-compressed JSON in base64,
  // unpacked with the browser's own DecompressionStream: nothing is fetched either way.
  const el = document.getElementById('pisession-data');
  if (el.type === 'application/json') { viewer(JSON.parse(el.textContent)); return; }
  let bytes;
  try {
    const packed = el.textContent.trim();
    // Uint8Array.fromBase64 (Chrome 140, Firefox 133, Safari 18.2) is five times faster than the
    // copy loop on 28 MB of base64; the loop serves older browsers.
    if (typeof Uint8Array.fromBase64 === 'function') bytes = Uint8Array.fromBase64(packed);
    else {
      const text = atob(packed);
      bytes = new Uint8Array(text.length);
      for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    }
  } catch (e) { bytes = null; }
  if (!bytes || typeof DecompressionStream !== 'function') {
    document.body.insertAdjacentHTML('afterbegin', '<p class="noscript">This browser cannot unpack the session embedded in this page (it needs DecompressionStream).</p>');
    return;
  }
  new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate'))).text()
    .then((text) => viewer(JSON.parse(text)));
})();

function viewer(DATA) {
  'use strict';

  // ---------------------------------------------------------------------------------- data
  const E = DATA.entries;
  const N = E.length;
  const PARENT = DATA.parent;
  const ORDER = DATA.order;
  // Session text (ids, roles, tool names, paths, labels) is only ever looked up in a Map or with
  // own(): in a plain object, a key such as "constructor" or "__proto__" finds Object.prototype's.
  const LABELS = new Map(isObj(DATA.labels) ? Object.entries(DATA.labels) : []);
  const HEADER = DATA.header;
  const DEFAULT_LEAF = DATA.leaf;

  const KIDS = new Array(N);
  const ROOTS = [];
  for (const p of ORDER) {
    const up = PARENT[p];
    if (up < 0) ROOTS.push(p);
    else (KIDS[up] || (KIDS[up] = [])).push(p);
  }
  const POS = new Map();
  E.forEach((e, p) => POS.set(String(e && e.id), p));
  const labelOf = (p) => LABELS.get(String(p));
  const BRANCH_POINTS = E.reduce((n, _, p) => n + (KIDS[p] && KIDS[p].length > 1 ? 1 : 0), 0);

  // Tool calls by id, for the tree's one-line descriptions of tool results.
  let callIndex = null;
  function toolCall(id) {
    if (!callIndex) {
      callIndex = new Map();
      for (const e of E) {
        const m = msgOf(e);
        if (m && m.role === 'assistant') for (const b of blocks(m.content)) if (b.type === 'toolCall') callIndex.set(b.id, b);
      }
    }
    return callIndex.get(id);
  }

  // ---------------------------------------------------------------------------------- helpers
  const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
  function esc(value) { return String(value == null ? '' : value).replace(/[&<>"']/g, (c) => ESC[c]); }
  function isObj(v) { return v !== null && typeof v === 'object' && !Array.isArray(v); }
  function own(table, key) { return Object.prototype.hasOwnProperty.call(table, key) ? table[key] : undefined; }
  function msgOf(e) { return e && e.type === 'message' && isObj(e.message) ? e.message : null; }
  function blocks(content) { return Array.isArray(content) ? content.filter(isObj) : []; }
  // What is derived from a message's objects (joined text, JSON, diffs) is worked out once per
  // object: a page redraws the messages on every navigation, and one of them may hold 40 MB.
  const MEMO = new WeakMap();
  function memo(obj, key, make) {
    if (obj === null || typeof obj !== 'object') return make();
    let m = MEMO.get(obj);
    if (!m) MEMO.set(obj, (m = new Map()));
    if (!m.has(key)) m.set(key, make());
    return m.get(key);
  }
  function textOf(content) {
    if (typeof content === 'string') return content;
    return memo(content, 'text', () => blocks(content).filter((b) => b.type === 'text' && typeof b.text === 'string').map((b) => b.text).join('\n'));
  }
  function str(v) { return typeof v === 'string' ? v : v == null ? '' : memo(v, 'json', () => JSON.stringify(v)); }
  // One line of at most n characters, whitespace collapsed, reading only as much of s as it needs.
  function oneLine(s, n) {
    s = String(s);
    let t = '';
    for (let k = 4 * n + 64; ; k *= 4) {
      t = s.slice(0, k).replace(/\s+/g, ' ').trim();
      if (t.length > n || k >= s.length) break;
    }
    return t.length > n ? t.slice(0, n - 1) + '…' : t;
  }
  function num(v) { return typeof v === 'number' && isFinite(v) ? v : 0; }
  function fmtTokens(n) {
    if (n < 1000) return String(n);
    if (n < 10000) return (n / 1000).toFixed(1) + 'k';
    if (n < 1e6) return Math.round(n / 1000) + 'k';
    return (n / 1e6).toFixed(1) + 'M';
  }
  function fmtDate(ts) {
    const d = new Date(typeof ts === 'number' ? ts : String(ts || ''));
    return isNaN(d.getTime()) ? '' : d.toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' });
  }
  function fmtClock(ts) {
    const d = new Date(typeof ts === 'number' ? ts : String(ts || ''));
    return isNaN(d.getTime()) ? '' : d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  }
  function fmtTime(ts) {
    const d = new Date(typeof ts === 'number' ? ts : String(ts || ''));
    return isNaN(d.getTime()) ? '' : d.toLocaleString();
  }
  function shortPath(p) {
    p = str(p);
    const m = /^\/(?:home|Users)\/[^/]+(\/.*)?$/.exec(p);
    return m ? '~' + (m[1] || '') : p;
  }
  function json(v) { return memo(v, 'pretty', () => { try { return JSON.stringify(v, null, 2); } catch (e) { return String(v); } }); }
  const SAFE_IMAGE = /^image\/(png|jpe?g|gif|webp|bmp|avif)$/i;
  function imageTag(b) { return memo(b, 'img', () => imageHtml(b)); }
  function imageHtml(b) {
    const mime = str(b.mimeType), data = str(b.data);
    if (!SAFE_IMAGE.test(mime) || !/^[A-Za-z0-9+/=\s]*$/.test(data)) return '<div class="muted">[image that cannot be shown]</div>';
    return '<img class="img" alt="attached image" src="data:' + esc(mime) + ';base64,' + esc(data.replace(/\s+/g, '')) + '">';
  }

  // ---------------------------------------------------------------------------------- highlighter
  // highlight.js's common build (vendor/highlight.min.js): its output escapes the code it is given.
  const HLJS = window.hljs;
  const EXT = { h: 'c', hpp: 'cpp', cc: 'cpp', mjs: 'javascript', cjs: 'javascript', jsonl: 'json', htm: 'xml', html: 'xml', svg: 'xml', toml: 'ini', kts: 'kotlin', patch: 'diff', console: 'bash', zsh: 'bash' };
  function langOf(name) {
    name = String(name || '').toLowerCase();
    const ext = name.includes('.') || name.includes('/') ? name.split('/').pop().split('.').pop() : name;
    const lang = own(EXT, ext) || ext;
    return lang && HLJS && HLJS.getLanguage(lang) ? lang : null;
  }
  function highlight(code, lang) {
    code = String(code);
    lang = langOf(lang);
    if (!lang || code.length > HIGHLIGHT_LIMIT) return esc(code);
    try { return HLJS.highlight(code, { language: lang, ignoreIllegals: true }).value; } catch (e) { return esc(code); }
  }

  // ---------------------------------------------------------------------------------- huge bodies
  // A body longer than BODY_LIMIT characters is drawn cut: its first BODY_LIMIT characters (to a
  // line end when one is near), and a "Show all" button that draws the whole when asked. Else one
  // 40 MB tool result is escaped, parsed and laid out on every navigation, for seconds each time.
  // The whole text stays in the page's data; Copy copies all of it, search searches all of it.
  // Shown in full, a body of more than RICH_LIMIT characters is plain text (no Markdown, no
  // colours), and highlight.js colours at most HIGHLIGHT_LIMIT characters anywhere.
  const BODY_LIMIT = 64 * 1024;
  const RICH_LIMIT = 1024 * 1024;
  const HIGHLIGHT_LIMIT = 200000;
  let lazy = new Map();     // data-lazy number -> { text, draw(box) }, for the messages drawn now
  let lazyNext = 0;
  function cutOf(text) {
    if (text.length <= BODY_LIMIT) return null;
    let end = text.lastIndexOf('\n', BODY_LIMIT);
    if (end < BODY_LIMIT / 2) end = BODY_LIMIT;
    const c = text.charCodeAt(end - 1);
    if (c >= 0xd800 && c <= 0xdbff) end--; // not between the halves of a surrogate pair
    return text.slice(0, end);
  }
  function lazyAttr(text, draw) {
    const k = ++lazyNext;
    lazy.set(k, { text, draw });
    return ' data-lazy="' + k + '"';
  }
  function showAllButton(text, head) {
    return '<button class="show-all" title="Draw the whole text">Show all</button>' +
      '<span class="cut-note muted small"> (the first ' + head.length.toLocaleString() + ' of ' + text.length.toLocaleString() + ' characters are shown)</span>';
  }
  function showAll(button) {
    const box = button.closest('[data-lazy]');
    if (!box) return;
    const job = lazy.get(+box.dataset.lazy);
    for (const el of box.querySelectorAll(':scope > .show-all, :scope > .cut-note')) el.remove();
    delete box.dataset.lazy;
    if (job) job.draw(box);
  }
  // The whole of a huge text, as blocks of about BODY_LIMIT characters (cut at line ends) that
  // the browser lays out only when they come near the screen (content-visibility: auto, sized
  // meanwhile by their line count): one 40 MB text node took 20 s to lay out.
  function fillText(el, text) {
    if (text.length <= 2 * BODY_LIMIT) { el.textContent = text; return; }
    const parts = [];
    for (let at = 0; at < text.length;) {
      let end = Math.min(text.length, at + BODY_LIMIT);
      if (end < text.length) {
        const nl = text.lastIndexOf('\n', end);
        if (nl > at + BODY_LIMIT / 2) end = nl + 1;
        const c = text.charCodeAt(end - 1);
        if (c >= 0xd800 && c <= 0xdbff) end--;
      }
      const part = document.createElement('span');
      part.className = 'part';
      part.textContent = text.slice(at, end);
      part.style.containIntrinsicSize = 'auto ' + (lineCount(part.textContent) * 1.45).toFixed(2) + 'em';
      parts.push(part);
      at = end;
    }
    el.replaceChildren(...parts);
  }
  function fillCode(el, text, lang) {
    if (lang && text.length <= HIGHLIGHT_LIMIT) el.innerHTML = highlight(text, lang); else fillText(el, text);
  }
  // Code or output in <pre class="cls">, cut when huge.
  function preBox(cls, text, lang) {
    text = String(text);
    const head = cutOf(text);
    if (head === null) return '<pre class="' + cls + '">' + (lang ? highlight(text, lang) : esc(text)) + '</pre>';
    return '<div class="cutbox"' + lazyAttr(text, (box) => fillCode(box.querySelector('pre'), text, lang)) + '><pre class="' + cls + '">' +
      (lang ? highlight(head, lang) : esc(head)) + '</pre>' + showAllButton(text, head) + '</div>';
  }
  // Markdown in <div class="md">, cut when huge.
  function mdBox(src) {
    src = String(src);
    const head = cutOf(src);
    if (head === null) return '<div class="md">' + markdown(src) + '</div>';
    const draw = (box) => {
      if (src.length <= RICH_LIMIT) { box.innerHTML = markdown(src); return; }
      const pre = document.createElement('pre');
      pre.className = 'out plain';
      fillText(pre, src);
      box.replaceChildren(pre);
    };
    return '<div class="md"' + lazyAttr(src, draw) + '>' + markdown(head) + showAllButton(src, head) + '</div>';
  }
  // Plain text in an element that wraps it (thinking), cut when huge.
  function textBox(tag, cls, text) {
    const head = cutOf(text);
    if (head === null) return '<' + tag + ' class="' + cls + '">' + esc(text) + '</' + tag + '>';
    return '<' + tag + ' class="' + cls + '"' + lazyAttr(text, (box) => fillText(box, text)) + '>' + esc(head) + showAllButton(text, head) + '</' + tag + '>';
  }

  // ---------------------------------------------------------------------------------- markdown
  // markdown-it (vendor/markdown-it.min.js), CommonMark with GFM tables and strikethrough. Raw
  // HTML in a message is shown as text (html: false), links keep only safe schemes, and images
  // become links (the page fetches nothing).
  const MD = window.markdownit({ html: false, linkify: true, typographer: false, highlight: null });
  MD.validateLink = function (url) {
    const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(String(url).trim());
    return !scheme || /^(https?|mailto)$/i.test(scheme[1]);
  };
  MD.renderer.rules.fence = function (tokens, i) {
    const t = tokens[i];
    const lang = String(t.info || '').trim().split(/\s+/)[0];
    return codeBlock(t.content.replace(/\n$/, ''), lang);
  };
  MD.renderer.rules.code_block = function (tokens, i) { return codeBlock(tokens[i].content.replace(/\n$/, ''), ''); };
  MD.renderer.rules.image = function (tokens, i) {
    const t = tokens[i];
    const src = t.attrGet('src') || '';
    return '<a href="' + esc(src) + '" rel="noopener noreferrer" target="_blank">🖼 ' + esc(t.content || 'image') + '</a>';
  };
  const linkOpen = MD.renderer.rules.link_open || function (tokens, i, options, env, self) { return self.renderToken(tokens, i, options); };
  MD.renderer.rules.link_open = function (tokens, i, options, env, self) {
    const href = tokens[i].attrGet('href') || '';
    if (!href.startsWith('#')) { tokens[i].attrSet('rel', 'noopener noreferrer'); tokens[i].attrSet('target', '_blank'); }
    return linkOpen(tokens, i, options, env, self);
  };
  // GFM task list items ("- [ ] to do", "- [x] done") show a box, as text: the page has no inputs.
  MD.core.ruler.after('inline', 'task-boxes', (st) => {
    const t = st.tokens;
    for (let i = 2; i < t.length; i++) {
      if (t[i].type !== 'inline' || t[i - 1].type !== 'paragraph_open' || t[i - 2].type !== 'list_item_open') continue;
      const first = t[i].children && t[i].children[0];
      const m = first && first.type === 'text' ? /^\[([ xX])\][ \t]/.exec(first.content) : null;
      if (m) first.content = (m[1] === ' ' ? '☐ ' : '☑ ') + first.content.slice(m[0].length);
    }
  });
  function codeBlock(code, lang) {
    return '<div class="codebox"><button class="copy" data-copy="code" title="Copy">Copy</button><pre class="code"><code>' + highlight(code, lang) + '</code></pre></div>';
  }
  function markdown(src) {
    try { return MD.render(String(src)); } catch (e) { return '<pre class="out">' + esc(src) + '</pre>'; }
  }

  // ---------------------------------------------------------------------------------- tree text
  function formatReadRange(offset, limit) {
    const n = (v) => { if (typeof v === 'string' && v.trim() !== '') v = Number(v); return typeof v === 'number' && isFinite(v) ? v : undefined; };
    if (offset == null && limit == null) return '';
    const start = offset == null ? 1 : n(offset);
    if (start === undefined) return '';
    if (limit == null) return ':' + start;
    const count = n(limit);
    if (count === undefined) return '';
    return ':' + start + '-' + (start + count - 1);
  }
  function describeCall(name, args) {
    args = isObj(args) ? args : {};
    const path = shortPath(args.path != null ? args.path : args.file_path);
    switch (name) {
      case 'read': return 'read ' + path + formatReadRange(args.offset, args.limit);
      case 'write': case 'edit': return name + ' ' + path;
      case 'bash': return '$ ' + oneLine(str(args.command), 60);
      case 'grep': return 'grep /' + str(args.pattern) + '/ in ' + (path || '.');
      case 'find': return 'find ' + str(args.pattern) + ' in ' + (path || '.');
      case 'ls': return 'ls ' + (path || '.');
      default: return String(name) + ' ' + oneLine(str(args), 40);
    }
  }
  const treeCache = new Array(N);
  function treeText(p) { return treeCache[p] || (treeCache[p] = treeLine(p)); }
  function treeLine(p) {
    const e = E[p];
    const m = msgOf(e);
    let role = '', text = '', cls = 'muted';
    if (m) {
      const r = String(m.role);
      if (r === 'user') {
        role = 'user'; cls = 'user'; text = textOf(m.content) || '(image)';
        const skill = skillOf(m.content);
        if (skill) text = '[skill ' + skill.name + ']' + (skill.rest ? ' ' + skill.rest : '');
      }
      else if (r === 'assistant') {
        role = 'assistant'; cls = 'assistant'; text = textOf(m.content);
        if (!text.trim()) {
          const calls = blocks(m.content).filter((b) => b.type === 'toolCall').map((b) => b.name);
          text = m.stopReason === 'aborted' ? '(aborted)' : m.errorMessage ? '⚠ ' + str(m.errorMessage) : calls.length ? '→ ' + calls.join(', ') : '(no text)';
        }
      } else if (r === 'toolResult') {
        cls = 'tool';
        const call = toolCall(m.toolCallId);
        text = '[' + (call ? describeCall(call.name, call.arguments) : str(m.toolName) || 'tool') + ']' + (m.isError === true ? ' ✗' : '');
      } else if (r === 'bashExecution') { cls = 'tool'; text = '[$ ' + str(m.command) + ']'; }
      else if (r === 'system') text = '[system prompt' + (isObj(m.sections) ? ': ' + Object.keys(m.sections).join(', ') : '') + ']';
      else if (r === 'custom') { cls = 'custom'; text = '[' + str(m.customType) + '] ' + textOf(m.content); }
      else text = '[' + r + ']';
    } else if (e) {
      switch (e.type) {
        case 'compaction': cls = 'compaction'; text = '[compaction: ' + Math.round(num(e.tokensBefore) / 1000) + 'k tokens]'; break;
        case 'branch_summary': cls = 'summary'; text = '[branch summary] ' + str(e.summary); break;
        case 'custom_message': cls = 'custom'; text = '[' + str(e.customType) + '] ' + textOf(e.content); break;
        case 'model_change': text = '[model: ' + str(e.provider) + '/' + str(e.modelId) + ']'; break;
        case 'thinking_level_change': text = '[thinking: ' + str(e.thinkingLevel) + ']'; break;
        case 'context_edit': text = '[context ' + (e.replacement === null ? 'omit' : 'replace') + ': ' + str(e.targetId) + ']'; break;
        case 'label': text = '[label ' + str(e.targetId) + ': ' + (str(e.label) || '(cleared)') + ']'; break;
        case 'session_info': text = '[name: ' + str(e.name) + ']'; break;
        case 'usage': text = '[usage ' + str(e.kind) + ': ' + str(e.model) + ']'; break;
        case 'custom': text = '[state: ' + str(e.customType) + ']'; break;
        default: text = '[' + str(e.type) + ']';
      }
    }
    return { role, cls, text: oneLine(text, 160) };
  }
  const searchCache = new Array(N);
  function searchText(p) {
    let s = searchCache[p];
    if (s === undefined) {
      const e = E[p], m = msgOf(e);
      const parts = [labelOf(p) || '', treeText(p).text];
      if (m) {
        parts.push(String(m.role), textOf(m.content));
        for (const b of blocks(m.content)) {
          if (b.type === 'thinking') parts.push(str(b.thinking));
          if (b.type === 'toolCall') parts.push(str(b.name), str(b.arguments));
        }
        if (m.role === 'bashExecution') parts.push(str(m.command), str(m.output));
        if (m.role === 'system' && isObj(m.sections)) for (const [k, v] of Object.entries(m.sections)) parts.push(k, str(v));
      } else if (e) {
        parts.push(String(e.type), str(e.summary), str(e.customType), textOf(e.content), str(e.id));
      }
      s = searchCache[p] = parts.join(' ').toLowerCase();
    }
    return s;
  }

  // ---------------------------------------------------------------------------------- state
  const state = {
    leaf: DEFAULT_LEAF,
    target: -1,
    filter: 'default',
    query: '',
    path: [],
    onPath: new Set(),
  };

  function pathTo(p) {
    const path = [];
    for (let q = p; q >= 0; q = PARENT[q]) path.push(q);
    return path.reverse();
  }
  function newestLeaf(p) {
    for (;;) { const k = KIDS[p]; if (!k || !k.length) return p; p = k[k.length - 1]; }
  }

  // ---------------------------------------------------------------------------------- sidebar tree
  // Whether an assistant message has text (one with tool calls only is left out of most filters),
  // worked out once per entry: filters and searches re-run it for every row.
  const textFlags = new Int8Array(N);
  function hasText(p, m) {
    if (!textFlags[p]) {
      let found = typeof m.content === 'string' && /\S/.test(m.content);
      if (Array.isArray(m.content)) {
        for (const b of m.content) if (isObj(b) && b.type === 'text' && typeof b.text === 'string' && /\S/.test(b.text)) { found = true; break; }
      }
      textFlags[p] = found ? 1 : 2;
    }
    return textFlags[p] === 1;
  }
  const SETTINGS = new Set(['label', 'custom', 'context_edit', 'model_change', 'thinking_level_change', 'usage', 'session_info']);
  function passes(p) {
    if (p === state.leaf) return true;
    const e = E[p], m = msgOf(e), f = state.filter;
    if (f !== 'all') {
      if (m && m.role === 'assistant' && !hasText(p, m) && !(m.stopReason === 'error' || m.stopReason === 'aborted')) return false;
      if (f === 'user' && !(m && m.role === 'user')) return false;
      if (f === 'labeled' && !labelOf(p)) return false;
      if ((f === 'default' || f === 'no-tools') && e && SETTINGS.has(e.type)) return false;
      if (f === 'no-tools' && m && (m.role === 'toolResult' || m.role === 'bashExecution')) return false;
    }
    if (state.query) {
      // Whether an entry matches is kept per query: a branch switch rebuilds the rows, and
      // searching a 40 MB entry's text again each time would cost tens of milliseconds.
      const key = state.query.join(' ');
      if (hits.key !== key) hits = { key, of: new Int8Array(N) };
      if (!hits.of[p]) {
        const text = searchText(p);
        hits.of[p] = state.query.every((token) => text.includes(token)) ? 1 : 2;
      }
      if (hits.of[p] === 2) return false;
    }
    return true;
  }
  let hits = { key: '', of: null };
  let rows = [];      // [position, prefix] for every visible row, in display order
  let rowOf = new Map();
  function buildRows() {
    const visible = new Uint8Array(N);
    const vpar = new Int32Array(N).fill(-1);
    const vkids = new Map();
    const vroots = [];
    let shown = 0;
    for (const p of ORDER) {
      const up = PARENT[p];
      vpar[p] = up < 0 ? -1 : visible[up] ? up : vpar[up];
      if (passes(p)) {
        visible[p] = 1;
        shown++;
        const v = vpar[p];
        if (v < 0) vroots.push(p);
        else { let k = vkids.get(v); if (!k) vkids.set(v, (k = [])); k.push(p); }
      }
    }
    const out = [];
    const stack = [];
    const many = vroots.length > 1;
    for (let i = vroots.length - 1; i >= 0; i--) {
      const last = i === vroots.length - 1;
      stack.push([vroots[i], many ? (last ? '└─ ' : '├─ ') : '', many ? (last ? '   ' : '│  ') : '']);
    }
    while (stack.length) {
      const [p, line, cont] = stack.pop();
      out.push([p, line]);
      const k = vkids.get(p);
      if (!k) continue;
      if (k.length === 1) { stack.push([k[0], cont, cont]); continue; }
      for (let i = k.length - 1; i >= 0; i--) {
        const last = i === k.length - 1;
        stack.push([k[i], cont + (last ? '└─ ' : '├─ '), cont + (last ? '   ' : '│  ')]);
      }
    }
    rows = out;
    rowOf = new Map();
    out.forEach((r, i) => rowOf.set(r[0], i));
    $('#tree-status').textContent = shown.toLocaleString() + ' / ' + N.toLocaleString() + ' entries';
    $('#tree-inner').style.height = rows.length * ROW + 'px';
    drawTree(true);
  }
  const ROW = 19;
  // Deep trees: past 8 levels the indentation shows its depth as a number and its last 4 levels.
  const MAX_INDENT = 8 * 3;
  function shownPrefix(prefix) {
    return prefix.length <= MAX_INDENT ? prefix : '┆' + prefix.length / 3 + ' ' + prefix.slice(-4 * 3);
  }
  let cursor = -1;           // the tree row the arrow keys are on (rows are focusable)
  const treeBox = () => $('#tree');
  let drawn = { from: -1, to: -1 };
  function drawTree(force) {
    const box = treeBox();
    const from = Math.max(0, Math.floor(box.scrollTop / ROW) - 20);
    const to = Math.min(rows.length, Math.ceil((box.scrollTop + box.clientHeight) / ROW) + 20);
    if (!force && from === drawn.from && to === drawn.to) return;
    drawn = { from, to };
    let html = '';
    for (let i = from; i < to; i++) {
      const [p, prefix] = rows[i];
      const t = treeText(p);
      const label = labelOf(p);
      const cls = 'row' + (state.onPath.has(p) ? ' on-path' : '') + (p === state.target ? ' current' : '') + (p === state.leaf ? ' leaf' : '') + (i === cursor ? ' cursor' : '');
      const forks = KIDS[p] && KIDS[p].length > 1 ? '<span class="fork" title="' + KIDS[p].length + ' branches start here">↳' + KIDS[p].length + '</span>' : '';
      html += '<div class="' + cls + '" role="treeitem" tabindex="-1" data-i="' + i + '" data-p="' + p + '" style="top:' + i * ROW + 'px" title="' + esc(t.text) + '">' +
        '<span class="prefix">' + esc(shownPrefix(prefix)) + '</span><span class="dot">' + (state.onPath.has(p) ? '•' : ' ') + '</span>' + forks +
        (label ? '<span class="label">' + esc(label) + '</span>' : '') +
        (t.role ? '<span class="who k-' + t.cls + '">' + t.role + ':</span> ' : '') +
        '<span class="t' + (t.role ? '' : ' k-' + t.cls) + '">' + esc(t.text) + '</span></div>';
    }
    const focused = document.activeElement && document.activeElement.closest && document.activeElement.closest('#tree');
    $('#tree-inner').innerHTML = html;
    if (focused) focusCursor();
  }
  function focusCursor() {
    const el = cursor >= 0 ? document.querySelector('#tree .row[data-i="' + cursor + '"]') : null;
    if (el) el.focus({ preventScroll: true }); else treeBox().focus({ preventScroll: true });
  }
  function moveCursor(i) {
    if (!rows.length) return;
    cursor = Math.max(0, Math.min(rows.length - 1, i));
    const box = treeBox(), top = cursor * ROW;
    if (top < box.scrollTop) box.scrollTop = top;
    else if (top + ROW > box.scrollTop + box.clientHeight) box.scrollTop = top + ROW - box.clientHeight;
    drawTree(true);
    focusCursor();
  }
  function treeKey(ev) {
    if (cursor < 0 || cursor >= rows.length) {
      const at = rowOf.get(state.target >= 0 ? state.target : state.leaf);
      cursor = at === undefined ? 0 : at;
    }
    const page = Math.max(1, Math.floor(treeBox().clientHeight / ROW) - 1);
    const step = own({ ArrowDown: 1, ArrowUp: -1, PageDown: page, PageUp: -page }, ev.key);
    if (step !== undefined) moveCursor(cursor + step);
    else if (ev.key === 'Home') moveCursor(0);
    else if (ev.key === 'End') moveCursor(rows.length - 1);
    else if ((ev.key === 'Enter' || ev.key === ' ') && rows[cursor]) {
      const p = rows[cursor][0];
      navigate(newestLeaf(p), p, 'center');
      focusCursor();
    } else return;
    ev.preventDefault();
    ev.stopPropagation();
  }
  function revealRow(p) {
    const i = rowOf.get(p);
    if (i === undefined) return;
    const box = treeBox();
    const top = i * ROW;
    if (top < box.scrollTop || top + ROW > box.scrollTop + box.clientHeight) box.scrollTop = Math.max(0, top - box.clientHeight / 2);
    drawTree(true);
  }

  // ---------------------------------------------------------------------------------- context model
  // What the model saw at the branch's end (SPEC section 6): entries before the latest
  // compaction's first kept entry were summarised away, system messages among the kept ones
  // were folded into the compaction, older compactions were superseded, and each context edit
  // (the last per target, among the entries still in context) replaced or omitted its target.
  function contextOf(path) {
    const status = new Map();
    let c = -1;
    for (let i = path.length - 1; i >= 0; i--) if (E[path[i]] && E[path[i]].type === 'compaction') { c = i; break; }
    const inContext = [];
    if (c < 0) inContext.push(...path);
    else {
      const comp = E[path[c]];
      let start = path.findIndex((p, i) => i < c && E[p] && E[p].id === comp.firstKeptEntryId);
      if (start < 0) start = c;
      for (let i = 0; i < c; i++) {
        const p = path[i], m = msgOf(E[p]);
        if (i < start) status.set(p, { kind: 'compacted', by: path[c] });
        else if (m && m.role === 'system') status.set(p, { kind: 'folded', by: path[c] });
        else { inContext.push(p); if (E[p].type === 'compaction') status.set(p, { kind: 'superseded', by: path[c] }); }
      }
      inContext.push(...path.slice(c));
    }
    const edits = new Map();
    for (const p of inContext) if (E[p].type === 'context_edit') edits.set(String(E[p].targetId), p);
    for (const p of inContext) {
      const by = edits.get(String(E[p].id));
      if (by !== undefined && !status.has(p)) {
        const edit = E[by];
        status.set(p, { kind: edit.replacement === null ? 'omitted' : 'replaced', by, replacement: isObj(edit.replacement) ? edit.replacement.content : undefined });
      }
    }
    return status;
  }

  // ---------------------------------------------------------------------------------- messages
  let ctx = new Map();
  let results = new Map();   // toolCallId -> position of its result on the path
  let items = [];            // what the message list shows: {p}, or {boundary: compaction} where the model's context starts
  let win = { lo: 0, hi: 0 };
  const CHUNK = 60;

  function linkTo(p) {
    const id = E[p] ? str(E[p].id) : '';
    return '<a class="ref" href="#entry-' + encodeURIComponent(id) + '">' + esc(id) + '</a>';
  }
  function head(p, kind, extra) {
    const e = E[p];
    const label = labelOf(p);
    const ts = e && e.timestamp;
    return '<div class="head"><span class="kind">' + esc(kind) + '</span>' + (extra || '') +
      (label ? '<span class="label">' + esc(label) + '</span>' : '') +
      '<span class="grow"></span><time title="' + esc(fmtTime(ts)) + '">' + esc(fmtClock(ts)) + '</time>' +
      '<a class="permalink" href="#entry-' + encodeURIComponent(str(e && e.id)) + '" title="Link to this entry">#</a>' +
      '<button class="copy" data-copy="link" data-p="' + p + '" title="Copy a link to this entry">Copy link</button></div>';
  }
  function lineCount(text) {
    let n = 1;
    for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) n++;
    return n;
  }
  function longText(text, lang, lines) {
    text = String(text);
    const head = cutOf(text);
    const shown = (head === null ? text : head).replace(/\t/g, '   ');
    const count = lineCount(shown);
    const body = lang ? highlight(shown, lang) : esc(shown);
    const copy = '<button class="copy" data-copy="code" title="Copy">Copy</button>';
    if (head === null && count <= lines) return '<div class="codebox">' + copy + '<pre class="out">' + body + '</pre></div>';
    const draw = (box) => { fillCode(box.querySelector('pre'), text.replace(/\t/g, '   '), lang); box.classList.add('open'); };
    return '<div class="codebox' + (count > lines ? ' long' : '') + '"' + (head === null ? '' : lazyAttr(text, draw)) + ' style="--lines:' + lines + '">' + copy +
      '<pre class="out">' + body + '</pre>' + (count > lines ? '<button class="more">' + (head === null ? '… ' + (count - lines).toLocaleString() + ' more lines' : 'Show ' + (count - lines).toLocaleString() + ' more lines') + '</button>' : '') +
      (head === null ? '' : showAllButton(text, head)) + '</div>';
  }
  function contentHtml(content, md) {
    if (typeof content === 'string') return md ? mdBox(content) : longText(content, null, 30);
    let html = '';
    for (const b of blocks(content)) {
      if (b.type === 'text') html += md ? mdBox(str(b.text)) : longText(str(b.text), null, 30);
      else if (b.type === 'image') html += imageTag(b);
      else html += preBox('out', json(b));
    }
    return html;
  }
  function diffHtml(diff) {
    diff = String(diff);
    const head = cutOf(diff);
    if (head === null) return diffPre(diff);
    const draw = (box) => {
      if (diff.length <= RICH_LIMIT) { box.innerHTML = diffPre(diff); return; }
      const pre = document.createElement('pre');
      pre.className = 'diff';
      fillText(pre, diff);
      box.replaceChildren(pre);
    };
    return '<div class="cutbox"' + lazyAttr(diff, draw) + '>' + diffPre(head) + showAllButton(diff, head) + '</div>';
  }
  function diffPre(diff) {
    let html = '<pre class="diff">';
    for (const line of String(diff).split('\n')) {
      const cls = /^\+/.test(line) ? 'add' : /^-/.test(line) ? 'del' : /^@@/.test(line) ? 'hunk' : '';
      html += '<span class="' + cls + '">' + esc(line.replace(/\t/g, '   ')) + '\n</span>';
    }
    return html + '</pre>';
  }
  function editsOf(args) {
    let edits = args.edits;
    if (typeof edits === 'string') { try { edits = JSON.parse(edits); } catch (e) { edits = []; } }
    if (isObj(edits)) edits = [edits];
    edits = Array.isArray(edits) ? edits.filter(isObj) : [];
    if (typeof args.oldText === 'string' || typeof args.newText === 'string') edits.push({ oldText: args.oldText, newText: args.newText });
    return edits;
  }
  function commandLine(command) {
    const head = cutOf(command);
    if (head === null) return '<div class="cmd"><span class="prompt">$</span> ' + highlight(command, 'sh') + '</div>';
    return '<div class="cmd"><span class="prompt">$</span> <span' + lazyAttr(command, (box) => fillCode(box, command, 'sh')) + '>' + highlight(head, 'sh') +
      showAllButton(command, head) + '</span></div>';
  }
  function toolHtml(call) {
    const args = isObj(call.arguments) ? call.arguments : {};
    const rp = results.get(call.id);
    const result = rp !== undefined ? msgOf(E[rp]) : null;
    const state_ = result ? (result.isError === true ? 'error' : 'ok') : 'pending';
    const name = str(call.name);
    const st = rp !== undefined ? ctx.get(rp) : undefined;
    const seen = st && st.kind === 'replaced' ? st.replacement : st && st.kind === 'omitted' ? [] : result ? result.content : [];
    const output = textOf(seen);
    const images = blocks(seen).filter((b) => b.type === 'image').map(imageTag).join('');
    const path = str(args.path != null ? args.path : args.file_path);
    let html = '<div class="tool ' + state_ + '"' + (rp !== undefined ? ' id="entry-' + esc(str(E[rp].id)) + '"' : '') + '>';
    if (name === 'bash') {
      html += commandLine(str(args.command));
      if (output.trim()) html += longText(output.trimEnd(), null, 8);
    } else if (name === 'read') {
      html += '<div class="call"><b>read</b> <span class="path">' + esc(shortPath(path)) + '</span><span class="range">' + esc(formatReadRange(args.offset, args.limit)) + '</span></div>';
      html += images;
      if (output) html += longText(output, langOf(path), 12);
    } else if (name === 'write') {
      const content = str(args.content);
      const count = memo(args, 'lines', () => lineCount(content));
      html += '<div class="call"><b>write</b> <span class="path">' + esc(shortPath(path)) + '</span> <span class="muted">' + count.toLocaleString() + (count === 1 ? ' line' : ' lines') + '</span></div>';
      html += longText(content, langOf(path), 12);
      if (output.trim()) html += '<div class="muted small">' + esc(oneLine(output, 300)) + '</div>';
    } else if (name === 'edit') {
      html += '<div class="call"><b>edit</b> <span class="path">' + esc(shortPath(path)) + '</span></div>';
      const details = result && isObj(result.details) ? result.details : {};
      if (typeof details.diff === 'string' && details.diff) html += diffHtml(details.diff);
      else {
        for (const edit of memo(args, 'edits', () => editsOf(args))) {
          html += diffHtml(memo(edit, 'diff', () => '-' + str(edit.oldText).split('\n').join('\n-') + '\n+' + str(edit.newText).split('\n').join('\n+')));
        }
      }
      if (result && result.isError === true && output.trim()) html += longText(output, null, 8);
    } else {
      html += '<div class="call"><b>' + esc(name) + '</b> <span class="muted">' + esc(describeCall(name, args).slice(name.length + 1)) + '</span></div>';
      if (Object.keys(args).length) html += '<details class="args"><summary>arguments</summary>' + preBox('out', json(args), 'json') + '</details>';
      html += images;
      if (output) html += longText(output, null, 10);
    }
    const nested = result && isObj(result.nestedCalls) && Array.isArray(result.nestedCalls.calls) ? result.nestedCalls : null;
    if (nested && nested.calls.length) {
      // Calls this tool made to other tools (a codemode script, say), recorded without results.
      const icons = { ok: '✓', error: '✗', unfinished: '…' };
      const lines = memo(nested, 'lines', () => nested.calls.filter(isObj).map((c) => (own(icons, c.status) || '?') + ' ' + str(c.name) + ' ' +
        (c.arguments !== undefined ? JSON.stringify(c.arguments) : '[arguments omitted, ' + str(c.argumentsBytes) + ' bytes]') +
        (typeof c.durationMs === 'number' ? ' ' + c.durationMs + 'ms' : '') + (c.error ? '\n    ' + str(c.error).split('\n').join('\n    ') : '')).join('\n'));
      html += '<div class="call small">nested calls: ' + nested.calls.length + (nested.complete === false ? ' (incomplete record)' : '') + '</div>' + longText(lines, null, 4);
    }
    if (!result) html += '<div class="muted small">no result on this branch</div>';
    // A result summarised away shares its call's note; an edited one gets its own.
    if (st && (st.kind === 'replaced' || st.kind === 'omitted')) {
      html += contextNote(rp, st) + '<details class="was"><summary>' + (st.kind === 'replaced' ? 'original result (not sent)' : 'result (not sent)') +
        '</summary>' + contentHtml(result.content, false) + '</details>';
    }
    return html + '</div>';
  }
  // Pi sends an invoked skill as the user message "<skill name=… location=…>\n…\n</skill>",
  // optionally followed by the user's own text; shown folded, as Pi's export does.
  const SKILL = /^<skill name="([^"]+)" location="([^"]+)">\n([\s\S]*?)\n<\/skill>(?:\n\n([\s\S]+))?$/;
  function skillOf(content) {
    const text = textOf(content);
    const m = text.startsWith('<skill name="') ? SKILL.exec(text) : null;
    return m ? { name: m[1], location: m[2], body: m[3], rest: (m[4] || '').trim() } : null;
  }
  function toolSpec(t) {
    if (!isObj(t)) return '<div class="toolspec"><b>' + esc(str(t)) + '</b></div>';
    let html = '<div class="toolspec"><b>' + esc(str(t.name)) + '</b> ' + esc(str(t.description));
    const params = isObj(t.parameters) && isObj(t.parameters.properties) ? t.parameters.properties : null;
    if (params) {
      const required = Array.isArray(t.parameters.required) ? t.parameters.required : [];
      for (const [name, prop] of Object.entries(params)) {
        html += '<div class="param"><code>' + esc(name) + '</code> <span class="muted">' + esc(isObj(prop) && prop.type ? str(prop.type) : 'any') +
          (required.includes(name) ? ', required' : ', optional') + '</span>' + (isObj(prop) && prop.description ? ' — ' + esc(str(prop.description)) : '') + '</div>';
      }
    }
    return html + '</div>';
  }
  function messageBody(p, m, replaced) {
    const content = replaced !== undefined ? replaced : m.content;
    const role = String(m.role);
    if (role === 'user') {
      const skill = skillOf(content);
      if (!skill) return contentHtml(content, true);
      return '<details class="section skill"><summary>skill <b>' + esc(skill.name) + '</b> <span class="muted">' + esc(shortPath(skill.location)) + '</span></summary>' +
        mdBox(skill.body) + '</details>' + blocks(content).filter((b) => b.type === 'image').map(imageTag).join('') +
        (skill.rest ? mdBox(skill.rest) : '');
    }
    if (role === 'assistant') {
      let html = '';
      const list = typeof content === 'string' ? [{ type: 'text', text: content }] : blocks(content);
      for (const b of list) {
        if (b.type === 'text' && str(b.text).trim()) html += mdBox(str(b.text));
        else if (b.type === 'thinking' && (str(b.thinking).trim() || b.redacted)) {
          html += '<div class="thinking">' + (b.redacted ? '<div class="thinking-body"><i>(redacted)</i></div>' : textBox('div', 'thinking-body', str(b.thinking))) + '<div class="thinking-stub">Thinking…</div></div>';
        } else if (b.type === 'toolCall') html += toolHtml(b);
        else if (b.type === 'image') html += imageTag(b);
      }
      if (m.stopReason === 'aborted') html += '<div class="error">Aborted</div>';
      else if (m.stopReason === 'error') html += '<div class="error">Error: ' + esc(str(m.errorMessage) || 'unknown error') + '</div>';
      const u = isObj(m.usage) ? m.usage : null;
      html += '<div class="foot">' + esc(str(m.provider) + '/' + str(m.model)) +
        (u ? ' · ↑' + fmtTokens(num(u.input)) + ' ↓' + fmtTokens(num(u.output)) + (num(u.cacheRead) ? ' R' + fmtTokens(num(u.cacheRead)) : '') +
          (num(u.cacheWrite) ? ' W' + fmtTokens(num(u.cacheWrite)) : '') + (isObj(u.cost) ? ' · $' + num(u.cost.total).toFixed(4) : '') : '') + '</div>';
      return html;
    }
    if (role === 'toolResult') {
      const call = toolCall(m.toolCallId);
      return '<div class="call"><b>' + esc(str(m.toolName) || 'tool') + '</b> result' + (call ? ' <span class="muted">' + esc(describeCall(call.name, call.arguments)) + '</span>' : '') + '</div>' + contentHtml(content, false);
    }
    if (role === 'bashExecution') {
      const failed = m.cancelled === true || (m.exitCode !== 0 && m.exitCode != null);
      return '<div class="tool ' + (failed ? 'error' : 'ok') + '">' + commandLine(str(m.command)) +
        (str(m.output) ? longText(str(m.output), null, 10) : '') +
        (m.cancelled === true ? '<div class="error">(cancelled)</div>' : failed ? '<div class="error">(exit ' + esc(str(m.exitCode)) + ')</div>' : '') + '</div>';
    }
    if (role === 'system') {
      let html = '';
      const text = textOf(m.content);
      if (m.replace === true) html += '<div class="muted small">replaces every earlier prompt and tool</div>';
      if (text) html += longText(text, null, 10);
      if (isObj(m.sections)) {
        for (const [k, v] of Object.entries(m.sections)) {
          html += '<details class="section"><summary>§ ' + esc(k) + (v === null ? ' (removed)' : '') + '</summary>' + (v === null ? '' : longText(str(v), null, 40)) + '</details>';
        }
      }
      const names = (list) => (Array.isArray(list) ? list : []).map((t) => (isObj(t) ? str(t.name) : str(t)));
      const added = Array.isArray(m.toolsAdded) ? m.toolsAdded : [];
      if (added.length) {
        html += '<details class="section"><summary>tools added: ' + esc(names(added).join(', ')) + '</summary>';
        for (const t of added) html += toolSpec(t);
        html += '</details>';
      }
      if (names(m.toolsRemoved).length) html += '<div class="muted small">tools removed: ' + esc(names(m.toolsRemoved).join(', ')) + '</div>';
      return html;
    }
    if (role === 'custom') return contentHtml(content, true);
    if (role === 'branchSummary' || role === 'compactionSummary') return mdBox(str(m.summary));
    return preBox('out', json(m));
  }
  function contextNote(p, st) {
    if (!st || st.kind === 'compacted') return ''; // one boundary line marks these (itemHtml)
    const what = own({
      compacted: 'Not in the model’s context: summarised by the compaction ',
      folded: 'Folded into the system prompt kept by the compaction ',
      superseded: 'Superseded by the later compaction ',
      omitted: 'Omitted from the model’s context by the edit ',
      replaced: 'The model saw replaced content (edit ',
    }, st.kind);
    return '<div class="ctx-note ' + st.kind + '">' + what + linkTo(st.by) + (st.kind === 'replaced' ? ')' : '') + '</div>';
  }
  const KINDS = { toolResult: 'tool result', bashExecution: 'bash', branchSummary: 'branch summary', compactionSummary: 'compaction summary', system: 'system prompt' };
  function entryHtml(p) {
    const e = E[p];
    if (!e) return '';
    const st = ctx.get(p);
    const m = msgOf(e);
    let cls = 'entry', kind = String(e.type), body = '', extra = '';
    if (m) {
      const role = String(m.role);
      cls += ' m-' + role.replace(/[^A-Za-z]/g, '');
      kind = own(KINDS, role) || role;
      if (role === 'custom') kind = 'custom: ' + str(m.customType);
      if (st && st.kind === 'replaced') {
        body = '<div class="now">' + messageBody(p, m, st.replacement) + '</div>' +
          '<details class="was"><summary>original content (not sent)</summary>' + messageBody(p, m) + '</details>';
      } else if (st && st.kind === 'omitted') {
        body = '<details class="was"><summary>content (not sent)</summary>' + messageBody(p, m) + '</details>';
      } else body = messageBody(p, m);
    } else {
      switch (e.type) {
        case 'compaction':
          cls += ' compaction';
          kind = 'compaction';
          extra = '<span class="muted">' + num(e.tokensBefore).toLocaleString() + ' tokens before · keeps from ' + linkTo(POS.has(str(e.firstKeptEntryId)) ? POS.get(str(e.firstKeptEntryId)) : p) + '</span>';
          body = (st ? '' : '<div class="muted small">The model saw this summary in place of everything before the first kept entry.</div>') +
            mdBox(str(e.summary));
          if (isObj(e.systemMessage)) body += '<details class="section"><summary>system prompt carried over</summary>' + messageBody(p, e.systemMessage) + '</details>';
          break;
        case 'branch_summary':
          cls += ' summary';
          kind = 'branch summary';
          body = mdBox(str(e.summary));
          break;
        case 'custom_message': {
          const hidden = e.display === false;
          cls += ' custom' + (hidden ? ' hidden-msg' : '');
          kind = str(e.customType) + (hidden ? ' · hidden in Pi' : '');
          const content = st && st.kind === 'replaced' ? st.replacement : e.content;
          body = st && st.kind === 'omitted' ? '<details class="was"><summary>content (not sent)</summary>' + contentHtml(e.content, true) + '</details>'
            : contentHtml(content, true) + (st && st.kind === 'replaced' ? '<details class="was"><summary>original content (not sent)</summary>' + contentHtml(e.content, true) + '</details>' : '');
          break;
        }
        case 'model_change':
          return '<div class="entry meta" id="entry-' + esc(str(e.id)) + '">Model: <b>' + esc(str(e.provider) + '/' + str(e.modelId)) + '</b></div>';
        case 'thinking_level_change':
          return '<div class="entry meta" id="entry-' + esc(str(e.id)) + '">Thinking level: <b>' + esc(str(e.thinkingLevel)) + '</b></div>';
        case 'context_edit': {
          const target = POS.get(str(e.targetId));
          const inert = st && (st.kind === 'compacted');
          return '<div class="entry meta edit' + (inert ? ' outside' : '') + '" id="entry-' + esc(str(e.id)) + '">Context edit: ' + (e.replacement === null ? 'omits ' : 'replaces the content of ') +
            (target !== undefined ? linkTo(target) : esc(str(e.targetId))) + '</div>';
        }
        case 'label':
          return '<div class="entry meta hidden-msg" id="entry-' + esc(str(e.id)) + '">Label on ' + esc(str(e.targetId)) + ': ' + esc(str(e.label) || '(cleared)') + '</div>';
        case 'session_info':
          return '<div class="entry meta hidden-msg" id="entry-' + esc(str(e.id)) + '">Session name: ' + esc(str(e.name)) + '</div>';
        case 'usage':
          return '<div class="entry meta hidden-msg" id="entry-' + esc(str(e.id)) + '">Usage (' + esc(str(e.kind)) + ') ' + esc(str(e.provider) + '/' + str(e.model)) +
            (isObj(e.usage) ? ' · ↑' + fmtTokens(num(e.usage.input)) + ' ↓' + fmtTokens(num(e.usage.output)) + (isObj(e.usage.cost) ? ' · $' + num(e.usage.cost.total).toFixed(4) : '') : '') +
            (e.note ? ' · ' + esc(str(e.note)) : '') + '</div>';
        case 'custom':
          return '<details class="entry meta hidden-msg" id="entry-' + esc(str(e.id)) + '"><summary>Extension state: ' + esc(str(e.customType)) + '</summary>' + preBox('out', json(e.data)) + '</details>';
        default:
          cls += ' unknown';
          body = preBox('out', json(e));
      }
    }
    if (st) cls += ' ctx-' + st.kind;
    if (m && m.role === 'system') {
      const chars = textOf(m.content).length;
      body = '<details class="sysprompt"><summary>' + (chars ? chars.toLocaleString() + ' characters' : 'changes') + '</summary>' + body + '</details>';
    }
    return '<article class="' + cls + (p === state.target ? ' target' : '') + '" id="entry-' + esc(str(e.id)) + '">' + head(p, kind, extra) + contextNote(p, st) + body + '</article>';
  }
  function itemHtml(item) {
    if (item.boundary !== undefined) {
      const c = E[item.boundary];
      return '<div class="ctx-boundary" role="separator"><p><b>The model’s context starts here.</b> What is above was summarised by the ' +
        '<a href="#entry-' + encodeURIComponent(str(c.id)) + '">compaction</a>' + (num(c.tokensBefore) ? ' of ' + num(c.tokensBefore).toLocaleString() + ' tokens' : '') +
        '; the model saw that summary instead.</p></div>';
    }
    return entryHtml(item.p);
  }
  function buildItems() {
    items = [];
    results = new Map();
    for (const p of state.path) {
      const m = msgOf(E[p]);
      if (m && m.role === 'toolResult' && typeof m.toolCallId === 'string' && !results.has(m.toolCallId)) results.set(m.toolCallId, p);
    }
    const called = new Set();
    for (const p of state.path) {
      const m = msgOf(E[p]);
      if (m && m.role === 'assistant') for (const b of blocks(m.content)) if (b.type === 'toolCall' && results.has(b.id)) called.add(results.get(b.id));
    }
    // The whole branch is shown in place; one thin line marks where the model's context starts.
    let last = -1;
    state.path.forEach((p, i) => { const st = ctx.get(p); if (st && st.kind === 'compacted') last = i; });
    state.path.forEach((p, i) => {
      if (!called.has(p)) items.push({ p });
      if (i === last) items.push({ boundary: ctx.get(p).by });
    });
  }
  function itemIndexOf(p) {
    for (let i = 0; i < items.length; i++) {
      const it = items[i];
      if (it.p === p) return i;
    }
    // A tool result is drawn inside its call: look for the message that made the call.
    const m = msgOf(E[p]);
    if (m && m.role === 'toolResult' && results.get(m.toolCallId) === p) {
      for (const q of state.path) {
        const am = msgOf(E[q]);
        if (am && am.role === 'assistant' && blocks(am.content).some((b) => b.type === 'toolCall' && b.id === m.toolCallId)) return itemIndexOf(q);
      }
    }
    return -1;
  }
  const list = () => $('#messages');
  function renderWindow(lo, hi) {
    win = { lo, hi };
    lazy = new Map(); // the messages drawn before are replaced
    const leaf = state.leaf;
    const size = state.path.length.toLocaleString() + (state.path.length === 1 ? ' entry' : ' entries');
    const bar = leaf < 0 ? 'This session has no messages yet.'
      : leaf !== DEFAULT_LEAF ? 'Another branch of the conversation (' + size + '). <button class="action" data-act="latest">Back to where the session was left</button>'
      : BRANCH_POINTS ? 'The conversation as the session was left (' + size + '). The tree shows the other branches.' : '';
    let html = (bar ? '<div class="branch-bar">' + bar + '</div>' : '') + '<div id="top-sentinel"></div>';
    for (let i = lo; i < hi; i++) html += itemHtml(items[i]);
    html += '<div id="bottom-sentinel"></div>';
    list().innerHTML = html;
    observe();
  }
  function grow(direction) {
    const box = $('#content');
    if (direction > 0 && win.hi < items.length) {
      const hi = Math.min(items.length, win.hi + CHUNK);
      let html = '';
      for (let i = win.hi; i < hi; i++) html += itemHtml(items[i]);
      $('#bottom-sentinel').insertAdjacentHTML('beforebegin', html);
      win.hi = hi;
      return true;
    } else if (direction < 0 && win.lo > 0) {
      const lo = Math.max(0, win.lo - CHUNK);
      let html = '';
      for (let i = lo; i < win.lo; i++) html += itemHtml(items[i]);
      const before = box.scrollHeight;
      $('#top-sentinel').insertAdjacentHTML('afterend', html);
      box.scrollTop += box.scrollHeight - before;
      win.lo = lo;
      return true;
    }
    return false;
  }
  let observer = null;
  function observe() {
    if (!('IntersectionObserver' in window)) return;
    if (observer) observer.disconnect();
    observer = new IntersectionObserver((seen) => {
      for (const s of seen) {
        if (!s.isIntersecting) continue;
        if (!grow(s.target.id === 'bottom-sentinel' ? 1 : -1)) continue;
        // Observing again reports the sentinel afresh: keep filling while it is still in reach.
        observer.unobserve(s.target);
        observer.observe(s.target);
      }
    }, { root: $('#content'), rootMargin: '1200px 0px' });
    observer.observe($('#top-sentinel'));
    observer.observe($('#bottom-sentinel'));
  }

  // ---------------------------------------------------------------------------------- navigation
  // The address bar follows navigation: #entry-<id>, with &leaf=<id> when the entry is shown on
  // another branch than its newest, or #leaf=<id> for a branch without a target. 'push' adds a
  // history step (so Back returns), 'replace' rewrites the current one.
  function addressOf(leaf, target) {
    const id = (p) => encodeURIComponent(str(E[p] && E[p].id));
    if (target >= 0) return '#entry-' + id(target) + (leaf !== newestLeaf(target) ? '&leaf=' + id(leaf) : '');
    return leaf !== DEFAULT_LEAF && leaf >= 0 ? '#leaf=' + id(leaf) : '';
  }
  function syncAddress(mode) {
    if (mode !== 'push' && mode !== 'replace') return;
    const want = addressOf(state.leaf, state.target);
    if (want === location.hash || (!want && !location.hash && !location.search)) return;
    const url = location.pathname + (want || '');
    try {
      if (mode === 'push') history.pushState(null, '', url); else history.replaceState(null, '', url);
    } catch (e) { /* some file: pages refuse history changes: the page still works */ }
  }
  function navigate(leaf, target, how, mode) {
    const changed = leaf !== state.leaf || !state.path.length;
    state.leaf = leaf;
    state.target = target;
    if (changed) {
      state.path = leaf >= 0 ? pathTo(leaf) : [];
      state.onPath = new Set(state.path);
      ctx = contextOf(state.path);
      buildItems();
      if (state.filter !== 'all' || state.query) buildRows(); // the leaf is always shown
    }
    const at = target >= 0 ? itemIndexOf(target) : -1;
    if (at >= 0) {
      const i = at;
      renderWindow(Math.max(0, i - 20), Math.min(items.length, i + 40));
      const el = document.getElementById('entry-' + str(E[target].id));
      if (el) {
        el.scrollIntoView({ block: how === 'top' ? 'start' : 'center' });
        el.classList.add('flash');
        setTimeout(() => el.classList.remove('flash'), 1500);
      }
    } else if (how === 'bottom') {
      renderWindow(Math.max(0, items.length - CHUNK), items.length);
      $('#content').scrollTop = $('#content').scrollHeight;
    } else {
      renderWindow(0, Math.min(items.length, CHUNK));
      $('#content').scrollTop = 0;
    }
    drawTree(true);
    if (target >= 0) revealRow(target);
    syncAddress(mode === undefined ? 'push' : mode);
  }
  function openHash(mode) {
    const m = /^#(?:entry-([^&]*))?(?:&?leaf=([^&]*))?$/.exec(location.hash);
    if (!m || (m[1] === undefined && m[2] === undefined)) return false;
    let id, leafId;
    try { id = m[1] !== undefined ? decodeURIComponent(m[1]) : undefined; leafId = m[2] !== undefined ? decodeURIComponent(m[2]) : undefined; } catch (e) { return false; }
    const p = id !== undefined ? POS.get(id) : -1;
    if (p === undefined) return false;
    let leaf = leafId !== undefined ? POS.get(leafId) : undefined;
    if (leaf !== undefined && p >= 0 && !pathTo(leaf).includes(p)) leaf = undefined;
    if (leaf === undefined) leaf = p < 0 ? DEFAULT_LEAF : state.onPath.has(p) ? state.leaf : newestLeaf(p);
    if (p >= 0 && leaf === state.leaf && p === state.target && document.getElementById('entry-' + str(E[p].id))) return true;
    if (p < 0 && leaf === state.leaf && state.target < 0) return true;
    navigate(leaf, p, 'center', mode || 'none');
    return true;
  }

  // Links to Pi's own export carry ?leafId=…&targetId=…: the same links open here.
  function openPiLink() {
    let params;
    try { params = new URLSearchParams(location.search); } catch (e) { return false; }
    const leaf = POS.get(params.get('leafId') || '');
    const target = POS.get(params.get('targetId') || '');
    if (leaf === undefined && target === undefined) return false;
    const to = leaf !== undefined ? leaf : newestLeaf(target);
    navigate(to, target !== undefined && pathTo(to).includes(target) ? target : -1, 'center', 'none');
    return true;
  }

  // ---------------------------------------------------------------------------------- header, stats
  function stats() {
    const s = { user: 0, assistant: 0, toolResults: 0, custom: 0, compactions: 0, summaries: 0, calls: 0, models: new Map(), tools: new Map(),
      tokens: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, cost: 0, extraCost: 0, extraTokens: 0 };
    const add = (u, extra) => {
      if (!isObj(u)) return;
      if (extra) { s.extraTokens += num(u.input) + num(u.output); } else {
        s.tokens.input += num(u.input); s.tokens.output += num(u.output); s.tokens.cacheRead += num(u.cacheRead); s.tokens.cacheWrite += num(u.cacheWrite);
      }
      if (isObj(u.cost)) {
        const c = u.cost;
        const total = typeof c.total === 'number' ? num(c.total) : num(c.input) + num(c.output) + num(c.cacheRead) + num(c.cacheWrite);
        if (extra) s.extraCost += total; else s.cost += total;
      }
    };
    for (const e of E) {
      const m = msgOf(e);
      if (m) {
        if (m.role === 'user') s.user++;
        else if (m.role === 'toolResult') s.toolResults++;
        else if (m.role === 'custom') s.custom++;
        else if (m.role === 'assistant') {
          s.assistant++;
          if (m.model) { const k = (m.provider ? m.provider + '/' : '') + m.model; s.models.set(k, (s.models.get(k) || 0) + 1); }
          add(m.usage, false);
          if (Array.isArray(m.content)) {
            for (const b of m.content) if (isObj(b) && b.type === 'toolCall') { s.calls++; s.tools.set(str(b.name), (s.tools.get(str(b.name)) || 0) + 1); }
          }
        }
      } else if (e) {
        if (e.type === 'compaction') { s.compactions++; add(e.usage, true); }
        else if (e.type === 'branch_summary') { s.summaries++; add(e.usage, true); }
        else if (e.type === 'custom_message') s.custom++;
        else if (e.type === 'usage') add(e.usage, true);
      }
    }
    return s;
  }
  function renderTop() {
    const s = stats();
    const tokens = [];
    if (s.tokens.input) tokens.push('↑' + fmtTokens(s.tokens.input));
    if (s.tokens.output) tokens.push('↓' + fmtTokens(s.tokens.output));
    if (s.tokens.cacheRead) tokens.push('R' + fmtTokens(s.tokens.cacheRead));
    if (s.tokens.cacheWrite) tokens.push('W' + fmtTokens(s.tokens.cacheWrite));
    const msgs = [];
    const count = (n, one, many) => { if (n) msgs.push(n.toLocaleString() + ' ' + (n === 1 ? one : many)); };
    count(s.user, 'user', 'user');
    count(s.assistant, 'assistant', 'assistant');
    count(s.toolResults, 'tool result', 'tool results');
    count(s.custom, 'custom', 'custom');
    count(s.compactions, 'compaction', 'compactions');
    count(s.summaries, 'branch summary', 'branch summaries');
    const models = [...s.models.entries()].map(([k, n]) => esc(k) + ' <span class="muted">×' + n + '</span>').join(', ');
    const tools = [...s.tools.entries()].sort((a, b) => b[1] - a[1]).map(([k, n]) => esc(k) + ' <span class="muted">×' + n + '</span>').join(', ');
    const row = (k, v) => '<dt>' + k + '</dt><dd>' + v + '</dd>';
    const when = HEADER ? fmtDate(HEADER.timestamp) : '';
    const summary = [when, s.user ? s.user.toLocaleString() + (s.user === 1 ? ' prompt' : ' prompts') : '',
      s.calls ? s.calls.toLocaleString() + (s.calls === 1 ? ' tool call' : ' tool calls') : '', s.cost ? '$' + s.cost.toFixed(2) : ''].filter(Boolean).join(' · ');
    $('#top').innerHTML =
      '<div class="title-row"><button class="action" data-act="tree" id="tree-button" aria-controls="sidebar" title="Show or hide the session tree">☰ Tree</button>' +
      '<h1>' + esc(DATA.title) + '</h1><span class="grow"></span>' +
      '<button class="toggle" data-act="model" title="Show only what the model saw at the end of this branch (M)">What the model saw</button>' +
      '<button class="toggle" data-act="thinking" title="Show or hide thinking (T)">Thinking</button>' +
      '<button class="toggle" data-act="tools" title="Expand or collapse tool output (O)">Tool output</button>' +
      '<button class="toggle" data-act="hidden" title="Show hidden and settings entries (H)">Hidden</button>' +
      '<button class="toggle" data-act="theme" title="Light, dark or the system’s colours">Theme</button>' +
      '<button class="action" data-act="download" title="Download the session as JSONL">↓ JSONL</button></div>' +
      '<details class="about"><summary>' + esc(summary || 'Session details') + '</summary><dl class="stats">' +
      row('Session', '<code>' + esc(HEADER ? str(HEADER.id) : '') + '</code>') +
      row('Directory', '<code>' + esc(HEADER ? shortPath(HEADER.cwd) : '') + '</code>') +
      row('Created', esc(HEADER ? fmtTime(HEADER.timestamp) : '')) +
      row('Models', models || 'none') +
      row('Messages', esc(msgs.join(', ') || '0')) +
      row('Tool calls', s.calls + (tools ? ' <span class="muted">(' + tools + ')</span>' : '')) +
      row('Tokens', esc(tokens.join(' ') || '0') + (s.extraTokens ? ' <span class="muted">+ ' + fmtTokens(s.extraTokens) + ' outside the conversation</span>' : '')) +
      row('Cost', '$' + s.cost.toFixed(3) + (s.extraCost ? ' <span class="muted">+ $' + s.extraCost.toFixed(3) + ' outside the conversation (summaries, usage entries)</span>' : '')) +
      row('Entries', N.toLocaleString() + ' <span class="muted">(' + ROOTS.length + (ROOTS.length === 1 ? ' root' : ' roots') + ', ' +
        BRANCH_POINTS + (BRANCH_POINTS === 1 ? ' branch point)' : ' branch points)') + '</span>') +
      '</dl><div class="hint">M what the model saw · T thinking · O tool output · H hidden entries · / search · ↑ ↓ in the tree · Esc back to the session’s leaf</div></details>';
    syncToggles();
  }
  function syncToggles() {
    const b = document.body.classList;
    const set = (act, on, text) => { const el = document.querySelector('[data-act="' + act + '"]'); if (el) { el.setAttribute('aria-pressed', String(on)); if (text) el.textContent = text; } };
    set('thinking', !b.contains('hide-thinking'));
    set('tools', b.contains('tools-open'));
    set('hidden', !b.contains('hide-hidden'));
    set('model', b.contains('model-view'));
    const theme = document.documentElement.dataset.theme || 'auto';
    set('theme', theme !== 'auto', 'Theme: ' + theme);
  }
  function download() {
    const lines = [];
    if (HEADER) lines.push(JSON.stringify(HEADER));
    for (const e of E) lines.push(JSON.stringify(e));
    const blob = new Blob([lines.join('\n') + '\n'], { type: 'application/x-ndjson' });
    const url = URL.createObjectURL(blob);
    const a = document.createElement('a');
    a.href = url;
    a.download = (HEADER && typeof HEADER.id === 'string' ? HEADER.id.replace(/[^A-Za-z0-9._-]/g, '_') : 'session') + '.jsonl';
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }
  function setTheme(theme) {
    if (theme === 'auto') delete document.documentElement.dataset.theme; else document.documentElement.dataset.theme = theme;
    try { localStorage.setItem('pisession-viewer-theme', theme); } catch (e) { /* storage may be off for file: pages */ }
    syncToggles();
  }
  function act(name) {
    const b = document.body.classList;
    if (name === 'thinking') b.toggle('hide-thinking');
    else if (name === 'tools') { b.toggle('tools-open'); for (const el of document.querySelectorAll('.long.open')) el.classList.remove('open'); }
    else if (name === 'hidden') b.toggle('hide-hidden');
    else if (name === 'model') b.toggle('model-view');
    else if (name === 'tree') { b.toggle('tree-open'); if (b.contains('tree-open')) revealRow(state.target >= 0 ? state.target : state.leaf); }
    else if (name === 'latest') navigate(DEFAULT_LEAF, -1, 'top');
    else if (name === 'theme') {
      const order = ['auto', 'light', 'dark'];
      setTheme(order[(order.indexOf(document.documentElement.dataset.theme || 'auto') + 1) % 3]);
    } else if (name === 'download') download();
    syncToggles();
  }

  // ---------------------------------------------------------------------------------- wiring
  function $(sel) { return document.querySelector(sel); }
  let searchTimer = 0;
  function wire() {
    $('#search').addEventListener('input', (ev) => {
      clearTimeout(searchTimer);
      const value = ev.target.value;
      searchTimer = setTimeout(() => {
        state.query = value.toLowerCase().split(/\s+/).filter(Boolean);
        if (!state.query.length) state.query = '';
        buildRows();
        treeBox().scrollTop = 0;
        drawTree(true);
      }, N > 5000 ? 150 : 40);
    });
    for (const btn of document.querySelectorAll('.filter')) {
      btn.addEventListener('click', () => {
        for (const b of document.querySelectorAll('.filter')) b.classList.toggle('on', b === btn);
        state.filter = btn.dataset.filter;
        buildRows();
        revealRow(state.target >= 0 ? state.target : state.leaf);
      });
    }
    treeBox().addEventListener('keydown', treeKey);
    treeBox().addEventListener('scroll', () => requestAnimationFrame(() => drawTree(false)));
    $('#tree-inner').addEventListener('click', (ev) => {
      const row = ev.target.closest('.row');
      if (!row || String(window.getSelection() || '')) return;
      const p = +row.dataset.p;
      cursor = +row.dataset.i;
      document.body.classList.remove('tree-open'); // the drawer, on a phone
      navigate(newestLeaf(p), p, 'center');
    });
    document.addEventListener('click', (ev) => {
      const t = ev.target;
      const button = t.closest('[data-act]');
      if (button) { act(button.dataset.act); return; }
      const copy = t.closest('button.copy');
      if (copy) { copyFrom(copy); return; }
      const all = t.closest('button.show-all');
      if (all) { showAll(all); return; }
      const more = t.closest('.long .more');
      if (more) { more.parentElement.classList.toggle('open'); return; }
      const stub = t.closest('.thinking-stub');
      if (stub) { stub.parentElement.classList.toggle('open'); return; }
      const img = t.closest('img.img');
      if (img) { const box = $('#lightbox'); box.querySelector('img').src = img.src; box.hidden = false; return; }
      if (t.closest('#lightbox')) { $('#lightbox').hidden = true; }
    });
    // A link followed in the page, Back or Forward: show what the address names.
    const fromAddress = () => {
      if (openHash('replace') || location.hash || openPiLink()) return;
      if (state.leaf !== DEFAULT_LEAF || state.target >= 0) navigate(DEFAULT_LEAF, -1, 'top', 'none');
    };
    window.addEventListener('hashchange', fromAddress);
    // Printing draws every message of the branch first (the screen draws a window of them).
    const printAll = () => { if (win.lo > 0 || win.hi < items.length) { const top = $('#content').scrollTop; renderWindow(0, items.length); $('#content').scrollTop = top; } };
    window.addEventListener('beforeprint', printAll);
    if (window.matchMedia) { const print = window.matchMedia('print'); if (print.addEventListener) print.addEventListener('change', (ev) => { if (ev.matches) printAll(); }); }
    window.addEventListener('popstate', fromAddress);
    document.addEventListener('keydown', (ev) => {
      const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement && document.activeElement.tagName);
      if (ev.key === 'Escape') {
        if (typing) { $('#search').value = ''; $('#search').dispatchEvent(new Event('input')); $('#search').blur(); }
        $('#lightbox').hidden = true;
        if (document.body.classList.contains('tree-open')) { document.body.classList.remove('tree-open'); return; }
        if (!typing) navigate(DEFAULT_LEAF, -1, 'bottom');
        return;
      }
      if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) return;
      const key = ev.key.toLowerCase();
      if (key === 't') act('thinking');
      else if (key === 'o') act('tools');
      else if (key === 'h') act('hidden');
      else if (key === 'm') act('model');
      else if (key === '/') { ev.preventDefault(); $('#search').focus(); }
      else return;
      ev.preventDefault();
    });
  }

  // ---------------------------------------------------------------------------------- copy
  function copyText(text) {
    const fallback = () => {
      const area = document.createElement('textarea');
      area.value = text;
      area.setAttribute('readonly', '');
      area.style.position = 'fixed'; area.style.opacity = '0';
      document.body.appendChild(area);
      area.select();
      let ok = false;
      try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
      area.remove();
      return ok;
    };
    if (navigator.clipboard && navigator.clipboard.writeText) return navigator.clipboard.writeText(text).then(() => true, fallback);
    return Promise.resolve(fallback());
  }
  function copyFrom(button) {
    let text = '';
    if (button.dataset.copy === 'link') {
      const p = +button.dataset.p;
      const leaf = state.onPath.has(p) ? state.leaf : newestLeaf(p);
      text = location.href.replace(/[?#].*$/s, '') + addressOf(leaf, p);
    } else {
      const box = button.parentElement;
      const job = box.dataset.lazy ? lazy.get(+box.dataset.lazy) : undefined;
      const pre = box.querySelector('pre');
      text = job ? job.text : pre ? pre.textContent : '';
    }
    copyText(text).then((ok) => {
      const was = button.textContent;
      button.textContent = ok ? 'Copied' : 'Copy failed';
      button.classList.add('done');
      setTimeout(() => { button.textContent = was; button.classList.remove('done'); }, 1200);
    });
  }

  function start() {
    try {
      const theme = localStorage.getItem('pisession-viewer-theme');
      if (theme === 'light' || theme === 'dark') document.documentElement.dataset.theme = theme;
    } catch (e) { /* no storage */ }
    renderTop();
    wire();
    state.path = DEFAULT_LEAF >= 0 ? pathTo(DEFAULT_LEAF) : [];
    state.onPath = new Set(state.path);
    ctx = contextOf(state.path);
    buildItems();
    buildRows();
    if (!openHash() && !openPiLink()) {
      renderWindow(0, Math.min(items.length, CHUNK));
      revealRow(DEFAULT_LEAF);
    }
    document.body.dataset.ready = 'true';
  }
  // Exposed for tests and for scripting the page from the console.
  window.pisessionViewer = { markdown, highlight, navigate, state, rows: () => rows, items: () => items, positionOf: (id) => POS.get(id) };
  start();
}
