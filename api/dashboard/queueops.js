// leat dashboard: a task queue's clean-up (drain, clean, obliterate) and
// its live events. Everything read from the API is written with
// textContent and attributes, never as markup. Loaded after app.js and
// flows.js, whose helpers (S, api, $, enc, fmt, h, replaceOnce, taskHref,
// redraw, poll, toast) it uses.
'use strict';

// The ended states a clean deletes.
const CLEAN_STATES = ['succeeded', 'failed', 'cancelled', 'dead'];
// The events kept on the page, newest first.
const EVENT_ROWS = 200;

// Q is the clean-up panel's and the events panel's state: the queue they
// are drawn for, the armed drain, the refusal that offers a forced
// obliterate, the last outcome; and the events followed.
const Q = { queue: '', armedUntil: 0, running: '', msg: null, ev: null };

// ---------- clean-up ----------

// renderQueueOps draws the clean-up panel of queue q once per queue (a
// poll never wipes what is being typed) and then updates its labels.
function renderQueueOps(name, q) {
  const el = $('#q-ops');
  if (!el) return;
  const ro = Boolean(S.info?.read_only);
  if (el.dataset.queue !== name || el.dataset.ro !== String(ro)) {
    el.dataset.queue = name;
    el.dataset.ro = String(ro);
    if (Q.queue !== name) Object.assign(Q, { queue: name, armedUntil: 0, running: '', msg: null });
    const title = ro ? 'read-only: the API refuses writes' : null;
    el.replaceChildren(
      h('div', { class: 'panel-head' }, h('h2', { text: 'Clean up' })),
      h('div', { class: 'ops' },
        h('div', { class: 'op' },
          h('button', { class: 'btn danger', type: 'button', id: 'q-drain', disabled: ro, title }),
          h('span', { class: 'muted', text: 'delete the tasks that wait: pending, scheduled, retrying' })),
        h('form', { class: 'op', id: 'q-clean' },
          h('select', { id: 'q-clean-state', 'aria-label': 'state of the tasks to delete', disabled: ro },
            CLEAN_STATES.map((s) => h('option', { value: s, text: s }))),
          h('span', { class: 'muted', text: 'ended at least' }),
          h('input', { id: 'q-clean-age', type: 'text', value: '1h', size: 6, 'aria-label': 'age, a duration such as 1h or 30m', disabled: ro }),
          h('span', { class: 'muted', text: 'ago' }),
          h('button', { class: 'btn', type: 'submit', id: 'q-clean-go', disabled: ro, title, text: 'Clean' })),
        h('form', { class: 'op', id: 'q-obl' },
          h('input', { id: 'q-obl-name', type: 'text', autocomplete: 'off', placeholder: 'type ' + name + ' to confirm',
            'aria-label': 'the queue\'s name, to confirm', disabled: ro }),
          h('button', { class: 'btn danger', type: 'submit', id: 'q-obl-go', disabled: true, title, text: 'Obliterate' }),
          h('span', { class: 'muted', text: 'delete the whole queue: tasks, settings, history' })),
        h('div', { class: 'op', id: 'q-obl-running', hidden: true },
          h('span', { class: 'bad-text', id: 'q-obl-running-text' }),
          h('button', { class: 'btn danger', type: 'button', id: 'q-obl-force', text: 'Obliterate anyway (force)' })),
        h('div', { id: 'q-ops-msg', class: 'op-msg', role: 'status' })));
    $('#q-drain').addEventListener('click', onDrain);
    $('#q-clean').addEventListener('submit', onClean);
    $('#q-obl').addEventListener('submit', (e) => { e.preventDefault(); obliterate(false); });
    $('#q-obl-name').addEventListener('input', updateQueueOps);
    $('#q-obl-force').addEventListener('click', () => obliterate(true));
  }
  Q.waiting = ['pending', 'scheduled', 'retrying'].reduce((a, s) => a + (q.counts[s] || 0), 0);
  updateQueueOps();
}

// updateQueueOps writes the panel's labels from Q.
function updateQueueOps() {
  const ro = Boolean(S.info?.read_only);
  const drain = $('#q-drain');
  if (!drain) return;
  const armed = Q.armedUntil > Date.now();
  const label = armed ? `Click again to drain ${fmt(Q.waiting)} waiting tasks` : 'Drain';
  if (drain.textContent !== label) drain.textContent = label;
  $('#q-obl-go').disabled = ro || $('#q-obl-name').value !== Q.queue;
  $('#q-obl-running').hidden = !Q.running;
  $('#q-obl-running-text').textContent = Q.running;
  const m = $('#q-ops-msg');
  m.textContent = Q.msg ? Q.msg.text : '';
  m.className = 'op-msg ' + (Q.msg ? Q.msg.kind + '-text' : '');
}

function say(kind, text) {
  Q.msg = { kind, text };
  updateQueueOps();
}

// opCall runs an API request of the clean-up panel for button b: the
// outcome (done(reply)) or the API's error message shows in the panel, then
// the counts are read again.
async function opCall(b, call, done, what) {
  b.disabled = true;
  try {
    say('ok', done(await call()));
  } catch (err) {
    if (err.code === 'queue_running') {
      Q.running = err.message;
      say('bad', `${what}: refused`);
    } else {
      say('bad', `${what}: ${err.message}`);
    }
  }
  b.disabled = Boolean(S.info?.read_only);
  redraw();
  await poll();
  updateQueueOps();
}

// onDrain drains the queue at the second click within 5 seconds.
async function onDrain(e) {
  const b = e.currentTarget, name = Q.queue;
  if (Q.armedUntil <= Date.now()) {
    Q.armedUntil = Date.now() + 5000;
    updateQueueOps();
    setTimeout(updateQueueOps, 5100);
    return;
  }
  Q.armedUntil = 0;
  await opCall(b, () => api(`v1/queues/${enc(name)}/drain`, { method: 'POST' }),
    (r) => `Drained ${name}: deleted ${fmt(r.deleted)} waiting tasks`, `drain ${name}`);
}

// onClean deletes the ended tasks of the chosen state and age.
async function onClean(e) {
  e.preventDefault();
  const name = Q.queue, state = $('#q-clean-state').value, age = $('#q-clean-age').value.trim();
  await opCall($('#q-clean-go'), () => api(`v1/queues/${enc(name)}/clean`, { method: 'POST', body: JSON.stringify({ state, older_than: age }) }),
    (r) => `Cleaned ${name}: deleted ${fmt(r.deleted)} ${state} tasks ended at least ${age || '0s'} ago`, `clean ${name}`);
}

// obliterate deletes the queue once its name was typed; force only from
// the button shown after the API answered that workers run it.
async function obliterate(force) {
  const name = Q.queue;
  if ($('#q-obl-name').value !== name) return;
  const b = force ? $('#q-obl-force') : $('#q-obl-go');
  b.disabled = true;
  try {
    const r = await api(`v1/queues/${enc(name)}${force ? '?force=true' : ''}`, { method: 'DELETE' });
    Q.running = '';
    say('ok', `Obliterated ${name}: deleted ${fmt(r.deleted_keys)} keys`);
    toast(`Obliterated queue ${name}`, 'ok');
    closeQueueEvents();
    location.hash = '#/';
    return;
  } catch (err) {
    if (err.code === 'queue_running') {
      Q.running = err.message; // shown beside the button that forces
      Q.msg = null;
    } else {
      say('bad', `obliterate ${name}: ${err.message}`);
    }
  }
  b.disabled = false;
  updateQueueOps();
  await poll();
}

// ---------- live events ----------

// renderQueueEvents draws the events panel of queue q: its events followed
// while they are on and the page is shown, else a button that turns them
// on.
function renderQueueEvents(name, q) {
  const el = $('#q-events');
  if (!el) return;
  const on = Boolean(q.events?.enabled), ro = Boolean(S.info?.read_only);
  replaceOnce(el, JSON.stringify([name, on, q.events?.max_len, ro]), () => [
    h('div', { class: 'panel-head' }, h('h2', { text: 'Live events' }),
      h('div', { class: 'actions' },
        on ? h('span', { class: 'muted', id: 'q-ev-status', text: 'connecting' }) : null,
        h('button', { class: 'btn', type: 'button', id: 'q-ev-toggle', disabled: ro, title: ro ? 'read-only: the API refuses writes' : null,
          'data-events': on ? 'off' : 'on', text: on ? 'Turn events off' : 'Turn events on' }))),
    on ? h('p', { class: 'muted ev-note', text: `Every state change of this queue's tasks as it happens; the queue keeps about ${fmt(q.events.max_len)}, this page shows the last ${EVENT_ROWS}.` })
      : h('div', { class: 'empty', id: 'q-ev-off', text: 'Events are off for this queue: its tasks\' state changes are not recorded. Turning them on costs a stream entry per change.' }),
    on ? h('div', { class: 'ev-wrap' }, h('table', { class: 'ev-tbl', id: 'q-ev-table' },
      h('thead', {}, h('tr', {}, ['Time', 'Task', 'State', 'From', 'Attempt', 'Error'].map((c) => h('th', { class: c === 'Attempt' ? 'r' : null, text: c })))),
      h('tbody', { id: 'q-ev-rows' }))) : null,
  ]);
  if (!el.leatBound) {
    el.leatBound = true;
    el.addEventListener('click', onEventsToggle);
  }
  if (on && !document.hidden) followQueueEvents(name);
  else closeQueueEvents();
  // A new table (the panel redrawn): the rows kept go back in.
  const body = $('#q-ev-rows');
  if (body && Q.ev && Q.ev.queue === name && body !== Q.ev.body) {
    Q.ev.body = body;
    body.append(...Q.ev.rows);
  }
  evStatus();
}

// onEventsToggle turns the queue's events on (with the default cap) or off.
async function onEventsToggle(e) {
  const b = e.target.closest('#q-ev-toggle');
  if (!b || b.disabled) return;
  const name = S.route.name, on = b.dataset.events === 'on';
  b.disabled = true;
  try {
    await api(`v1/queues/${enc(name)}/events`, { method: 'PUT', body: JSON.stringify({ enabled: on }) });
    toast(`Events of ${name} ${on ? 'on' : 'off'}`, 'ok');
  } catch (err) {
    toast(`events of ${name}: ${err.message}`, 'bad');
    b.disabled = false;
  }
  redraw();
  await poll();
}

// followQueueEvents follows queue name's events unless it does already:
// with an EventSource, or, when the API asks for a token (which an
// EventSource cannot send), by reading the stream with fetch. After a
// pause it resumes after the last event shown.
function followQueueEvents(name) {
  if (Q.ev && Q.ev.queue === name && Q.ev.open) return;
  if (Q.ev && Q.ev.queue !== name) closeQueueEvents();
  if (!Q.ev || Q.ev.queue !== name) Q.ev = { queue: name, rows: [], last: '', body: null };
  const ev = Q.ev;
  ev.open = true;
  ev.state = 'connecting';
  const url = `v1/queues/${enc(name)}/events` + (ev.last ? '?since=' + enc(ev.last) : '');
  if (!S.token) {
    const src = new EventSource(url);
    ev.close = () => src.close();
    src.onopen = () => { ev.state = 'live'; evStatus(); };
    src.onerror = () => { ev.state = src.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting'; evStatus(); };
    src.addEventListener('task', (m) => addEvent(ev, m.data));
    src.addEventListener('error', (m) => { if (m.data) { ev.state = 'failed: ' + errorText(m.data); src.close(); evStatus(); } });
  } else {
    const ctl = new AbortController();
    ev.close = () => ctl.abort();
    readEvents(ev, url, ctl.signal).catch((err) => {
      if (ctl.signal.aborted) return;
      ev.state = 'closed: ' + err.message;
      ev.open = false;
      evStatus();
    });
  }
  evStatus();
}

// readEvents reads server-sent events with fetch, sending the token.
async function readEvents(ev, url, signal) {
  const res = await fetch(url, { headers: { Accept: 'text/event-stream', Authorization: 'Bearer ' + S.token }, cache: 'no-store', signal });
  if (!res.ok) throw new Error(`${res.status} ${res.statusText}`);
  ev.state = 'live';
  evStatus();
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error('the server ended the stream');
    buf += value;
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      let kind = '', data = '';
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) kind = line.slice(7);
        else if (line.startsWith('data: ')) data += line.slice(6);
      }
      if (kind === 'task') addEvent(ev, data);
      else if (kind === 'error') throw new Error(errorText(data));
    }
  }
}

function errorText(data) {
  try { return JSON.parse(data).error || data; } catch (_) { return data; }
}

// addEvent puts an event's row first, keeping the last EVENT_ROWS.
function addEvent(ev, data) {
  let e;
  try { e = JSON.parse(data); } catch (_) { return; }
  ev.last = e.id || ev.last;
  const t = new Date(e.time);
  const tr = h('tr', { 'data-event': e.id, 'data-task': e.task, 'data-state': e.state },
    h('td', { class: 'num', title: e.time, text: isNaN(t) ? '' : t.toLocaleTimeString('en-GB', { hour12: false }) + '.' + String(t.getMilliseconds()).padStart(3, '0') }),
    h('td', { class: 'mono' }, h('a', { href: taskHref(ev.queue, e.task), class: 'task-id', text: e.task })),
    h('td', {}, h('span', { class: 'badge ' + (STATE_CLASS[e.state] || ''), text: e.state })),
    h('td', { class: 'muted', text: e.prev || 'new' }),
    h('td', { class: 'r num', text: String(e.attempt ?? 0) }),
    h('td', { class: 'err', title: e.error || '', text: trim(e.error, 60) }));
  ev.rows.unshift(tr);
  if (ev.rows.length > EVENT_ROWS) ev.rows.length = EVENT_ROWS;
  if (ev.body) {
    ev.body.prepend(tr);
    while (ev.body.childElementCount > EVENT_ROWS) ev.body.lastElementChild.remove();
  }
  evStatus();
}

// evStatus writes the state of the following and the number of rows.
function evStatus() {
  const el = $('#q-ev-status');
  if (!el || !Q.ev) return;
  const text = Q.ev.state + ' · ' + fmt(Q.ev.rows.length) + (Q.ev.rows.length === 1 ? ' event' : ' events');
  if (el.textContent !== text) el.textContent = text;
  el.dataset.state = Q.ev.state;
}

// closeQueueEvents stops following (the view left, the page hidden, the
// events turned off); the rows stay for a return to the same queue.
function closeQueueEvents() {
  if (Q.ev && Q.ev.open) {
    Q.ev.close();
    Q.ev.open = false;
    Q.ev.state = 'paused';
    evStatus();
  }
}

document.addEventListener('visibilitychange', () => { if (document.hidden) closeQueueEvents(); });
