// leat dashboard: reads the app through the JSON API every 2 seconds while
// the tab is visible and draws everything itself (no libraries). The
// charts come from this page's own polling history (about 10 minutes).
'use strict';

const POLL_MS = 2000;
const HISTORY_MS = 10 * 60 * 1000;
const LIST_LIMIT = 20;
const TOKEN_KEY = 'leat.token';
const STATES = ['pending', 'scheduled', 'active', 'retrying', 'succeeded', 'failed', 'dead', 'cancelled'];
const PALETTE = ['#2563eb', '#d97706', '#059669', '#db2777', '#7c3aed', '#0891b2', '#65a30d', '#dc2626', '#4f46e5', '#ca8a04'];

const S = {
  token: sessionStorage.getItem(TOKEN_KEY) || '',
  info: null,
  overview: null,
  queues: [],
  reports: {},   // stream name -> StreamReport
  lists: {},     // "queue/state" -> tasks
  dead: {},      // "stream/processor" -> listed dead letters, while their list is open
  deadOpen: '',  // "stream/processor" whose dead letters are listed
  hist: [],      // samples: {t, added: {stream: n}, lag: {"stream/processor": n}, succeeded: {queue: n}, counts: {queue: {state: n}}}
  route: { kind: 'overview' },
  proc: {},      // stream -> chosen processor
  colour: 'lag',
  sort: { key: 'partition', dir: 1 },
  filter: '',
  onlyBusy: false,
  listState: 'dead',
  open: null,    // the task whose detail shows: {queue, id, info, error}
  picked: null,  // partition picked on the heat map
  busy: false,
  timer: null,
  lastOK: 0,
  drawn: 0,     // setHTML's generation (redraw)
  flowList: null, // state -> listed flows (flows.js)
  flow: null,     // the flow shown: {id, info, error}
  flowOpen: {},   // flow ID -> the depths of its wide layers drawn whole
  taskView: null, // the task shown: {queue, id, info, error}
};

// ---------- helpers ----------

const $ = (sel, root = document) => root.querySelector(sel);
const esc = (v) => String(v ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
const enc = encodeURIComponent;
const nf = new Intl.NumberFormat('en-US');
const fmt = (n) => (n === null || n === undefined ? '–' : nf.format(n));

function fmtRate(v) {
  if (v === null || v === undefined || !isFinite(v)) return '–';
  if (v >= 1000) return nf.format(Math.round(v));
  if (v >= 10) return v.toFixed(0);
  if (v >= 1) return v.toFixed(1);
  return v === 0 ? '0' : v.toFixed(2);
}

function fmtCompact(v) {
  const a = Math.abs(v);
  if (a >= 1e9) return (v / 1e9).toFixed(a >= 1e10 ? 0 : 1) + 'G';
  if (a >= 1e6) return (v / 1e6).toFixed(a >= 1e7 ? 0 : 1) + 'M';
  if (a >= 1e3) return (v / 1e3).toFixed(a >= 1e4 ? 0 : 1) + 'k';
  if (a > 0 && a < 10 && v % 1 !== 0) return v.toFixed(a < 1 ? 2 : 1);
  return String(Math.round(v));
}

function fmtAge(ms) {
  if (ms === null || ms === undefined) return '–';
  if (ms < 1000) return ms + ' ms';
  const s = ms / 1000;
  if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + ' s';
  const m = s / 60;
  if (m < 60) return Math.floor(m) + ' m ' + String(Math.floor(s % 60)).padStart(2, '0') + ' s';
  const h = m / 60;
  if (h < 48) return Math.floor(h) + ' h ' + String(Math.floor(m % 60)).padStart(2, '0') + ' m';
  return Math.floor(h / 24) + ' d';
}

// parseDuration reads a Go duration string as the API answers it ("1h30m0s",
// "500ms") into milliseconds; null when it is not one.
function parseDuration(d) {
  if (typeof d !== 'string') return null;
  const unit = { h: 36e5, m: 6e4, s: 1e3, ms: 1, us: 1e-3, 'µs': 1e-3, ns: 1e-6 };
  let ms = 0, rest = d;
  while (rest) {
    const m = /^([0-9.]+)(h|ms|m|s|us|µs|ns)/.exec(rest);
    if (!m) return null;
    ms += parseFloat(m[1]) * unit[m[2]];
    rest = rest.slice(m[0].length);
  }
  return Math.round(ms);
}

// fmtTime gives a time of day, and for a recent one a span that fillAges
// fills with how long ago (or in how long) it is: the markup stays the same
// from poll to poll while the age moves on.
function fmtTime(iso) {
  if (!iso || iso.startsWith('0001')) return '–';
  const d = new Date(iso);
  const hhmmss = d.toLocaleTimeString('en-GB', { hour12: false });
  if (Math.abs(serverNow() - d.getTime()) < 36e5 * 20) return `${hhmmss} <span class="muted" data-at="${d.getTime()}"></span>`;
  return d.toISOString().slice(0, 10) + ' ' + hhmmss;
}

function serverNow() { return S.overview ? Date.parse(S.overview.time) : Date.now(); }

// fillAges writes the ages of the times fmtTime gave, as of the last poll.
function fillAges() {
  const now = serverNow();
  for (const el of document.querySelectorAll('[data-at]')) {
    const diff = now - Number(el.dataset.at);
    const text = `(${diff >= 0 ? fmtAge(diff) + ' ago' : 'in ' + fmtAge(-diff)})`;
    if (el.textContent !== text) el.textContent = text;
  }
}

// setHTML writes html into el only when it differs from what was written
// there last (since redraw): a poll that changes nothing leaves the nodes
// alone, so that a click on one of their buttons, pressed as the poll
// lands, is not lost with the button it was pressed on.
function setHTML(el, html) {
  const key = S.drawn + '\u0000' + html;
  if (el && el.leatHTML !== key) {
    el.innerHTML = html;
    el.leatHTML = key;
  }
}

// redraw makes the next setHTML of every element write again.
function redraw() { S.drawn++; }

function short(id, n = 8) { return id && id.length > n ? id.slice(0, n) : id || ''; }

// css reads a colour of the style sheet (they change with the theme).
function css(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

function workerColour(w) {
  if (!w) return css('--cell-unowned');
  let h = 0;
  for (const c of w) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  const ws = (S.overview?.workers || []).map((x) => x.id).filter(Boolean).sort();
  const i = ws.indexOf(w);
  return PALETTE[(i >= 0 ? i : h) % PALETTE.length];
}

// The heat map's scale is absolute, by powers of ten, so a colour means the
// same count whatever the other partitions hold: LAG_BUCKETS[i] colours the
// counts from its 'from' up to the next one's.
const LAG_BUCKETS = [
  { from: 1, label: '1–9', colour: '#fef3c7' },
  { from: 10, label: '10–99', colour: '#fcd34d' },
  { from: 100, label: '100–999', colour: '#f59e0b' },
  { from: 1000, label: '1k–9.9k', colour: '#ea580c' },
  { from: 10000, label: '10k–99k', colour: '#b91c1c' },
  { from: 100000, label: '100k+', colour: '#581c87' },
];

// lagColour maps a count (lag, pending) to the colour of its bucket: pale
// green for none.
function lagColour(v) {
  if (v === null || v === undefined) return css('--cell-none');
  if (v <= 0) return css('--cell-zero');
  let c = LAG_BUCKETS[0].colour;
  for (const b of LAG_BUCKETS) if (v >= b.from) c = b.colour;
  return c;
}

// textOn returns the text colour, near black or white, with the more
// contrast on background bg (#rrggbb or rgb()): at least 4.2:1 on any.
function textOn(bg) {
  let r, g, b;
  const hex = /^#([0-9a-f]{6})$/i.exec(bg || '');
  const fn = /rgba?\((\d+),\s*(\d+),\s*(\d+)/.exec(bg || '');
  if (hex) [r, g, b] = [0, 2, 4].map((i) => parseInt(hex[1].slice(i, i + 2), 16));
  else if (fn) [r, g, b] = fn.slice(1, 4).map(Number);
  else return '#111827';
  const lin = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
  const lum = 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  const dark = 0.0088; // #111827
  return (lum + 0.05) / (dark + 0.05) >= 1.05 / (lum + 0.05) ? '#111827' : '#ffffff';
}

// ---------- API ----------

class Unauthorized extends Error {}

async function api(path, opts = {}) {
  const headers = { Accept: 'application/json' };
  if (S.token) headers.Authorization = 'Bearer ' + S.token;
  if (opts.body) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, { ...opts, headers, cache: 'no-store' });
  if (res.status === 401) throw new Unauthorized('unauthorized');
  let body = null;
  try { body = await res.json(); } catch (_) { /* not JSON */ }
  if (!res.ok) {
    const err = new Error(body?.error || `${res.status} ${res.statusText}`);
    err.status = res.status;
    err.code = body?.code || '';
    throw err;
  }
  return body;
}

function askToken(refused) {
  const d = $('#login');
  $('#login-error').hidden = !refused;
  if (!d.open) d.showModal();
  $('#login-token').focus();
}

$('#login-form')?.addEventListener('submit', (e) => {
  e.preventDefault();
  S.token = $('#login-token').value.trim();
  sessionStorage.setItem(TOKEN_KEY, S.token);
  $('#login').close();
  start();
});

// ---------- polling ----------

async function poll() {
  if (S.busy || document.hidden) return;
  S.busy = true;
  try {
    if (!S.info) {
      S.info = await api('v1/info');
      renderChrome();
    }
    const [ov, qs, pl] = await Promise.all([api('v1/overview'), api('v1/queues'), api('v1/workers').catch(() => null)]);
    const reps = await Promise.all((ov.streams || []).map((s) => api('v1/streams/' + enc(s.name)).catch(() => null)));
    S.overview = ov;
    S.queues = qs.queues || [];
    S.pools = pl || { workers: [], deployments: [] };
    S.reports = {};
    reps.forEach((r) => { if (r) S.reports[r.stream] = r; });
    if (S.route.kind === 'stream' && S.deadOpen.startsWith(S.route.name + '/')) await loadDead(S.deadOpen);
    if (S.route.kind === 'queue') {
      const q = S.route.name;
      const l = await api(`v1/queues/${enc(q)}/tasks?state=${S.listState}&limit=${LIST_LIMIT}`).catch(() => null);
      if (l) S.lists[q + '/' + S.listState] = l.tasks;
      // The open task's detail again once its listed state moved on.
      const o = S.open, row = o && o.info && o.queue === q && (l?.tasks || []).find((t) => t.id === o.id);
      if (row && (row.state !== o.info.state || row.attempts !== o.info.attempts)) await loadOpen(o);
    }
    await loadFlows();
    record();
    S.lastOK = Date.now();
    $('#error').hidden = true;
    setLive(true);
    render();
  } catch (e) {
    if (e instanceof Unauthorized) {
      S.info = null;
      stop();
      askToken(Boolean(S.token));
      setLive(false, 'token needed');
    } else {
      $('#error').textContent = 'Cannot read the API: ' + e.message;
      $('#error').hidden = false;
      setLive(false, 'error');
    }
  } finally {
    S.busy = false;
  }
}

function record() {
  const ov = S.overview;
  const t = Date.parse(ov.time) || Date.now();
  const s = { t, lag: {} };
  for (const [name, r] of Object.entries(S.reports)) {
    for (const p of r.processors) if (p.lag !== null) s.lag[name + '/' + p.processor] = p.lag;
  }
  s.counts = {};
  for (const q of S.queues) s.counts[q.queue] = { ...q.counts };
  const last = S.hist[S.hist.length - 1];
  if (last && t <= last.t) return;
  S.hist.push(s);
  while (S.hist.length && S.hist[0].t < t - HISTORY_MS) S.hist.shift();
}

// Rates come from the server, never from the page's own polls, so a page
// opened after a burst shows it: a stream's entries appended per 5 s of the
// last minute (counted from their IDs) and a queue's tasks finished per
// 10 s (the task scripts' counters). series turns such buckets ({time,
// bucket_ms, counts}, oldest first, the last ending at time) into
// per-second points at each bucket's end; an unknown bucket (null) is left
// out.
function series(b) {
  if (!b || !b.counts) return [];
  const end = Date.parse(b.time), n = b.counts.length, w = b.bucket_ms;
  const out = [];
  b.counts.forEach((c, i) => {
    if (c === null || c === undefined) return;
    // The last bucket of finished tasks has begun and ends at time.
    const t = end - (n - 1 - i) * w;
    const span = i === n - 1 && b.partial ? Math.max(1, (end % w) || w) : w;
    out.push([t, c / (span / 1000)]);
  });
  return out;
}

// appendedSeries is stream name's appended points; finishedSeries queue
// q's finished ones.
function appendedSeries(name) { return series(S.reports[name]?.appended); }
function finishedSeries(q) { return q.finished ? series({ ...q.finished, partial: true }) : []; }

function levels(get) {
  return S.hist.filter((h) => get(h) !== undefined).map((h) => [h.t, get(h)]);
}


function start() {
  stop();
  poll();
  S.timer = setInterval(poll, POLL_MS);
}

function stop() {
  if (S.timer) clearInterval(S.timer);
  S.timer = null;
}

function setLive(ok, text) {
  const el = $('#live');
  el.classList.toggle('ok', ok);
  el.classList.toggle('bad', !ok);
  $('#live-text').textContent = ok ? (document.hidden ? 'paused' : 'live') : text;
  if (ok && S.overview) $('#updated').textContent = 'updated ' + new Date(S.overview.time).toLocaleTimeString('en-GB', { hour12: false });
}

document.addEventListener('visibilitychange', () => {
  if (document.hidden) {
    $('#live-text').textContent = 'paused';
    $('#live').classList.remove('ok');
  } else if (S.timer) {
    poll();
  }
});

// ---------- routing ----------

function parseRoute() {
  // A task's route names its queue and ID, each encoded: either may hold a
  // slash (a flow node's task ID holds its flow's ID).
  const raw = location.hash.replace(/^#\/?/, '').split('/');
  if (raw[0] === 'task' && raw.length === 3 && raw[1] && raw[2]) {
    try { return { kind: 'task', queue: decodeURIComponent(raw[1]), id: decodeURIComponent(raw[2]) }; } catch (_) { /* malformed */ }
  }
  if (raw[0] === 'flow' && raw.length === 2 && raw[1]) {
    try { return { kind: 'flow', name: decodeURIComponent(raw[1]) }; } catch (_) { /* malformed */ }
  }
  if (raw[0] === 'flows') return { kind: 'flows' };
  const h = decodeURIComponent(location.hash.replace(/^#\/?/, ''));
  const [kind, ...rest] = h.split('/');
  const name = rest.join('/');
  if (kind === 'stream' && name) return { kind: 'stream', name };
  if (kind === 'queue' && name) return { kind: 'queue', name };
  return { kind: 'overview' };
}

window.addEventListener('hashchange', () => {
  S.route = parseRoute();
  S.filter = '';
  S.picked = null;
  S.view = null;
  render();
  poll();
});

// ---------- rendering ----------

function renderChrome() {
  if (!S.info) return;
  $('#app-name').textContent = S.info.app;
  document.title = 'leat · ' + S.info.app;
  $('#mode').innerHTML = S.info.read_only
    ? '<span class="badge warn" id="read-only" title="the API refuses every write">read-only</span>'
    : '<span class="badge ok">read-write</span>';
  $('#version').textContent = S.info.version ? 'leat ' + S.info.version : '';
}

function render() {
  if (!S.overview) return;
  renderNav();
  const r = S.route;
  const key = r.kind + ':' + (r.name || '') + (r.kind === 'task' ? r.queue + '\u0000' + r.id : '');
  const view = $('#view');
  if (S.view !== key) {
    S.view = key;
    $('#title').replaceChildren();
    $('#title').leatKey = undefined;
    const skeleton = { stream: streamSkeleton, queue: queueSkeleton, flows: flowsSkeleton, flow: flowSkeleton, task: taskSkeleton }[r.kind] || overviewSkeleton;
    view.innerHTML = skeleton(r.name);
    bindView();
  }
  if (r.kind !== 'queue') closeQueueEvents();
  if (r.kind === 'stream') renderStream(r.name);
  else if (r.kind === 'queue') renderQueue(r.name);
  else if (r.kind === 'flows') renderFlows();
  else if (r.kind === 'flow') renderFlow(r.name);
  else if (r.kind === 'task') renderTask(r.queue, r.id);
  else renderOverview();
  fillAges();
}

function renderNav() {
  const ov = S.overview;
  const r = S.route;
  const item = (href, label, badge, active, cls = '') =>
    `<a href="${href}" class="${active ? 'active' : ''} ${cls}"><span class="nav-label">${esc(label)}</span>${badge}</a>`;
  let h = item('#/', 'Overview', '', r.kind === 'overview');
  h += item('#/flows', 'Flows', '', r.kind === 'flows' || r.kind === 'flow');
  h += '<div class="nav-head">Streams</div>';
  for (const s of ov.streams) {
    const q = ov.processors.filter((p) => p.stream === s.name).reduce((a, p) => a + p.quarantined, 0);
    const badge = q ? `<span class="pill bad">${q}</span>` : `<span class="pill">${s.partitions}</span>`;
    h += item('#/stream/' + enc(s.name), s.name, badge, r.kind === 'stream' && r.name === s.name);
  }
  if (!ov.streams.length) h += '<div class="nav-empty">none</div>';
  h += '<div class="nav-head">Task queues</div>';
  for (const q of S.queues) {
    const d = q.counts.dead || 0;
    const badge = (q.paused_at ? '<span class="pill warn">paused</span>' : '') + (d ? `<span class="pill bad">${fmt(d)}</span>` : '');
    h += item('#/queue/' + enc(q.queue), q.queue, badge, r.kind === 'queue' && r.name === q.queue);
  }
  if (!S.queues.length) h += '<div class="nav-empty">none</div>';
  const nav = $('#nav');
  if (nav.innerHTML !== h) nav.innerHTML = h;
}

function kpi(label, value, opts = {}) {
  return `<div class="kpi ${opts.cls || ''}" ${opts.id ? `id="${opts.id}"` : ''}>
    <div class="kpi-label">${esc(label)}</div>
    <div class="kpi-value num">${value}</div>
    ${opts.sub ? `<div class="kpi-sub">${opts.sub}</div>` : ''}</div>`;
}

function panel(title, body, opts = {}) {
  return `<section class="panel ${opts.cls || ''}" ${opts.id ? `id="${opts.id}"` : ''}>
    <div class="panel-head"><h2>${esc(title)}</h2>${opts.right || ''}</div>${body}</section>`;
}

// ----- overview -----

function overviewSkeleton() {
  return `<div id="ov-kpis" class="kpis overview"></div>
    <div id="ov-warnings"></div>
    <div class="grid3">
      ${panel('Events appended / s', '<div class="chart" id="ch-added"></div>')}
      ${panel('Lag (entries not yet delivered)', '<div class="chart" id="ch-lag"></div>')}
      ${panel('Tasks finished / s', '<div class="chart" id="ch-tasks"></div>')}
    </div>
    ${panel('Processors', '<div id="ov-procs"></div>')}
    <div class="grid2 tables">
      ${panel('Streams', '<div id="ov-streams"></div>')}
      ${panel('Task queues', '<div id="ov-queues"></div>')}
    </div>
    ${panel('Workers', '<div id="ov-workers"></div>', { right: '<span id="ov-leader" class="muted"></span>' })}
    <div id="ov-pools"></div>`;
}

// renderPools fills the control plane's panel: its workers and the
// revision of each deployment; nothing when no control plane serves the app.
function renderPools() {
  const p = S.pools;
  if (!p || (!p.workers.length && !p.deployments.length)) {
    setHTML($('#ov-pools'), '');
    return;
  }
  const deps = p.deployments.map((d) => `<span class="mono" title="${esc(d.source)}">${esc(d.deployment)} @ ${esc(short(d.revision, 12))}</span>` +
    (d.error ? ` <span class="badge bad" title="${esc(d.error)}">cannot resolve</span>` : '')).join(' · ');
  const health = { ok: 'ok', starting: 'warn', degraded: 'warn', failing: 'bad' };
  const rows = p.workers.map((w) => {
    const s = w.setup;
    const setup = !s ? '<span class="muted">–</span>' : s.ok ? `<span class="mono">${esc(short(s.revision, 12))}</span> ok`
      : `<span class="badge bad" title="${esc(s.error)}">${esc(short(s.revision, 12))} failed</span> <span class="muted">${esc(trim((s.error || '').split('\n')[0], 80))}</span>`;
    const rev = esc(short(w.revision, 12)) + (w.revision !== w.desired_revision ? ` <span class="muted">→ ${esc(short(w.desired_revision, 12))}</span>` : '');
    return `<tr data-pool-worker="${esc(w.id)}"><td>${esc(w.pool)}</td><td class="mono" title="${esc(w.remote)}">${esc(w.id)}</td><td>${esc(w.host)}</td>
      <td class="mono">${rev || '<span class="muted">–</span>'}</td>
      <td><span class="badge ${health[w.health] || 'warn'}" title="${esc(w.error || '')}">${esc(w.health)}</span></td>
      <td>${(w.queues || []).map((q) => `<a href="#/queue/${enc(q)}">${esc(q)}</a>`).join(', ')}</td>
      <td class="r num">${fmt(w.handlers)}</td><td>${setup}</td></tr>`;
  });
  setHTML($('#ov-pools'), panel('Worker pools', table(
    [['Pool', ''], ['Worker', ''], ['Host', ''], ['Revision', ''], ['Health', ''], ['Queues', ''], ['Handlers', 'r'], ['Last setup', '']],
    rows, 'no live workers'), { right: `<span class="muted">${deps}</span>` }));
}

function renderOverview() {
  const ov = S.overview;
  $('#title').textContent = 'Overview';
  const length = ov.streams.reduce((a, s) => a + s.length, 0);
  const lags = ov.processors.map((p) => p.lag).filter((v) => v !== null);
  const lag = lags.length ? lags.reduce((a, b) => a + b, 0) : null;
  const pending = ov.processors.reduce((a, p) => a + p.pending, 0);
  const quarantined = ov.processors.reduce((a, p) => a + p.quarantined, 0);
  const appended = Object.values(S.reports).map((r) => r.appended?.per_second || 0);
  const workers = ov.workers.filter((w) => w.id);
  const dead = S.queues.reduce((a, q) => a + (q.counts.dead || 0), 0);
  $('#ov-kpis').innerHTML = [
    kpi('Streams', fmt(ov.streams.length), { sub: fmt(ov.streams.reduce((a, s) => a + s.partitions, 0)) + ' partitions' }),
    kpi('Entries kept', fmt(length), { id: 'kpi-entries' }),
    kpi('Appended / s', fmtRate(appended.length ? sum(appended) : null), { id: 'kpi-appended', sub: 'last 10 s' }),
    kpi('Lag', fmt(lag), { cls: lag > 0 ? 'warn' : '', id: 'kpi-lag' }),
    kpi('Pending', fmt(pending), { id: 'kpi-pending' }),
    kpi('Quarantined', fmt(quarantined), { cls: quarantined ? 'bad' : '', id: 'kpi-quarantined', sub: 'partitions' }),
    kpi('Workers', fmt(workers.length), { sub: ov.leader ? 'leader ' + esc(ov.leader.worker) : 'no leader' }),
    kpi('Dead tasks', fmt(dead), { cls: dead ? 'bad' : '' }),
  ].join('');
  $('#ov-warnings').innerHTML = warnings(ov.warnings);

  chart($('#ch-added'), Object.keys(S.reports).map((name, i) => ({ name, colour: PALETTE[i % PALETTE.length], points: appendedSeries(name) })), {});
  const lagKeys = ov.processors.map((p) => p.stream + '/' + p.processor);
  chart($('#ch-lag'), lagKeys.map((k, i) => ({ name: k, colour: PALETTE[i % PALETTE.length], points: levels((h) => h.lag[k]) })), { levels: true });
  chart($('#ch-tasks'), S.queues.map((q, i) => ({ name: q.queue, colour: PALETTE[i % PALETTE.length], points: finishedSeries(q) })), {});

  $('#ov-procs').innerHTML = table(
    [['Stream', ''], ['Processor', ''], ['Executors', 'r'], ['Owned', 'r'], ['Lag', 'r'], ['Pending', 'r'], ['Quarantined', 'r'], ['Dead letters', 'r']],
    ov.processors.map((p) => `<tr class="${p.quarantined ? 'row-bad' : ''}">
      <td><a href="#/stream/${enc(p.stream)}">${esc(p.stream)}</a></td><td>${esc(p.processor)}</td>
      <td class="r num">${fmt(p.executors)}</td>
      <td class="r num">${ownedCell(p.owned, p.partitions)}</td>
      <td class="r num ${p.lag > 0 ? 'warn-text' : ''}">${fmt(p.lag)}</td>
      <td class="r num">${fmt(p.pending)}</td>
      <td class="r num">${p.quarantined ? `<span class="badge bad">${p.quarantined}</span>` : '0'}</td>
      <td class="r num" data-dead="${esc(p.stream + '/' + p.processor)}">${p.dead ? `<a href="#/stream/${enc(p.stream)}" data-dead-link="${esc(p.processor)}"><span class="badge bad">${fmt(p.dead)}</span></a>` : '0'}</td></tr>`),
    'no processors registered');

  $('#ov-streams').innerHTML = table(
    [['Stream', ''], ['Partitions', 'r'], ['Length', 'r'], ['Retention', 'r'], ['Codec', ''], ['Processors', '']],
    ov.streams.map((s) => `<tr><td><a href="#/stream/${enc(s.name)}">${esc(s.name)}</a></td>
      <td class="r num">${fmt(s.partitions)}</td><td class="r num" data-stream-length="${esc(s.name)}">${fmt(s.length)}</td>
      <td class="r num">${fmt(s.size)}</td><td>${esc(s.codec)}</td><td>${s.processors.map(esc).join(', ') || '<span class="muted">none</span>'}</td></tr>`),
    'no streams registered');

  $('#ov-queues').innerHTML = table(
    [['Queue', ''], ['Pending', 'r'], ['Active', 'r'], ['Scheduled', 'r'], ['Succeeded', 'r'], ['Dead', 'r']],
    S.queues.map((q) => `<tr><td><a href="#/queue/${enc(q.queue)}">${esc(q.queue)}</a>${q.paused_at ? ' <span class="badge warn">paused</span>' : ''}</td>
      <td class="r num">${fmt(q.counts.pending)}</td><td class="r num">${fmt(q.counts.active)}</td>
      <td class="r num">${fmt((q.counts.scheduled || 0) + (q.counts.retrying || 0))}</td>
      <td class="r num">${fmt(q.counts.succeeded)}</td>
      <td class="r num">${q.counts.dead ? `<span class="badge bad">${fmt(q.counts.dead)}</span>` : '0'}</td></tr>`),
    'no task queues');

  $('#ov-leader').innerHTML = ov.leader ? `leader <b>${esc(ov.leader.worker)}</b> · term <span class="num">${esc(ov.leader.term)}</span>` : 'no leader';
  const rows = [];
  for (const w of ov.workers) {
    // a row per executor and per task queue the worker runs
    const runs = [
      ...w.executors.map((e) => `<td>${esc(e.stream)} / ${esc(e.processor)}</td>
        <td class="mono muted" title="${esc(e.id)}">${esc(short(e.id))}</td>
        <td class="r num">${fmt(e.partitions.length)}</td>
        <td>${partList(e.partitions)}</td>
        <td class="r num ${e.alive ? '' : 'bad-text'}">${fmtAge(e.heartbeat_age_ms)}</td>
        <td>${e.alive ? '<span class="badge ok">alive</span>' : '<span class="badge bad">expired</span>'}</td>`),
      ...(w.queues || []).map((q) => `<td>task queue <a href="#/queue/${enc(q.queue)}">${esc(q.queue)}</a></td>
        <td class="muted">–</td>
        <td class="r num"></td>
        <td class="muted" data-running="${esc(q.queue)}">${fmt(q.running)} running</td>
        <td class="r num ${q.alive ? '' : 'bad-text'}">${fmtAge(q.idle_ms)}</td>
        <td>${seenBadge(q)}</td>`),
    ];
    runs.forEach((cells, i) => rows.push(`<tr>
        ${i === 0 ? `<td rowspan="${runs.length}" class="worker-cell"><span class="swatch" style="background:${workerColour(w.id)}"></span>${w.id ? esc(w.id) : '<span class="muted">(holds no partition)</span>'}${w.leader ? ' <span class="badge lead">leader</span>' : ''}</td>` : ''}
        ${cells}</tr>`));
  }
  $('#ov-workers').innerHTML = table(
    [['Worker', ''], ['Runs', ''], ['Executor', ''], ['Partitions', 'r'], ['', ''], ['Heartbeat', 'r'], ['', '']],
    rows, 'no live workers');
  renderPools();
}

// seenBadge says whether Redis saw a task worker lately (inspect.TaskWorkerAlive).
function seenBadge(q) {
  return q.alive ? '<span class="badge ok">alive</span>' : '<span class="badge bad">not seen</span>';
}

function ownedCell(owned, total) {
  const f = total ? owned / total : 0;
  return `<span class="owned"><span class="meter"><span style="width:${(f * 100).toFixed(1)}%"></span></span>${fmt(owned)}/${fmt(total)}</span>`;
}

// partList writes partitions as ranges: 0-15, 32, 40-47.
function partList(ps) {
  if (!ps.length) return '<span class="muted">–</span>';
  const s = [...ps].sort((a, b) => a - b);
  const out = [];
  for (let i = 0; i < s.length; i++) {
    let j = i;
    while (j + 1 < s.length && s[j + 1] === s[j] + 1) j++;
    out.push(j > i ? `${s[i]}–${s[j]}` : String(s[i]));
    i = j;
  }
  const text = out.join(', ');
  return `<span class="muted parts" title="${esc(text)}">${esc(text.length > 60 ? text.slice(0, 57) + '…' : text)}</span>`;
}

function warnings(ws) {
  if (!ws || !ws.length) return '';
  return `<div class="banner warn" id="warnings"><b>${ws.length} warning${ws.length > 1 ? 's' : ''}</b><ul>${ws.map((w) => `<li>${esc(w)}</li>`).join('')}</ul></div>`;
}

function sum(a) { return a.reduce((x, y) => x + y, 0); }

function table(cols, rows, empty) {
  if (!rows.length) return `<div class="empty">${esc(empty)}</div>`;
  return `<div class="table-wrap"><table><thead><tr>${cols.map(([c, cls]) => `<th class="${cls}">${esc(c)}</th>`).join('')}</tr></thead>
    <tbody>${rows.join('')}</tbody></table></div>`;
}

// ----- stream -----

const PART_COLS = [
  ['partition', 'Partition', 'r'], ['length', 'Length', 'r'], ['added', 'Added', 'r'], ['worker', 'Owner', ''],
  ['executor', 'Executor', ''], ['lag', 'Lag', 'r'], ['pending', 'Pending', 'r'], ['oldest', 'Oldest pending', 'r'],
  ['consumers', 'Consumers', 'r'], ['status', 'Status', ''],
];

function streamSkeleton(name) {
  return `<div id="st-meta" class="meta"></div>
    <div id="st-kpis" class="kpis"></div>
    <div id="st-warnings"></div>
    <div id="st-procs" class="seg"></div>
    ${panel('Partitions', `<div id="heat" class="heat"></div><div id="heat-legend" class="legend"></div>`, {
      id: 'heat-panel',
      right: `<div class="seg small" id="colour-by">
        <span class="muted">colour by</span>
        <button data-colour="lag">lag</button><button data-colour="pending">pending</button><button data-colour="owner">owner</button></div>`,
    })}
    ${panel('Dead letters', '<div id="dead-list"></div>', { id: 'dead-panel' })}
    <div class="grid2">
      ${panel('Appended / s', '<div class="chart" id="ch-st-added"></div>')}
      ${panel('Lag', '<div class="chart" id="ch-st-lag"></div>')}
    </div>
    ${panel('Partition table', `<div class="tools">
        <input id="filter" type="search" placeholder="filter: partition, worker, executor or status">
        <label><input id="only-busy" type="checkbox"> only with lag, pending or a problem</label>
        <span id="shown" class="muted"></span></div>
        <div class="table-wrap tall"><table id="parts"><thead><tr>${PART_COLS.map(([k, l, c]) => `<th class="${c} sortable" data-sort="${k}">${l}<span class="arrow"></span></th>`).join('')}</tr></thead><tbody></tbody></table></div>`)}`;
}

function bindView() {
  const f = $('#filter');
  if (f) {
    f.value = S.filter;
    f.addEventListener('input', () => { S.filter = f.value; S.picked = null; render(); });
    $('#only-busy').checked = S.onlyBusy;
    $('#only-busy').addEventListener('change', (e) => { S.onlyBusy = e.target.checked; render(); });
    $('#parts thead').addEventListener('click', (e) => {
      const th = e.target.closest('th[data-sort]');
      if (!th) return;
      const k = th.dataset.sort;
      S.sort = S.sort.key === k ? { key: k, dir: -S.sort.dir } : { key: k, dir: k === 'partition' || k === 'worker' || k === 'executor' || k === 'status' ? 1 : -1 };
      render();
    });
    $('#colour-by').addEventListener('click', (e) => {
      const b = e.target.closest('button[data-colour]');
      if (b) { S.colour = b.dataset.colour; render(); }
    });
    const heat = $('#heat');
    heat.addEventListener('mousemove', (e) => {
      const c = e.target.closest('.cell');
      if (c) showTip(e, c.dataset.tip); else hideTip();
    });
    heat.addEventListener('mouseleave', hideTip);
    heat.addEventListener('click', (e) => {
      const c = e.target.closest('.cell');
      if (!c) return;
      const p = Number(c.dataset.p);
      S.picked = S.picked === p ? null : p;
      S.filter = S.picked === null ? '' : String(p);
      $('#filter').value = S.filter;
      render();
    });
    $('#dead-list').addEventListener('click', onDeadAction);
    $('#st-procs').addEventListener('click', (e) => {
      const b = e.target.closest('button[data-proc]');
      if (b) { S.proc[S.route.name] = b.dataset.proc; render(); }
    });
  }
  $('#fv-graph')?.addEventListener('click', onGraphClick);
  $('#fv-actions')?.addEventListener('click', onFlowAction);
  $('#tv-actions')?.addEventListener('click', onTaskViewAction);
  $('#fv-graph')?.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') onGraphClick(e); });
  const tabs = $('#list-tabs');
  if (tabs) {
    tabs.addEventListener('click', (e) => {
      const b = e.target.closest('button[data-list]');
      if (b) { S.listState = b.dataset.list; render(); poll(); }
    });
    $('#task-list').addEventListener('click', onTaskAction);
    $('#q-paused').addEventListener('click', onQueueAction);
    $('#q-rate').addEventListener('submit', onRateSet);
    $('#q-rate').addEventListener('click', onRateClear);
  }
}

// rowsOf joins a stream's partitions with what processor proc did with them.
function rowsOf(rep, proc) {
  const pp = new Map((proc?.partitions || []).map((x) => [x.partition, x]));
  return rep.partitions.map((p) => {
    const x = pp.get(p.partition) || {};
    const q = x.quarantine;
    const status = q ? q.policy : x.retention_risk ? 'retention risk' : x.owner ? 'owned' : 'unowned';
    return {
      partition: p.partition, length: p.length, added: p.entries_added,
      worker: x.owner?.worker || '', executor: x.owner?.executor || '',
      lag: x.lag ?? null, pending: x.pending ?? 0, oldest: x.oldest_pending_age_ms ?? null,
      consumers: x.consumers ?? 0, status, quarantine: q, risk: Boolean(x.retention_risk),
    };
  });
}

function renderStream(name) {
  const rep = S.reports[name];
  $('#title').innerHTML = `<span class="muted">stream</span> ${esc(name)}`;
  if (!rep) {
    $('#st-meta').innerHTML = `<div class="banner error">Stream ${esc(name)} is not in the registry.</div>`;
    return;
  }
  const procs = rep.processors;
  let proc = procs.find((p) => p.processor === S.proc[name]) || procs[0] || null;
  $('#st-meta').innerHTML = [
    ['partitions', fmt(rep.partitions.length)], ['retention', fmt(rep.size) + ' / partition'], ['codec', rep.codec],
    ['key', rep.key_field || 'Go function'],
  ].map(([k, v]) => `<span class="chip"><span class="muted">${k}</span> ${esc(v)}</span>`).join('');

  const added = appendedSeries(name);
  const rows = rowsOf(rep, proc);
  const owners = new Set(rows.map((r) => r.worker).filter(Boolean));
  $('#st-kpis').innerHTML = [
    kpi('Length', fmt(rep.length), { id: 'stream-length', sub: 'entries kept' }),
    kpi('Appended / s', fmtRate(rep.appended?.per_second ?? null), { id: 'stream-appended', sub: 'last 10 s' }),
    kpi('Lag', fmt(proc?.lag ?? null), { id: 'stream-lag', cls: proc?.lag > 0 ? 'warn' : '', sub: proc ? esc(proc.processor) : 'no processor' }),
    kpi('Pending', fmt(proc?.pending ?? 0), { id: 'stream-pending' }),
    kpi('Owned', proc ? `${fmt(proc.owned)}<span class="kpi-of">/${fmt(rep.partitions.length)}</span>` : '–', { sub: `${owners.size} worker${owners.size === 1 ? '' : 's'}` }),
    kpi('Quarantined', fmt(proc?.quarantined ?? 0), { id: 'stream-quarantined', cls: proc?.quarantined ? 'bad' : '' }),
    kpi('Dead letters', fmt(proc?.dead ?? 0), { id: 'stream-dead', cls: proc?.dead ? 'bad' : '' }),
  ].join('');
  renderDead(name, proc);
  $('#st-warnings').innerHTML = warnings(rep.warnings);
  const tables = proc?.tables?.length
    ? ` <span class="muted" id="st-tables">tables ${proc.tables.map((t) => `${esc(t.name)} (${esc(t.codec)})`).join(', ')}</span>`
    : '';
  $('#st-procs').innerHTML = (procs.length > 1
    ? '<span class="muted">processor</span>' + procs.map((p) => `<button data-proc="${esc(p.processor)}" class="${p === proc ? 'on' : ''}">${esc(p.processor)}</button>`).join('')
    : '') + tables;

  // Heat map.
  const cols = rows.length <= 16 ? rows.length : rows.length <= 64 ? 16 : 32;
  const heat = $('#heat');
  heat.style.gridTemplateColumns = `repeat(${Math.max(cols, 1)}, minmax(0, 1fr))`;
  heat.classList.toggle('dense', rows.length > 64);
  heat.classList.toggle('by-owner', S.colour === 'owner');
  heat.innerHTML = rows.map((r) => {
    let bg;
    if (S.colour === 'owner') bg = workerColour(r.worker);
    else if (S.colour === 'pending') bg = r.pending ? lagColour(r.pending) : css('--cell-idle');
    else bg = lagColour(r.lag);
    const cls = ['cell', r.quarantine ? 'quarantined' : '', r.risk ? 'risk' : '', !r.worker ? 'unowned' : '', S.picked === r.partition ? 'picked' : ''].join(' ');
    const tip = [
      `<b>partition ${r.partition}</b>`,
      `owner <b>${r.worker ? esc(r.worker) : 'none'}</b>${r.executor ? ` <span class="mono">${esc(short(r.executor))}</span>` : ''}`,
      `lag <b class="num">${fmt(r.lag)}</b> · pending <b class="num">${fmt(r.pending)}</b>`,
      `length <b class="num">${fmt(r.length)}</b>` + (r.oldest !== null ? ` · oldest pending ${fmtAge(r.oldest)}` : ''),
      r.quarantine ? `<span class="bad-text">${esc(r.quarantine.policy)}: ${esc(r.quarantine.error)}</span>` : '',
      r.risk ? '<span class="warn-text">retention risk</span>' : '',
    ].filter(Boolean).join('<br>');
    const label = rows.length <= 64 ? `<span>${r.partition}</span>` : '';
    return `<div class="${cls}" data-p="${r.partition}" data-tip="${esc(tip)}" style="background:${bg};color:${textOn(bg)}">${label}</div>`;
  }).join('');
  $$('#colour-by button').forEach((b) => b.classList.toggle('on', b.dataset.colour === S.colour));
  $('#heat-legend').innerHTML = legend(S.colour, rows);

  chart($('#ch-st-added'), [{ name, colour: PALETTE[0], points: added }], {});
  chart($('#ch-st-lag'), procs.map((p, i) => ({ name: p.processor, colour: PALETTE[i % PALETTE.length], points: levels((h) => h.lag[name + '/' + p.processor]) })), { levels: true });

  // Table.
  const f = S.filter.trim().toLowerCase();
  let shown = rows.filter((r) => {
    if (S.onlyBusy && !(r.lag > 0 || r.pending > 0 || r.quarantine || r.risk || !r.worker)) return false;
    if (!f) return true;
    if (/^\d+$/.test(f)) return String(r.partition) === f;
    return r.worker.toLowerCase().includes(f) || r.executor.toLowerCase().includes(f) || r.status.includes(f);
  });
  const { key, dir } = S.sort;
  shown.sort((a, b) => {
    const x = a[key], y = b[key];
    const c = x === y ? 0 : x === null ? 1 : y === null ? -1 : typeof x === 'number' ? x - y : String(x).localeCompare(String(y));
    return c * (x === null || y === null ? 1 : dir) || a.partition - b.partition;
  });
  $$('#parts th').forEach((th) => {
    th.classList.toggle('sorted', th.dataset.sort === key);
    th.querySelector('.arrow').textContent = th.dataset.sort === key ? (dir > 0 ? ' ▲' : ' ▼') : '';
  });
  $('#shown').textContent = shown.length === rows.length ? `${rows.length} partitions` : `${shown.length} of ${rows.length} partitions`;
  $('#parts tbody').innerHTML = shown.map((r) => `<tr data-partition="${r.partition}" class="${r.quarantine ? 'row-bad' : r.risk ? 'row-warn' : ''} ${S.picked === r.partition ? 'picked' : ''}">
    <td class="r num" data-col="partition">${r.partition}</td>
    <td class="r num" data-col="length">${fmt(r.length)}</td>
    <td class="r num muted" data-col="added">${fmt(r.added)}</td>
    <td data-col="worker">${r.worker ? `<span class="swatch" style="background:${workerColour(r.worker)}"></span>${esc(r.worker)}` : '<span class="muted">none</span>'}</td>
    <td class="mono muted" data-col="executor" title="${esc(r.executor)}">${esc(short(r.executor))}</td>
    <td class="r num ${r.lag > 0 ? 'warn-text' : ''}" data-col="lag">${fmt(r.lag)}</td>
    <td class="r num" data-col="pending">${fmt(r.pending)}</td>
    <td class="r num" data-col="oldest">${r.oldest === null ? '<span class="muted">–</span>' : fmtAge(r.oldest)}</td>
    <td class="r num" data-col="consumers">${fmt(r.consumers)}</td>
    <td data-col="status">${statusBadge(r)}</td></tr>`).join('') ||
    `<tr><td colspan="${PART_COLS.length}" class="empty">no partition matches</td></tr>`;
}

function statusBadge(r) {
  if (r.quarantine) return `<span class="badge bad" title="${esc(r.quarantine.error)}">${esc(r.quarantine.policy)}</span> <span class="muted small-text">${esc(trim(r.quarantine.error, 48))}</span>`;
  if (r.risk) return '<span class="badge warn">retention risk</span>';
  if (!r.worker) return '<span class="badge">unowned</span>';
  return '<span class="badge ok">owned</span>';
}

function trim(s, n) { return s && s.length > n ? s.slice(0, n - 1) + '…' : s || ''; }

function legend(mode, rows) {
  if (mode === 'owner') {
    const counts = {};
    rows.forEach((r) => { counts[r.worker] = (counts[r.worker] || 0) + 1; });
    return Object.keys(counts).sort().map((w) => `<span class="lg"><span class="swatch" style="background:${workerColour(w)}"></span>${w ? esc(w) : 'unowned'} <span class="muted num">${counts[w]}</span></span>`).join('') + qLegend(rows);
  }
  // One swatch per bucket of the absolute scale, with its range.
  const zero = mode === 'pending' ? css('--cell-idle') : css('--cell-zero');
  const sw = (bg, label, n) => `<span class="lg-step"><span class="swatch cellish" style="background:${bg}"></span>${label}` +
    (n ? ` <span class="muted num">${n}</span>` : '') + '</span>';
  const count = (lo, hi) => rows.filter((r) => { const v = mode === 'pending' ? r.pending : r.lag; return v !== null && v >= lo && v < hi; }).length;
  const steps = [sw(zero, '0', count(0, 1))].concat(LAG_BUCKETS.map((b, i) =>
    sw(b.colour, b.label, count(b.from, LAG_BUCKETS[i + 1]?.from ?? Infinity))));
  return `<span class="lg scale" id="heat-scale" aria-label="${mode} scale"><span class="lg-title">${mode}</span>${steps.join('')}</span>` + qLegend(rows);
}

function qLegend(rows) {
  const q = rows.filter((r) => r.quarantine).length;
  const risk = rows.filter((r) => r.risk).length;
  const un = rows.filter((r) => !r.worker).length;
  return `<span class="lg"><span class="swatch cellish quarantined"></span>quarantined <span class="num">${q}</span></span>` +
    `<span class="lg"><span class="swatch cellish risk"></span>retention risk <span class="num">${risk}</span></span>` +
    `<span class="lg"><span class="swatch cellish unowned"></span>unowned <span class="num">${un}</span></span>` +
    '<span class="lg muted">hover a cell for its owner; click to pick it</span>';
}

function $$(sel) { return Array.from(document.querySelectorAll(sel)); }

function showTip(e, html) {
  const t = $('#tip');
  t.innerHTML = html;
  t.hidden = false;
  const w = t.offsetWidth, h = t.offsetHeight;
  let x = e.clientX + 14, y = e.clientY + 14;
  if (x + w > innerWidth - 8) x = e.clientX - w - 14;
  if (y + h > innerHeight - 8) y = e.clientY - h - 14;
  t.style.left = x + 'px';
  t.style.top = y + 'px';
}

function hideTip() { $('#tip').hidden = true; }

// ----- queue -----

function queueSkeleton() {
  return `<div id="q-paused"></div>
    <form id="q-rate" class="actions q-rate"></form>
    <div id="q-meta" class="meta"></div>
    <div id="q-counts" class="kpis states"></div>
    <div id="q-bar" class="stack"></div>
    <div class="grid2">
      ${panel('Finished / s', '<div class="chart" id="ch-q-succ"></div>')}
      ${panel('Dead, pending and active', '<div class="chart" id="ch-q-levels"></div>')}
    </div>
    ${panel('Workers', '<div id="q-workers"></div>')}
    <section class="panel" id="q-events"></section>
    ${panel('Tasks', '<div id="task-list"></div>', {
      right: `<div class="seg small" id="list-tabs"><button data-list="dead">dead</button><button data-list="recent">recent</button><button data-list="scheduled">scheduled</button></div>`,
    })}
    <section class="panel" id="q-ops"></section>`;
}

const STATE_CLASS = { dead: 'bad', failed: 'bad', cancelled: 'mute', succeeded: 'ok', active: 'info', pending: 'info', scheduled: '', retrying: 'warn' };

function renderQueue(name) {
  const q = S.queues.find((x) => x.queue === name);
  $('#title').innerHTML = `<span class="muted">task queue</span> ${esc(name)}`;
  if (!q) {
    $('#q-meta').innerHTML = `<div class="banner error">No task queue ${esc(name)}.</div>`;
    closeQueueEvents();
    return;
  }
  const d = q.definition;
  const dur = (d) => fmtAge(parseDuration(d));
  const ro = S.info?.read_only;
  const dis = ro ? ' disabled title="read-only: the API refuses writes"' : '';
  const paused = q.paused_at
    ? `<div class="banner warn" id="q-paused-banner">Paused since ${fmtTime(q.paused_at)}: workers start none of its tasks; running tasks finish, enqueueing goes on.
        <button class="btn" data-queue-action="resume"${dis}>Resume</button></div>`
    : `<div class="actions q-actions"><button class="btn" data-queue-action="pause"${dis}>Pause queue</button></div>`;
  setHTML($('#q-paused'), paused);
  // The rate over all workers, set live (PUT .../rate) or cleared (DELETE):
  // drawn once per queue, so a poll never wipes what is being typed.
  const rateForm = `<span class="muted">rate limit</span>
    <input id="q-rate-n" type="number" min="0" step="1" placeholder="tasks" aria-label="tasks per window (0: no limit)"${dis}>
    <span class="muted">per</span>
    <input id="q-rate-window" type="text" placeholder="1s" aria-label="window, a duration such as 1s or 500ms"${dis}>
    <button class="btn" type="submit"${dis}>Set rate</button>
    <button class="btn" type="button" data-rate-clear${dis}${q.rate?.live ? '' : ' hidden'}>Back to the workers' rate</button>`;
  if ($('#q-rate').dataset.queue !== name || $('#q-rate').dataset.live !== String(!!q.rate?.live)) {
    $('#q-rate').innerHTML = rateForm;
    $('#q-rate').dataset.queue = name;
    $('#q-rate').dataset.live = String(!!q.rate?.live);
  }
  $('#q-meta').innerHTML = [
    ['concurrency', fmt(q.concurrency ? q.concurrency.n : d.concurrency) + ' / worker' + (q.concurrency?.live ? ' (set live)' : '')],
    ['retries', fmt(d.max_retries)], ['timeout', dur(d.timeout)],
    ['retention', dur(d.retention)], d.keyed ? ['keyed', d.key_rate ? `${d.key_rate} / ${dur(d.key_window)}` : 'yes'] : null,
    // the rate that applies: set live (leat tasks rate, PUT .../rate), else the definition's
    q.rate && (q.rate.n || q.rate.live) ? ['rate', (q.rate.n ? `${q.rate.n} / ${q.rate.window}` : 'none') + (q.rate.live ? ' (set live)' : '')] : null,
    d.levels && d.levels.length > 1 ? ['priorities', d.levels.map((l) => l.name).join(' › ')] : null,
  ].filter(Boolean).map(([k, v]) => `<span class="chip"><span class="muted">${k}</span> ${esc(v)}</span>`).join('');
  $('#q-counts').innerHTML = STATES.map((s) => `<div class="kpi state-${s} ${s === 'dead' && q.counts.dead ? 'bad' : ''}" id="count-${s}" data-count="${s}">
    <div class="kpi-label"><span class="dot-s ${STATE_CLASS[s]}"></span>${s}</div><div class="kpi-value num">${fmt(q.counts[s] || 0)}</div></div>`).join('');
  const total = STATES.reduce((a, s) => a + (q.counts[s] || 0), 0);
  $('#q-bar').innerHTML = total ? STATES.filter((s) => q.counts[s]).map((s) => `<span class="seg-${s}" style="flex:${q.counts[s]}" title="${s}: ${fmt(q.counts[s])}"></span>`).join('') : '<span class="empty-bar"></span>';

  renderQueueOps(name, q);
  renderQueueEvents(name, q);
  chart($('#ch-q-succ'), [{ name: 'finished', colour: '#059669', points: finishedSeries(q) }], {});
  levelsChart(name);

  // the workers of this queue, as the overview lists them
  const workers = (S.overview?.workers || []).flatMap((w) => (w.queues || []).filter((x) => x.queue === name).map((x) => ({ w, x })));
  $('#q-workers').innerHTML = table(
    [['Worker', ''], ['Running', 'r'], ['Last seen', 'r'], ['', '']],
    workers.map(({ w, x }) => `<tr data-worker="${esc(w.id)}">
      <td><span class="swatch" style="background:${workerColour(w.id)}"></span>${esc(w.id)}${w.id === q.leader ? ' <span class="badge lead" title="promotes due tasks, fires cron schedules, reclaims dead workers\' tasks">queue leader</span>' : ''}</td>
      <td class="r num">${fmt(x.running)}</td>
      <td class="r num ${x.alive ? '' : 'bad-text'}">${fmtAge(x.idle_ms)}</td>
      <td>${seenBadge(x)}</td></tr>`),
    'no worker runs this queue');

  $$('#list-tabs button').forEach((b) => b.classList.toggle('on', b.dataset.list === S.listState));
  const tasks = S.lists[name + '/' + S.listState];
  const when = S.listState === 'scheduled' ? 'Due' : S.listState === 'dead' ? 'Died' : 'Finished';
  // Requeue or delete every dead task: the first click arms the button, a
  // second one within a few seconds acts.
  const armed = S.armed && S.armed.queue === name && S.armed.until > Date.now() ? S.armed.action : '';
  const bulkBtn = (action, label, cls) => `<button class="btn ${cls}" data-bulk="${action}"${dis}>${armed === action ? `Click again to ${label.toLowerCase()}` : label}</button>`;
  const bulk = S.listState === 'dead' && tasks && tasks.length
    ? `<div class="actions bulk">${bulkBtn('requeue', 'Requeue all dead', '')}${bulkBtn('delete', 'Delete all dead', 'danger')}</div>` : '';
  setHTML($('#task-list'), bulk + (!tasks ? '<div class="empty">loading…</div>' : table(
    [['Task', ''], ['State', ''], ['Attempts', 'r'], ['Error', ''], ['Enqueued', ''], [when, ''], ['', 'r']],
    tasks.map((t) => {
      const canRequeue = t.state === 'dead' || t.state === 'failed';
      const ended = ['succeeded', 'failed', 'dead', 'cancelled'].includes(t.state);
      const open = S.open && S.open.queue === name && S.open.id === t.id;
      return `<tr data-task="${esc(t.id)}"${open ? ' class="picked"' : ''}>
        <td class="mono task-id-cell"><a href="#" class="task-open task-id" data-open="${esc(t.id)}" aria-expanded="${open}">${esc(t.id)}</a>` +
        `<button class="copy" type="button" data-copy="${esc(t.id)}" title="copy the task ID" aria-label="copy task ID ${esc(t.id)}">copy</button>` +
        `${t.key ? ` <span class="muted">key ${esc(t.key)}</span>` : ''}</td>
        <td><span class="badge ${STATE_CLASS[t.state] || ''}">${esc(t.state)}</span></td>
        <td class="r num">${fmt(t.attempts)}<span class="muted">/${fmt(t.max_retries + 1)}</span></td>
        <td class="err" title="${esc(t.error)}">${esc(trim(t.error, 60)) || '<span class="muted">–</span>'}</td>
        <td class="num">${fmtTime(t.enqueued_at)}</td>
        <td class="num">${fmtTime(S.listState === 'scheduled' ? t.due_at : t.finished_at)}</td>
        <td class="r"><div class="actions">
          ${canRequeue ? `<button class="btn" data-action="requeue" data-id="${esc(t.id)}"${dis}>Requeue</button>` : ''}
          ${!ended ? `<button class="btn danger" data-action="cancel" data-id="${esc(t.id)}"${dis}>Cancel</button>` : ''}
          ${ended ? `<button class="btn danger" data-action="delete" data-id="${esc(t.id)}"${dis}>Delete</button>` : ''}
        </div></td></tr>${open ? `<tr class="task-detail" data-detail="${esc(t.id)}"><td colspan="7">${taskDetail(S.open)}</td></tr>` : ''}`;
    }), `no ${S.listState} tasks`)));
}

function levelsChart(name) {
  const get = (s) => (h) => h.counts?.[name]?.[s];
  chart($('#ch-q-levels'), [
    { name: 'dead', colour: '#dc2626', points: levels(get('dead')) },
    { name: 'pending', colour: '#2563eb', points: levels(get('pending')) },
    { name: 'active', colour: '#059669', points: levels(get('active')) },
  ], { levels: true });
}

// A listing carries no payload, result or whole error: a task's detail
// (GET .../tasks/{id}) is fetched when its ID is clicked, once, and shown
// under its row until clicked again.
async function openTask(id) {
  const queue = S.route.name;
  if (S.open && S.open.queue === queue && S.open.id === id) {
    S.open = null;
    render();
    return;
  }
  S.open = { queue, id, info: null, error: '' };
  render();
  await loadOpen(S.open);
}

async function loadOpen(o) {
  try {
    o.info = await api(`v1/queues/${enc(o.queue)}/tasks/${enc(o.id)}`);
    o.error = '';
  } catch (e) {
    o.error = e.message;
  }
  if (S.open === o) render();
}

// taskDetail shows a task's payload, result, progress, whole error and
// headers; values over DETAIL_MAX characters are cut.
const DETAIL_MAX = 64 * 1024;
function taskDetail(o) {
  if (o.error) return `<div class="banner error">Cannot read task ${esc(o.id)}: ${esc(o.error)}</div>`;
  if (!o.info) return '<div class="empty">loading…</div>';
  const t = o.info;
  const json = (v) => {
    const s = JSON.stringify(v, null, 2);
    return s.length > DETAIL_MAX ? s.slice(0, DETAIL_MAX) + `\n… (${fmt(s.length)} characters)` : s;
  };
  const rows = [
    ['payload', t.payload !== undefined ? json(t.payload) : null],
    ['result', t.result !== undefined ? json(t.result) : null],
    ['progress', t.progress !== undefined ? json(t.progress) : null],
    ['error', t.error || null],
    ['headers', t.headers ? json(t.headers) : null],
    ['worker', t.worker || null],
    ['timeout', t.timeout], ['retention', t.retention],
  ].filter(([, v]) => v !== null && v !== undefined);
  return `<dl class="detail">${rows.map(([k, v]) => `<dt>${k}</dt><dd><pre data-field="${k}">${esc(v)}</pre></dd>`).join('')}</dl>`;
}

// copyText puts text on the clipboard and says so on the button; where the
// clipboard is not available (a page not on localhost nor HTTPS), it
// selects the ID's text for the user to copy.
async function copyText(b) {
  try {
    await navigator.clipboard.writeText(b.dataset.copy);
    b.textContent = 'copied';
  } catch (_) {
    const idEl = b.parentElement.querySelector('.task-id');
    const range = document.createRange();
    range.selectNodeContents(idEl);
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    b.textContent = 'selected';
  }
  setTimeout(() => { b.textContent = 'copy'; }, 1500);
}

async function onTaskAction(e) {
  const copy = e.target.closest('button[data-copy]');
  if (copy) return copyText(copy);
  const opener = e.target.closest('a[data-open]');
  if (opener) {
    e.preventDefault();
    return openTask(opener.dataset.open);
  }
  const bulk = e.target.closest('button[data-bulk]');
  if (bulk) return onBulkAction(bulk);
  const b = e.target.closest('button[data-action]');
  if (!b || b.disabled) return;
  const { action, id } = b.dataset;
  const path = `v1/queues/${enc(S.route.name)}/tasks/${enc(id)}`;
  await act(b, () => (action === 'delete' ? api(path, { method: 'DELETE' }) : api(`${path}/${action}`, { method: 'POST' })),
    `${{ requeue: 'Requeued', cancel: 'Cancelled', delete: 'Deleted' }[action]} task ${id}`, `${action} ${id}`);
}

// ---------- dead letters of a stream processor ----------

async function loadDead(key) {
  const [stream, proc] = key.split('/');
  const l = await api(`v1/streams/${enc(stream)}/processors/${enc(proc)}/dead?limit=${LIST_LIMIT}`).catch(() => null);
  if (l) S.dead[key] = l;
}

// renderDead shows processor proc's dead-letter count, and once its List
// button is clicked its dead letters with Replay and Purge buttons (all
// of them: the first click arms the button, a second one acts).
function renderDead(name, proc) {
  const el = $('#dead-list');
  if (!el) return;
  if (!proc) { setHTML(el, '<div class="empty">no processor</div>'); return; }
  const key = name + '/' + proc.processor;
  const dis = S.info?.read_only ? ' disabled title="read-only"' : '';
  const open = S.deadOpen === key;
  const head = `<div class="actions bulk"><span class="muted" id="dead-count">${fmt(proc.dead)} dead letter${proc.dead === 1 ? '' : 's'} of ${esc(proc.processor)}</span>
    <button class="btn" data-dead-action="list">${open ? 'Hide' : 'List'}</button>`;
  if (!open) { setHTML(el, head + '</div>'); return; }
  const page = S.dead[key];
  const letters = page?.letters;
  const armed = S.armed && S.armed.queue === key && S.armed.until > Date.now() ? S.armed.action : '';
  const bulkBtn = (action, label, cls) => `<button class="btn ${cls}" data-dead-bulk="${action}"${dis}>${armed === action ? `Click again to ${label.toLowerCase()}` : label}</button>`;
  const bulk = letters && letters.length ? bulkBtn('replay', 'Replay all', '') + bulkBtn('purge', 'Purge all', 'danger') : '';
  setHTML(el, head + bulk + '</div>' + (!letters ? '<div class="empty">loading…</div>' : table(
    [['Dead letter', ''], ['Entry', ''], ['Partition', 'r'], ['Key', ''], ['Died', ''], ['Attempts', 'r'], ['Error', ''], ['', 'r']],
    letters.map((d) => `<tr data-dead-id="${esc(d.id)}">
      <td class="mono">${esc(d.id)}</td><td class="mono muted">${esc(d.entry_id)}</td>
      <td class="r num">${fmt(d.partition)}</td><td>${esc(d.key)}</td>
      <td class="num">${fmtTime(d.time)}</td><td class="r num">${fmt(d.attempts)}</td>
      <td class="err" title="${esc(d.error)}">${esc(trim(d.error, 60)) || '<span class="muted">–</span>'}</td>
      <td class="r"><div class="actions">
        ${d.replayable ? `<button class="btn" data-dead-action="replay" data-id="${esc(d.id)}"${dis}>Replay</button>` : ''}
        <button class="btn danger" data-dead-action="purge" data-id="${esc(d.id)}"${dis}>Purge</button>
      </div></td></tr>`), 'no dead letters') + (page?.next ? `<div class="muted">${fmt(page.total)} in all; the oldest ${fmt(letters.length)} shown</div>` : '')));
}

async function onDeadAction(e) {
  const rep = S.reports[S.route.name];
  const proc = rep && (rep.processors.find((p) => p.processor === S.proc[S.route.name]) || rep.processors[0]);
  if (!proc) return;
  const key = S.route.name + '/' + proc.processor;
  const path = `v1/streams/${enc(S.route.name)}/processors/${enc(proc.processor)}/dead`;
  const bulk = e.target.closest('button[data-dead-bulk]');
  if (bulk) {
    if (bulk.disabled) return;
    const action = bulk.dataset.deadBulk;
    if (!(S.armed && S.armed.queue === key && S.armed.action === action && S.armed.until > Date.now())) {
      S.armed = { queue: key, action, until: Date.now() + 5000 };
      render();
      setTimeout(render, 5100);
      return;
    }
    S.armed = null;
    const call = action === 'purge'
      ? () => api(path, { method: 'DELETE', body: JSON.stringify({ all: true }) })
      : () => api(`${path}/replay`, { method: 'POST', body: JSON.stringify({ all: true }) });
    return act(bulk, call, (r) => `${action === 'purge' ? 'Purged' : 'Replayed'} ${fmt(r[action === 'purge' ? 'purged' : 'replayed'])} dead letters of ${key}`, `${action} dead letters of ${key}`);
  }
  const b = e.target.closest('button[data-dead-action]');
  if (!b || b.disabled) return;
  const { deadAction: action, id } = b.dataset;
  if (action === 'list') {
    S.deadOpen = S.deadOpen === key ? '' : key;
    if (S.deadOpen) await loadDead(key);
    render();
    return;
  }
  const body = JSON.stringify({ ids: [id] });
  await act(b, () => (action === 'purge' ? api(path, { method: 'DELETE', body }) : api(`${path}/replay`, { method: 'POST', body })),
    `${action === 'purge' ? 'Purged' : 'Replayed'} dead letter ${id}`, `${action} ${id}`);
}

async function onBulkAction(b) {
  if (b.disabled) return;
  const action = b.dataset.bulk, name = S.route.name;
  if (!(S.armed && S.armed.queue === name && S.armed.action === action && S.armed.until > Date.now())) {
    S.armed = { queue: name, action, until: Date.now() + 5000 };
    render();
    setTimeout(render, 5100); // disarmed: the label back
    return;
  }
  S.armed = null;
  const path = `v1/queues/${enc(name)}/dead`;
  if (action === 'delete') {
    await act(b, () => api(path, { method: 'DELETE' }), (r) => `Deleted ${fmt(r.deleted)} dead tasks of ${name}`, `${action} dead tasks of ${name}`);
  } else {
    await act(b, () => api(`${path}/requeue`, { method: 'POST' }), (r) => `Requeued ${fmt(r.requeued)} dead tasks of ${name}`, `${action} dead tasks of ${name}`);
  }
}

async function onQueueAction(e) {
  const b = e.target.closest('button[data-queue-action]');
  if (!b || b.disabled) return;
  const action = b.dataset.queueAction;
  await act(b, () => api(`v1/queues/${enc(S.route.name)}/${action}`, { method: 'POST' }),
    `${action === 'pause' ? 'Paused' : 'Resumed'} queue ${S.route.name}`, `${action} ${S.route.name}`);
}

// onRateSet sets the queue's rate limit live: N per WINDOW, or no limit
// with 0 (and no window).
async function onRateSet(e) {
  e.preventDefault();
  const name = S.route.name;
  const n = Number($('#q-rate-n').value);
  const win = $('#q-rate-window').value.trim();
  const body = n === 0 && !win ? { n: 0 } : { n, window: win };
  await act(null, () => api(`v1/queues/${enc(name)}/rate`, { method: 'PUT', body: JSON.stringify(body) }),
    n === 0 ? `Lifted the rate limit of ${name}` : `Rate of ${name}: ${n} per ${win}`, `rate of ${name}`);
}

// onRateClear removes the rate set live: the workers' own applies again.
async function onRateClear(e) {
  const b = e.target.closest('button[data-rate-clear]');
  if (!b || b.disabled) return;
  const name = S.route.name;
  await act(b, () => api(`v1/queues/${enc(name)}/rate`, { method: 'DELETE' }), `Rate of ${name}: back to the workers'`, `rate of ${name}`);
}

// act runs call, an API request, for button b (null: none), disabled
// meanwhile and usable again when the request failed, or once the next
// poll redrew it; a toast says ok (a text, or a function of the reply) or
// what failed and why; then it polls.
async function act(b, call, ok, failed) {
  if (b) b.disabled = true;
  try {
    const r = await call();
    redraw();
    toast(typeof ok === 'function' ? ok(r) : ok, 'ok');
  } catch (err) {
    toast(`${failed}: ${err.message}`, 'bad');
    if (b) b.disabled = false;
  }
  poll();
}

function toast(msg, kind) {
  const t = $('#toast');
  t.textContent = msg;
  t.className = 'toast ' + kind;
  t.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.hidden = true; }, 4000);
}

// ---------- charts ----------

// chart draws line series [{name, colour, points: [[t, v]]}] as SVG into el.
function chart(el, series, opts) {
  if (!el) return;
  const W = Math.max(240, el.clientWidth || 360), H = 170;
  const m = { l: 44, r: 10, t: 8, b: 22 };
  // The time axis spans the history collected so far: a minute at least,
  // ten at most.
  const now = S.hist.length ? S.hist[S.hist.length - 1].t : Date.now();
  const span = Math.min(HISTORY_MS, Math.max(60000, S.hist.length ? now - S.hist[0].t : 0));
  const t0 = now - span;
  const all = series.flatMap((s) => s.points.filter((p) => p[0] >= t0).map((p) => p[1]));
  let max = Math.max(0, ...all);
  const step = niceStep(max || 1);
  max = Math.max(step * 4, Math.ceil(max / step) * step);
  const x = (t) => m.l + ((t - t0) / span) * (W - m.l - m.r);
  const y = (v) => H - m.b - (v / max) * (H - m.t - m.b);
  let g = '';
  for (let v = 0; v <= max + 1e-9; v += step) {
    g += `<line x1="${m.l}" x2="${W - m.r}" y1="${y(v)}" y2="${y(v)}" class="grid"/>`;
    g += `<text x="${m.l - 6}" y="${y(v) + 3.5}" class="ylab">${fmtCompact(v)}</text>`;
  }
  const tick = [10e3, 15e3, 30e3, 60e3, 120e3, 300e3].find((d) => span / d <= 6) || 300e3;
  for (let back = 0; back <= span + 1; back += tick) {
    const label = back === 0 ? 'now' : back < 60e3 ? `−${back / 1e3}s` : `−${back / 60e3}m`;
    const anchor = back === 0 ? 'end' : back + tick > span + 1 ? 'start' : 'middle';
    g += `<line x1="${x(now - back)}" x2="${x(now - back)}" y1="${m.t}" y2="${H - m.b}" class="grid"/>`;
    g += `<text x="${x(now - back)}" y="${H - 6}" class="xlab" text-anchor="${anchor}">${label}</text>`;
  }
  let lines = '';
  for (const s of series) {
    const pts = s.points.filter((p) => p[0] >= t0);
    if (!pts.length) continue;
    const d = pts.map((p, i) => `${i ? 'L' : 'M'}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join('');
    if (series.length === 1) lines += `<path d="${d}L${x(pts[pts.length - 1][0]).toFixed(1)},${y(0)}L${x(pts[0][0]).toFixed(1)},${y(0)}Z" fill="${s.colour}" opacity="0.08"/>`;
    lines += `<path d="${d}" fill="none" stroke="${s.colour}" stroke-width="1.75" stroke-linejoin="round"/>`;
    const lp = pts[pts.length - 1];
    lines += `<circle cx="${x(lp[0])}" cy="${y(lp[1])}" r="2.5" fill="${s.colour}"/>`;
  }
  const enough = series.some((s) => s.points.length > 1);
  const leg = series.length ? `<div class="chart-legend">${series.map((s) => {
    const lp = s.points[s.points.length - 1];
    const v = !lp ? '–' : opts.levels ? fmt(lp[1]) : fmtRate(lp[1]);
    return `<span><span class="swatch" style="background:${s.colour}"></span>${esc(s.name)} <b class="num">${v}</b></span>`;
  }).join('')}</div>` : '';
  el.innerHTML = `${leg}<svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img">${g}
    <line x1="${m.l}" x2="${W - m.r}" y1="${y(0)}" y2="${y(0)}" class="axis"/>${lines}
    ${!enough ? `<text x="${(W + m.l) / 2}" y="${H / 2}" class="wait" text-anchor="middle">${series.length ? 'collecting samples…' : 'nothing to draw'}</text>` : ''}</svg>`;
}

function niceStep(max) {
  const raw = max / 4;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  const f = raw / p;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * p;
}

// ---------- start ----------

S.route = parseRoute();
window.addEventListener('resize', () => { if (S.overview) render(); });
start();
