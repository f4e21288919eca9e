// leat dashboard: flows. The flows listed by state, a flow's graph drawn as
// SVG (layered left to right by depth, parents before children), and a
// task's own view that a node links to. Everything read from the API is
// written with textContent and attributes, never as markup. Loaded after
// app.js, whose helpers (S, api, $, enc, fmt, fmtAge, serverNow, panel)
// it uses.
'use strict';

const FLOW_STATES = ['running', 'failed', 'succeeded', 'cancelled'];
const FLOW_LIST_LIMIT = 50;
// The graph's geometry, in pixels.
const G = { w: 188, h: 48, gapX: 76, gapY: 12, pad: 16, head: 30 };
// A layer of more nodes than LAYER_MAX shows LAYER_SHOWN of them (those
// failing, running or retrying first) and one box for the others, which
// opens the layer when clicked; an open one is drawn in sub-columns of
// SUB_ROWS nodes, so that 200 nodes fit a screen or two.
const LAYER_MAX = 16;
const LAYER_SHOWN = 12;
const SUB_ROWS = 20;
const SUB_GAP = 12;
// A graph taller than TALL has its columns aligned at the top, not centred.
const TALL = 720;
// The node states the style sheet colours; any other is drawn as unknown.
const NODE_STATES = new Set(['waiting', 'queued', 'pending', 'scheduled', 'active', 'retrying', 'waiting-children',
  'succeeded', 'failed', 'dead', 'cancelled']);
const ENDED = new Set(['succeeded', 'failed', 'dead', 'cancelled']);
const SVG_NS = 'http://www.w3.org/2000/svg';
// A flow of more nodes than BIG_FLOW is read every 5th poll.
const BIG_FLOW = 2000;

// h makes an HTML element: attrs are attributes ('text' is its text),
// kids are nodes or strings (written as text).
function h(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'text') e.textContent = String(v);
    else e.setAttribute(k, String(v));
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined && k !== false) e.append(k);
  return e;
}

// sv makes an SVG element, as h.
function sv(tag, attrs = {}, ...kids) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'text') e.textContent = String(v);
    else e.setAttribute(k, String(v));
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined && k !== false) e.append(k);
  return e;
}

// replaceOnce replaces el's children by build()'s when key differs from the
// key of what is there: a poll that changed nothing leaves the page alone.
function replaceOnce(el, key, build) {
  if (!el || el.leatKey === key) return;
  el.leatKey = key;
  el.replaceChildren(...[build()].flat().filter((k) => k !== null && k !== undefined && k !== false));
}

function stateClass(s) { return NODE_STATES.has(s) ? s : 'unknown'; }

function flowBadge(state) {
  const cls = { running: 'info', succeeded: 'ok', failed: 'bad', cancelled: 'mute' }[state] || '';
  return h('span', { class: 'badge ' + cls, 'data-flow-state': '', text: state });
}

// timeNode writes a time of day and, when recent, a span that fillAges
// fills with its age.
function timeNode(iso) {
  if (!iso || iso.startsWith('0001')) return h('span', { class: 'muted', text: '–' });
  const d = new Date(iso);
  const hhmmss = d.toLocaleTimeString('en-GB', { hour12: false });
  if (Math.abs(serverNow() - d.getTime()) < 36e5 * 20) {
    return h('span', {}, hhmmss + ' ', h('span', { class: 'muted', 'data-at': d.getTime() }));
  }
  return h('span', { text: d.toISOString().slice(0, 10) + ' ' + hhmmss });
}

function flowHref(id) { return '#/flow/' + enc(id); }
function taskHref(queue, id) { return '#/task/' + enc(queue) + '/' + enc(id); }

// ---------- loading ----------

// loadFlows reads what the route shows: the flows of each state, a flow,
// or a task.
async function loadFlows() {
  const r = S.route;
  if (r.kind === 'flows') {
    const lists = await Promise.all(FLOW_STATES.map((s) => api(`v1/flows?state=${s}&limit=${FLOW_LIST_LIMIT}`)));
    S.flowList = Object.fromEntries(FLOW_STATES.map((s, i) => [s, lists[i].flows || []]));
  } else if (r.kind === 'flow') {
    // A flow of thousands of nodes is read every 5th poll (10 s).
    const big = S.flow && S.flow.id === r.name && (S.flow.info?.nodes || []).length > BIG_FLOW;
    S.flowPolls = (S.flowPolls || 0) + 1;
    if (big && S.flowPolls % 5 !== 0) return;
    try {
      S.flow = { id: r.name, info: await api('v1/flows/' + enc(r.name)), error: '' };
    } catch (e) {
      if (e instanceof Unauthorized) throw e;
      S.flow = { id: r.name, info: null, error: e.message };
    }
  } else if (r.kind === 'task') {
    try {
      S.taskView = { queue: r.queue, id: r.id, info: await api(`v1/queues/${enc(r.queue)}/tasks/${enc(r.id)}`), error: '' };
    } catch (e) {
      if (e instanceof Unauthorized) throw e;
      S.taskView = { queue: r.queue, id: r.id, info: null, error: e.message };
    }
  }
}

// ---------- the flows, by state ----------

function flowsSkeleton() {
  return `<div id="fl-kpis" class="kpis"></div><div id="fl-lists"></div>`;
}

function renderFlows() {
  $('#title').textContent = 'Flows';
  const l = S.flowList;
  if (!l) {
    replaceOnce($('#fl-lists'), 'loading', () => h('div', { class: 'empty', text: 'loading…' }));
    return;
  }
  replaceOnce($('#fl-kpis'), JSON.stringify(FLOW_STATES.map((s) => l[s].length)), () => FLOW_STATES.map((s) =>
    h('div', { class: 'kpi ' + (s === 'failed' && l[s].length ? 'bad' : ''), id: 'flows-' + s },
      h('div', { class: 'kpi-label', text: s }),
      h('div', { class: 'kpi-value num', text: l[s].length >= FLOW_LIST_LIMIT ? fmt(FLOW_LIST_LIMIT) + '+' : fmt(l[s].length) }))));
  const key = JSON.stringify(l) + '|' + Math.floor(serverNow() / 1000);
  replaceOnce($('#fl-lists'), key, () => FLOW_STATES.map((s) => {
    const rows = l[s];
    const body = !rows.length ? h('div', { class: 'empty', text: `no ${s} flows` }) : h('div', { class: 'table-wrap' },
      h('table', { 'data-flows': s },
        h('thead', {}, h('tr', {}, ...[['Flow', ''], ['Progress', ''], ['Nodes', 'r'], ['Left', 'r'], ['Created', ''], ['Ended', '']]
          .map(([c, cls]) => h('th', { class: cls, text: c })))),
        h('tbody', {}, rows.map((f) => {
          const done = f.nodes - f.left;
          const pct = f.nodes ? (100 * done / f.nodes).toFixed(1) : '0';
          return h('tr', { 'data-flow': f.id },
            h('td', { class: 'mono' }, h('a', { href: flowHref(f.id), text: f.id })),
            h('td', {}, h('span', { class: 'owned' },
              h('span', { class: 'meter ' + s }, h('span', { style: `width:${pct}%` })), `${fmt(done)}/${fmt(f.nodes)}`)),
            h('td', { class: 'r num', text: fmt(f.nodes) }),
            h('td', { class: 'r num', text: fmt(f.left) }),
            h('td', { class: 'num' }, timeNode(f.created_at)),
            h('td', { class: 'num' }, timeNode(f.finished_at)));
        }))));
    const title = s[0].toUpperCase() + s.slice(1);
    return h('section', { class: 'panel', id: 'flows-list-' + s },
      h('div', { class: 'panel-head' }, h('h2', { text: `${title} · ${rows.length >= FLOW_LIST_LIMIT ? 'newest ' + FLOW_LIST_LIMIT : fmt(rows.length)}` })),
      body);
  }));
}

// ---------- a flow's graph ----------

function flowSkeleton() {
  return `<div class="flow-top"><div id="fv-meta" class="meta"></div><div id="fv-actions" class="actions"></div></div>
    <div id="fv-error"></div>
    <div id="fv-counts" class="kpis"></div>
    <section class="panel"><div class="panel-head"><h2>Graph</h2><div id="fv-legend" class="flow-legend"></div></div>
      <div id="fv-graph" class="flow-graph"></div></section>
    <div id="fv-results"></div>`;
}

// layout places the flow's nodes: depth is the longest path from a root
// (a node added at run time counts its adder as a parent); within a layer
// nodes are ordered by the mean position of their parents (then name), so
// that edges cross little. Wide layers keep LAYER_SHOWN nodes unless open.
function layout(nodes, open) {
  const by = new Map(nodes.map((n) => [n.name, n]));
  const ins = (n) => (n.parents && n.parents.length ? n.parents : n.spawned_by ? [n.spawned_by] : []).filter((p) => by.has(p));
  // The API lists parents before children, so one pass mostly settles the
  // depths; passes repeat (without recursion, for chains of thousands)
  // until none moves.
  const depth = new Map(nodes.map((n) => [n.name, 0]));
  for (let pass = 0, moved = true; moved && pass <= nodes.length; pass++) {
    moved = false;
    for (const n of nodes) {
      let d = 0;
      for (const p of ins(n)) d = Math.max(d, depth.get(p) + 1);
      if (d !== depth.get(n.name)) { depth.set(n.name, d); moved = true; }
    }
  }
  const layers = [];
  for (const n of nodes) {
    const d = depth.get(n.name);
    (layers[d] = layers[d] || []).push(n);
  }
  const pos = new Map(); // name -> row within its layer, of the shown order
  const rank = (s) => (s === 'failed' || s === 'dead' ? 0 : s === 'active' || s === 'retrying' || s === 'waiting-children' ? 1 : 2);
  const cols = [];
  for (let d = 0; d < layers.length; d++) {
    const layer = layers[d] || [];
    const mean = (n) => {
      const ps = ins(n).map((p) => pos.get(p)).filter((v) => v !== undefined);
      return ps.length ? ps.reduce((a, b) => a + b, 0) / ps.length : -1;
    };
    const m = new Map(layer.map((n) => [n.name, mean(n)]));
    layer.sort((a, b) => m.get(a.name) - m.get(b.name) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    let shown = layer, hidden = [];
    if (layer.length > LAYER_MAX && !open.has(d)) {
      const keep = new Set([...layer].sort((a, b) => rank(a.state) - rank(b.state)).slice(0, LAYER_SHOWN).map((n) => n.name));
      shown = layer.filter((n) => keep.has(n.name));
      hidden = layer.filter((n) => !keep.has(n.name));
    }
    shown.forEach((n, i) => pos.set(n.name, i));
    if (hidden.length) hidden.forEach((n) => pos.set(n.name, shown.length));
    cols.push({ depth: d, all: layer, shown, hidden, wide: layer.length > LAYER_MAX });
  }
  return { cols, ins, by };
}

// drawGraph draws the flow's graph: a column per depth, a box per node
// (its name, queue and state, coloured by state, linking to its task), an
// edge per parent -> child (dashed from the node that added a child at run
// time), a column's heading with its count and, for a wide layer, the
// button that opens or closes it.
function drawGraph(info, open) {
  const { cols, ins, by } = layout(info.nodes || [], open);
  for (const c of cols) {
    const boxes = c.shown.length + (c.hidden.length ? 1 : 0);
    c.subs = Math.max(1, Math.ceil(boxes / SUB_ROWS));
    c.rows = Math.min(boxes, SUB_ROWS);
    c.w = c.subs * G.w + (c.subs - 1) * SUB_GAP;
  }
  const rows = Math.max(1, ...cols.map((c) => c.rows));
  const fullH = rows * (G.h + G.gapY) - G.gapY;
  const W = G.pad * 2 + cols.reduce((a, c) => a + c.w, 0) + Math.max(0, cols.length - 1) * G.gapX;
  const H = G.pad * 2 + G.head + fullH;
  const at = new Map(); // name -> {x, y} of its box (hidden nodes: their layer's summary box)
  let x = G.pad;
  for (const c of cols) {
    const y0 = G.pad + G.head + (fullH > TALL ? 0 : (fullH - (c.rows * (G.h + G.gapY) - G.gapY)) / 2);
    const place = (j) => ({ x: x + Math.floor(j / SUB_ROWS) * (G.w + SUB_GAP), y: y0 + (j % SUB_ROWS) * (G.h + G.gapY) });
    c.x = x;
    c.shown.forEach((n, j) => at.set(n.name, place(j)));
    const more = place(c.shown.length);
    c.moreX = more.x;
    c.moreY = more.y;
    c.hidden.forEach((n) => at.set(n.name, { ...more, more: c.depth }));
    x += c.w + G.gapX;
  }
  const svg = sv('svg', { id: 'flow-svg', width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img',
    'aria-label': `graph of flow ${info.id}: ${(info.nodes || []).length} nodes` });
  svg.append(sv('defs', {}, sv('marker', { id: 'flow-arrow', viewBox: '0 0 8 8', refX: 7, refY: 4, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
    sv('path', { d: 'M0,0 L8,4 L0,8 z', class: 'flow-arrow' }))));

  // Edges first, under the boxes; one per pair of boxes drawn.
  const edges = sv('g', { class: 'flow-edges' });
  const seen = new Set();
  for (const c of cols) {
    for (const n of c.all) {
      const to = at.get(n.name);
      for (const p of ins(n)) {
        const from = at.get(p);
        if (!from || !to) continue;
        const fromKey = from.more !== undefined ? '+' + from.more : p;
        const toKey = to.more !== undefined ? '+' + to.more : n.name;
        const k = fromKey + '\u0000' + toKey;
        if (seen.has(k)) continue;
        seen.add(k);
        const x1 = from.x + G.w, y1 = from.y + G.h / 2, x2 = to.x - 2, y2 = to.y + G.h / 2;
        const dx = Math.max(24, (x2 - x1) / 2);
        const parent = by.get(p);
        const cls = ['flow-edge', 'from-' + stateClass(parent?.state), n.parents && n.parents.length ? '' : 'spawned',
          c.subs > 1 || (cols[c.depth - 1]?.subs || 1) > 1 ? 'faint' : ''].join(' ');
        edges.append(sv('path', { class: cls, d: `M${x1},${y1} C${x1 + dx},${y1} ${x2 - dx},${y2} ${x2},${y2}`,
          'marker-end': 'url(#flow-arrow)', 'data-from': fromKey, 'data-to': toKey }));
      }
    }
  }
  svg.append(edges);

  for (const c of cols) {
    // The column's heading: its depth and count, and the button of a wide layer.
    const head = sv('g', { class: 'flow-head' });
    head.append(sv('text', { x: c.x, y: G.pad + 12, text: `depth ${c.depth} · ${fmt(c.all.length)} node${c.all.length === 1 ? '' : 's'}` }));
    if (c.wide) {
      const b = sv('text', { x: c.x + c.w, y: G.pad + 12, 'text-anchor': 'end', class: 'flow-toggle', 'data-layer': c.depth, role: 'button', tabindex: 0,
        text: open.has(c.depth) ? 'collapse' : 'show all' });
      head.append(b);
    }
    svg.append(head);
    for (const n of c.shown) svg.append(nodeBox(n, at.get(n.name)));
    if (c.hidden.length) svg.append(moreBox(c, c.hidden));
  }
  return svg;
}

// fit cuts s to at most n characters, with an ellipsis.
function fit(s, n) { s = String(s ?? ''); return s.length > n ? s.slice(0, n - 1) + '…' : s; }

function nodeBox(n, p) {
  const st = stateClass(n.state);
  const a = sv('a', { href: taskHref(n.queue, n.task_id), class: 'flow-link' });
  const g = sv('g', { class: `flow-node st-${st}${n.spawned_by ? ' spawned' : ''}`, 'data-node': n.name, 'data-state': n.state,
    transform: `translate(${p.x},${p.y})` });
  const tip = [`${n.name} (queue ${n.queue}): ${n.state}`];
  if (n.parents && n.parents.length) tip.push('after ' + n.parents.join(', '));
  if (n.spawned_by) tip.push('added by ' + n.spawned_by);
  if (n.on_failure && n.on_failure !== 'fail') tip.push('on failure: ' + n.on_failure);
  if (n.error) tip.push('error: ' + fit(n.error, 300));
  g.append(sv('title', { text: tip.join('\n') }),
    sv('rect', { class: 'box', width: G.w, height: G.h, rx: 7 }),
    sv('rect', { class: 'bar', width: 5, height: G.h - 2, x: 1, y: 1, rx: 3 }),
    sv('text', { class: 'name', x: 14, y: 19, text: fit(n.name, 22) }),
    sv('text', { class: 'queue', x: 14, y: 37, text: fit(n.queue, 13) }),
    sv('text', { class: 'state', x: G.w - 10, y: 37, 'text-anchor': 'end', text: n.state }));
  a.append(g);
  return a;
}

// moreBox stands for the nodes of a wide layer not drawn: how many, by
// state; clicking it opens the layer.
function moreBox(c, hidden) {
  const by = {};
  for (const n of hidden) by[n.state] = (by[n.state] || 0) + 1;
  const parts = Object.entries(by).sort((a, b) => b[1] - a[1]).map(([s, k]) => `${fmt(k)} ${s}`);
  const g = sv('g', { class: 'flow-more', 'data-layer': c.depth, 'data-hidden': hidden.length, role: 'button', tabindex: 0,
    transform: `translate(${c.moreX},${c.moreY})` });
  g.append(sv('title', { text: `${hidden.length} more nodes: ${parts.join(', ')}; click to show them all` }),
    sv('rect', { class: 'box', width: G.w, height: G.h, rx: 7 }),
    sv('text', { class: 'name', x: 12, y: 19, text: `+ ${fmt(hidden.length)} more` }),
    sv('text', { class: 'queue', x: 12, y: 37, text: fit(parts.join(' · '), 30) }));
  return g;
}

function renderFlow(id) {
  const title = $('#title');
  replaceOnce(title, 'flow:' + id, () => [h('span', { class: 'muted', text: 'flow ' }), h('span', { text: id })]);
  const f = S.flow;
  if (!f || f.id !== id) {
    replaceOnce($('#fv-graph'), 'loading', () => h('div', { class: 'empty', text: 'loading…' }));
    return;
  }
  replaceOnce($('#fv-error'), f.error, () => (f.error ? h('div', { class: 'banner error', text: `Cannot read flow ${id}: ${f.error}` }) : []));
  const info = f.info;
  if (!info) return;
  const nodes = info.nodes || [];
  replaceOnce($('#fv-meta'), JSON.stringify([info.state, info.created_at, info.finished_at, info.failed_by, nodes.length]) + Math.floor(serverNow() / 1000), () => [
    h('span', { class: 'chip' }, h('span', { class: 'muted', text: 'state ' }), flowBadge(info.state)),
    h('span', { class: 'chip' }, h('span', { class: 'muted', text: 'nodes ' }), fmt(nodes.length)),
    h('span', { class: 'chip' }, h('span', { class: 'muted', text: 'created ' }), timeNode(info.created_at)),
    info.finished_at ? h('span', { class: 'chip' }, h('span', { class: 'muted', text: 'ended ' }), timeNode(info.finished_at)) : null,
    info.failed_by ? h('span', { class: 'chip bad-text', id: 'fv-failed-by' }, h('span', { class: 'muted', text: 'failed by ' }), info.failed_by) : null,
    h('span', { class: 'chip' }, h('a', { href: '#/flows', text: 'all flows' })),
  ]);
  // Cancel a running flow: a first click arms the button, a second within 5
  // seconds acts.
  const ro = Boolean(S.info?.read_only);
  const armed = Boolean(S.armed && S.armed.queue === 'flow:' + id && S.armed.until > Date.now());
  replaceOnce($('#fv-actions'), JSON.stringify([info.state, armed, ro, S.drawn]), () => (info.state !== 'running' ? [] :
    h('button', { class: 'btn danger', id: 'fv-cancel', 'data-flow-action': 'cancel', disabled: ro, title: ro ? 'read-only: the API refuses writes' : null,
      text: armed ? 'Click again to cancel the flow' : 'Cancel flow' })));
  const counts = {};
  for (const n of nodes) counts[n.state] = (counts[n.state] || 0) + 1;
  const order = ['waiting', 'queued', 'pending', 'scheduled', 'active', 'retrying', 'waiting-children', 'succeeded', 'failed', 'dead', 'cancelled'];
  const states = Object.keys(counts).sort((a, b) => (order.indexOf(a) + 1 || 99) - (order.indexOf(b) + 1 || 99));
  replaceOnce($('#fv-counts'), JSON.stringify(counts), () => states.map((s) =>
    h('div', { class: 'kpi flow-count st-' + stateClass(s), 'data-count': s },
      h('div', { class: 'kpi-label' }, h('span', { class: 'flow-dot st-' + stateClass(s) }), s),
      h('div', { class: 'kpi-value num', text: fmt(counts[s]) }))));
  replaceOnce($('#fv-legend'), 'legend', () => ['waiting', 'pending', 'active', 'retrying', 'succeeded', 'failed', 'cancelled'].map((s) =>
    h('span', { class: 'lg' }, h('span', { class: 'flow-dot st-' + s }), s)).concat(h('span', { class: 'lg muted', text: 'click a node for its task' })));
  const open = S.flowOpen[id] || new Set();
  const key = JSON.stringify([info.state, nodes.map((n) => [n.name, n.state, n.parents, n.spawned_by, n.queue]), [...open]]);
  replaceOnce($('#fv-graph'), key, () => (nodes.length ? drawGraph(info, open) : h('div', { class: 'empty', text: 'no nodes' })));
  const results = Object.entries(info.results || {});
  replaceOnce($('#fv-results'), JSON.stringify(info.results || {}), () => (!results.length ? [] : h('section', { class: 'panel' },
    h('div', { class: 'panel-head' }, h('h2', { text: 'Results of the sinks' })),
    h('dl', { class: 'detail', id: 'fv-results-list' }, results.flatMap(([k, v]) => [h('dt', { text: k }),
      h('dd', {}, h('pre', { text: fit(JSON.stringify(v, null, 2), 16 * 1024) }))])))));
}

// onGraphClick opens or closes a wide layer.
function onGraphClick(e) {
  const t = e.target.closest('[data-layer]');
  if (!t || S.route.kind !== 'flow') return;
  const id = S.route.name, d = Number(t.getAttribute('data-layer'));
  const open = S.flowOpen[id] || (S.flowOpen[id] = new Set());
  if (open.has(d)) open.delete(d); else open.add(d);
  render();
}

// onFlowAction cancels the flow shown, at the second click.
async function onFlowAction(e) {
  const b = e.target.closest('button[data-flow-action]');
  if (!b || b.disabled || S.route.kind !== 'flow') return;
  const id = S.route.name, key = 'flow:' + id;
  if (!(S.armed && S.armed.queue === key && S.armed.until > Date.now())) {
    S.armed = { queue: key, action: 'cancel', until: Date.now() + 5000 };
    render();
    setTimeout(render, 5100);
    return;
  }
  S.armed = null;
  await act(b, () => api(`v1/flows/${enc(id)}/cancel`, { method: 'POST' }), `Cancelled flow ${id}`, `cancel flow ${id}`);
}

// onTaskViewAction requeues (dead or failed: a flow node's flow resumes
// when it succeeds) or cancels the task shown.
async function onTaskViewAction(e) {
  const b = e.target.closest('button[data-task-action]');
  if (!b || b.disabled || S.route.kind !== 'task') return;
  const { queue, id } = S.route;
  const action = b.getAttribute('data-task-action');
  await act(b, () => api(`v1/queues/${enc(queue)}/tasks/${enc(id)}/${action}`, { method: 'POST' }),
    `${action === 'requeue' ? 'Requeued' : 'Cancelled'} task ${id}`, `${action} ${id}`);
}

// ---------- a task ----------

function taskSkeleton() {
  return `<div class="flow-top"><div id="tv-meta" class="meta"></div><div id="tv-actions" class="actions"></div></div><div id="tv-error"></div>
    <section class="panel"><div class="panel-head"><h2>Task</h2></div><div id="tv-detail"></div></section>`;
}

// flowOfTask returns the flow and node of a flow node's task ID
// ("flow:<flow ID>:<node>"; node names hold no colon), or null.
function flowOfTask(id) {
  if (!id.startsWith('flow:')) return null;
  const i = id.lastIndexOf(':');
  return i > 5 ? { flow: id.slice(5, i), node: id.slice(i + 1) } : null;
}

function renderTask(queue, id) {
  replaceOnce($('#title'), 'task:' + queue + '\u0000' + id, () => [h('span', { class: 'muted', text: 'task ' }), h('span', { class: 'mono', text: id })]);
  const v = S.taskView;
  if (!v || v.queue !== queue || v.id !== id) {
    replaceOnce($('#tv-detail'), 'loading', () => h('div', { class: 'empty', text: 'loading…' }));
    return;
  }
  replaceOnce($('#tv-error'), v.error, () => (v.error ? h('div', { class: 'banner error', text: `Cannot read task ${id} of ${queue}: ${v.error}` }) : []));
  const t = v.info;
  const fl = flowOfTask(id);
  replaceOnce($('#tv-meta'), JSON.stringify([t?.state, t?.attempts, t?.finished_at]) + Math.floor(serverNow() / 1000), () => [
    h('span', { class: 'chip' }, h('span', { class: 'muted', text: 'queue ' }), h('a', { href: '#/queue/' + enc(queue), text: queue })),
    t ? h('span', { class: 'chip' }, h('span', { class: 'muted', text: 'state ' }),
      h('span', { class: 'badge ' + (STATE_CLASS[t.state] || ''), id: 'tv-state', text: t.state })) : null,
    t ? h('span', { class: 'chip' }, h('span', { class: 'muted', text: 'attempts ' }), `${fmt(t.attempts)}/${fmt(t.max_retries + 1)}`) : null,
    fl ? h('span', { class: 'chip' }, h('span', { class: 'muted', text: `node ${fl.node} of flow ` }), h('a', { href: flowHref(fl.flow), id: 'tv-flow', text: fl.flow })) : null,
  ]);
  const ro = Boolean(S.info?.read_only);
  replaceOnce($('#tv-actions'), JSON.stringify([t?.state, ro, S.drawn]), () => {
    if (!t) return [];
    const btn = (action, label, cls) => h('button', { class: 'btn ' + cls, 'data-task-action': action, disabled: ro,
      title: ro ? 'read-only: the API refuses writes' : null, text: label });
    if (t.state === 'dead' || t.state === 'failed') return btn('requeue', 'Requeue', '');
    if (!ENDED.has(t.state)) return btn('cancel', 'Cancel', 'danger');
    return [];
  });
  if (!t) {
    replaceOnce($('#tv-detail'), 'none', () => []);
    return;
  }
  const json = (x) => fit(JSON.stringify(x, null, 2), 64 * 1024);
  const rows = [
    ['payload', t.payload !== undefined ? json(t.payload) : null],
    ['result', t.result !== undefined ? json(t.result) : null],
    ['progress', t.progress !== undefined ? json(t.progress) : null],
    ['error', t.error || null],
    ['headers', t.headers ? json(t.headers) : null],
    ['worker', t.worker || null],
    ['enqueued', t.enqueued_at], ['started', t.started_at || null], ['finished', t.finished_at || null],
    ['timeout', t.timeout], ['retention', t.retention],
  ].filter(([, x]) => x !== null && x !== undefined);
  replaceOnce($('#tv-detail'), JSON.stringify(rows), () => h('dl', { class: 'detail' },
    rows.flatMap(([k, x]) => [h('dt', { text: k }), h('dd', {}, h('pre', { 'data-field': k, text: x }))])));
}
