// The imd operator console. Every number and action comes from the admin API (/admin/v1),
// called with the session cookie and, on every non-GET call, the session's CSRF token.
// Pages are built with DOM calls and text nodes only: no data is ever parsed as markup.
'use strict';

(() => {
  const $ = (id) => document.getElementById(id);
  const REFRESH_MS = 3000;
  let csrf = '';
  let tenant = '';
  let refresh = null; // the current page's live-number reader
  let timer = 0;

  class APIError extends Error {
    constructor(status, code, msg) {
      super(msg);
      this.status = status;
      this.code = code;
    }
  }

  // call sends one request and returns the decoded JSON answer, or throws APIError with the
  // API's code and message.
  async function call(method, path, body) {
    const opts = { method, headers: {}, credentials: 'same-origin', cache: 'no-store' };
    if (method !== 'GET') opts.headers['X-CSRF-Token'] = csrf;
    if (body !== undefined) {
      opts.headers['Content-Type'] = 'application/json';
      opts.body = JSON.stringify(body);
    }
    const resp = await fetch(path, opts);
    const text = await resp.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (_) { data = null; }
    if (!resp.ok) {
      const err = new APIError(resp.status, data && data.code ? data.code : resp.status,
        data && data.msg ? data.msg : text || resp.statusText);
      if (resp.status === 401 && path.startsWith('/admin/')) signedOut();
      throw err;
    }
    return data;
  }

  const seg = encodeURIComponent;
  const admin = (method, path, body) => call(method, '/admin/v1/tenants/' + seg(tenant) + path, body);

  // el builds an element; string children become text nodes, never markup.
  function el(tag, props, ...kids) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') n.className = v;
      else if (k.startsWith('on')) n.addEventListener(k.slice(2), v);
      else n.setAttribute(k, v === true ? '' : v);
    }
    for (const kid of kids.flat()) {
      if (kid !== undefined && kid !== null) n.append(kid instanceof Node ? kid : String(kid));
    }
    return n;
  }

  const fmtTime = (ms) => (ms ? new Date(ms).toISOString().replace('.000Z', 'Z') : '—');
  const fmtNum = (n) => (typeof n === 'number' ? n.toLocaleString('en-US') : '—');
  const fmtDuration = (s) => {
    if (!(s > 0)) return '—';
    const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
    if (d) return d + 'd ' + h + 'h';
    return (h ? h + 'h ' : '') + (h || m ? m + 'm ' : '') + Math.floor(s % 60) + 's';
  };

  function setResult(node, kind, text) {
    node.className = 'result' + (kind ? ' ' + kind : '');
    node.textContent = text;
  }
  function showError(node, err) {
    const code = err instanceof APIError ? err.code : 'error';
    setResult(node, 'error', code + ' ' + (err.message || String(err)));
  }

  // table fills a table with a header row and rows of cells (text or nodes).
  function fillTable(table, head, rows, empty) {
    table.replaceChildren(
      el('thead', {}, el('tr', {}, head.map((h) => el('th', {}, h)))),
      el('tbody', {}, rows.length
        ? rows.map((r) => el('tr', {}, r.map((c) => el('td', { class: typeof c === 'number' ? 'num' : null },
          typeof c === 'number' ? fmtNum(c) : c))))
        : el('tr', {}, el('td', { colspan: head.length, class: 'note' }, empty || 'none'))),
    );
  }

  // confirmIn asks inside the page (a test can click it; window.confirm would block it).
  function confirmIn(node, question) {
    return new Promise((resolve) => {
      const done = (yes) => { box.remove(); resolve(yes); };
      const box = el('span', { class: 'confirm', role: 'alertdialog' }, question + ' ',
        el('button', { type: 'button', class: 'confirm-yes', onclick: () => done(true) }, 'Confirm'), ' ',
        el('button', { type: 'button', class: 'confirm-no', onclick: () => done(false) }, 'Cancel'));
      setResult(node, '', '');
      node.append(box);
    });
  }

  // form builds a form whose submit runs action(values, result) and shows its answer or the
  // API's error code and message in the form's result line.
  function form(id, fields, submitLabel, action) {
    const result = el('p', { class: 'result', id: id + '-result', role: 'status' });
    const inputs = {};
    const f = el('form', { id, novalidate: true },
      fields.map((fd) => el('label', {}, fd.label,
        inputs[fd.name] = el('input', {
          id: id + '-' + fd.name, name: fd.name, type: fd.type || 'text', placeholder: fd.placeholder,
          value: fd.value, size: fd.size || 16,
        }))),
      el('button', { type: 'submit', id: id + '-submit' }, submitLabel));
    f.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const values = {};
      for (const fd of fields) {
        values[fd.name] = inputs[fd.name].value.trim();
        if (fd.required && values[fd.name] === '') {
          setResult(result, 'error', fd.label + ' is required');
          return;
        }
      }
      setResult(result, '', 'working…');
      try {
        const text = await action(values, result);
        if (text !== undefined) setResult(result, 'ok', text);
      } catch (err) {
        showError(result, err);
      }
    });
    return el('div', {}, f, result);
  }

  // button runs action and reports into result.
  function button(id, label, result, action) {
    return el('button', {
      type: 'button', id, onclick: async () => {
        setResult(result, '', 'working…');
        try {
          const text = await action();
          if (text !== undefined) setResult(result, 'ok', text);
        } catch (err) {
          showError(result, err);
        }
      },
    }, label);
  }

  // metrics reads the Prometheus exposition of /metrics and keeps this tenant's samples of
  // the named families.
  async function metrics(names) {
    const resp = await fetch('/metrics', { credentials: 'same-origin', cache: 'no-store' });
    if (!resp.ok) throw new APIError(resp.status, resp.status, 'metrics unavailable');
    const out = [];
    for (const line of (await resp.text()).split('\n')) {
      if (!line || line[0] === '#') continue;
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
      if (!m || !names.some((n) => m[1].endsWith(n))) continue;
      const labels = m[2] || '';
      if (labels.includes('tenant=') && !labels.includes('tenant="' + tenant + '"')) continue;
      out.push([m[1], labels.slice(1, -1), Number(m[3])]);
    }
    return out;
  }

  // ------------------------------------------------------------------ pages

  function pageTenants(root) {
    const table = el('table', { id: 'tenants-table' });
    root.append(el('h2', {}, 'Tenants'), table,
      el('h3', {}, 'Provision a tenant'),
      form('provision', [
        { name: 'tenant', label: 'Tenant', required: true, placeholder: 'acme' },
        { name: 'database', label: 'Database (optional)', placeholder: 'imd_acme' },
      ], 'Provision', async (v) => {
        const t = await call('POST', '/admin/v1/tenants', { tenant: v.tenant, database: v.database || undefined });
        await loadTenants();
        return 'tenant ' + t.tenant + ' served (database ' + t.database + ')';
      }));
    return async () => {
      const { tenants } = await call('GET', '/admin/v1/tenants');
      fillTable(table, ['Tenant', 'Database', 'Source', 'Created'],
        tenants.map((t) => [t.tenant, t.database, t.source, fmtTime(t.created_at)]));
    };
  }

  // monthEnd is the first instant after month YYYYMM (UTC).
  const monthEnd = (m) => Date.UTC(Number(m.slice(0, 4)), Number(m.slice(4, 6)), 1);
  const nextMonth = (m) => new Date(monthEnd(m)).toISOString().slice(0, 7).replace('-', '');

  function pageShards(root) {
    const table = el('table', { id: 'shards-table' });
    const active = el('p', { id: 'active-month' });
    let latest = '';
    root.append(el('h2', {}, 'Month shards of ', tenant), active, table,
      el('p', { class: 'note' }, 'Seq ranges are per topic: see Routes (rebuild a topic to read its segments).'),
      el('h3', {}, 'Advance the active month'),
      form('advance', [{ name: 'month', label: 'Month (YYYYMM)', required: true, placeholder: 'next month' }],
        'Advance', async (v, result) => {
          if (!await confirmIn(result, 'Make ' + v.month + ' the active month of ' + tenant + '?')) return 'cancelled';
          const r = await admin('POST', '/shards/advance', { month: v.month });
          await refreshNow();
          return 'active month is now ' + r.active_month;
        }));
    return async () => {
      const { shards } = await admin('GET', '/shards');
      const now = Date.now();
      const writable = shards.filter((s) => s.status === 'writable').map((s) => s.shard_month).sort();
      latest = writable.length ? writable[writable.length - 1] : '';
      active.textContent = 'Writable month: ' + (latest || 'none') + (latest ? ' (next: ' + nextMonth(latest) + ')' : '');
      fillTable(table, ['Month', 'Table', 'Status', 'Rows', 'First message', 'Last message', 'Updated', 'Late writes until', 'Seals in'],
        shards.map((s) => {
          const left = (s.seals_at - now) / 1000;
          return [s.shard_month, s.table_name, s.status, s.row_count, fmtTime(s.min_created_at),
            fmtTime(s.max_created_at), fmtTime(s.updated_at), fmtTime(s.seals_at),
            !s.seals_at ? '—' : left > 0 ? fmtDuration(left) : 'due (waits for its backlog)'];
        }));
    };
  }

  function pageRoutes(root) {
    const segments = el('table', { id: 'route-segments' });
    const late = el('table', { id: 'compensation-table' });
    const lateTotal = el('p', {});
    const counters = el('table', { id: 'route-metrics' });
    const backlog = el('p', { id: 'repair-backlog' });
    const waiting = el('ul', { id: 'repair-topics' });
    const tenantResult = el('p', { class: 'result', id: 'rebuild-tenant-result', role: 'status' });
    const drainResult = el('p', { class: 'result', id: 'repair-drain-result', role: 'status' });
    root.append(el('h2', {}, 'Routes'),
      el('h3', {}, 'Rebuild a topic\u2019s route'),
      form('rebuild-topic', [{ name: 'topic', label: 'Topic', required: true, placeholder: 'grp_1', size: 24 }],
        'Rebuild', async (v) => {
          const r = await admin('POST', '/topics/' + seg(v.topic) + '/route/rebuild');
          fillTable(segments, ['Month', 'Min seq', 'Max seq', 'Count'],
            r.segments.map((s) => [s.month, s.min_seq, s.max_seq, s.count]), 'no messages');
          return 'route of ' + r.topic + ' rebuilt: ' + r.segments.length + ' month segment(s)';
        }),
      segments,
      el('h3', {}, 'Rebuild every route of the tenant'),
      button('rebuild-tenant', 'Rebuild all routes', tenantResult, async () => {
        if (!await confirmIn(tenantResult, 'Rewrite every route of ' + tenant + ' from the MySQL mirror?')) return 'cancelled';
        const r = await admin('POST', '/routes/rebuild');
        return r.topics + ' topic route(s) rebuilt';
      }), tenantResult,
      el('h3', {}, 'Repair backlog'), backlog, waiting,
      button('repair-drain', 'Repair now', drainResult, async () => {
        const r = await admin('POST', '/routes/repair/drain');
        await refreshNow();
        return r.repaired + ' route(s) repaired';
      }), drainResult,
      el('h3', {}, 'Misses and repairs (counters)'), counters,
      el('h3', {}, 'Late writes refused by sealed months'), lateTotal, late);
    return async () => {
      const b = await admin('GET', '/routes/repair?limit=20');
      backlog.textContent = b.queued + ' queued, ' + b.in_process + ' kept in process';
      waiting.replaceChildren(...b.topics.map((name) => el('li', {}, name)));
      const c = await admin('GET', '/compensation?limit=50');
      lateTotal.textContent = c.total + ' waiting';
      fillTable(late, ['Month', 'Topic', 'Seq', 'Reason', 'At'],
        c.entries.map((e) => [e.shard_month, e.message.topic, e.message.seq, e.reason, fmtTime(e.at)]));
      await metricsTable(counters, ['route_repair_backlog', 'route_miss_total', 'route_repair_total', 'compensation_backlog', 'shard_missing_total']);
    };
  }

  // metricsTable fills table with this tenant's samples of the named families, or says why
  // there are none (behind Nginx, /metrics answers only on loopback).
  async function metricsTable(table, names) {
    try {
      fillTable(table, ['Metric', 'Labels', 'Value'], await metrics(names), 'no samples yet');
    } catch (err) {
      fillTable(table, ['Metric', 'Labels', 'Value'], [], '/metrics is not reachable from here (' + err.message + ')');
    }
  }

  function pageDelivery(root) {
    const parts = el('table', { id: 'delivery-table' });
    const dead = el('p', { id: 'delivery-dead' });
    const counters = el('table', { id: 'delivery-metrics' });
    const nodes = el('table', { id: 'nodes-table' });
    const unheld = el('p', { id: 'nodes-unheld' });
    root.append(el('h2', {}, 'Delivery'), parts, dead,
      form('requeue', [{ name: 'max', label: 'Dead letters to requeue (1-10000)', value: '100', size: 6 }],
        'Requeue dead letters', async (v, result) => {
          const max = Number(v.max);
          if (!await confirmIn(result, 'Put up to ' + v.max + ' dead letters back on their queues?')) return 'cancelled';
          const r = await admin('POST', '/delivery/dead/requeue', { max: Number.isInteger(max) ? max : v.max });
          await refreshNow();
          return r.requeued + ' dead letter(s) requeued';
        }),
      el('h3', {}, 'Counters'), counters,
      el('h2', {}, 'Nodes and presence'), nodes, unheld);
    return async () => {
      const d = await admin('GET', '/delivery');
      fillTable(parts, ['Partition', 'Queued', 'Processing', 'Next job queued', 'Lag'],
        d.partitions.map((p) => [p.partition, p.queued, p.processing, fmtTime(p.oldest_queued_at), p.lag_ms ? fmtDuration(p.lag_ms / 1000) : '—']));
      dead.textContent = 'Dead letters: ' + fmtNum(d.dead);
      await metricsTable(counters, ['deliver_delay_seconds_sum', 'deliver_delay_seconds_count', 'dead_letter_total', 'deliver_job_latency_count']);
      const n = await admin('GET', '/nodes');
      fillTable(nodes, ['Instance', 'node_id', 'Lease ends', 'Lease left', 'Devices', 'Push backlog', 'Deliver partitions'],
        n.nodes.map((x) => [x.name, x.node_id, fmtTime(x.lease_until), fmtDuration(x.lease_left_ms / 1000), x.devices, x.push_backlog,
          x.partitions.length ? x.partitions.join(', ') : 'none']), 'no live node');
      unheld.textContent = 'Partitions no live node holds: ' + (n.unheld_partitions.length ? n.unheld_partitions.join(', ') : 'none');
    };
  }

  // pageMedia shows what the node did with confirmed image uploads (issue 32): thumbnails made
  // and failed, images refused by reason, and the time making them took.
  function pageMedia(root) {
    const counters = el('table', { id: 'media-metrics' });
    root.append(el('h2', {}, 'Media'),
      el('p', {}, 'Thumbnails of confirmed image uploads on this node: made or failed (the store, or no decode worker in time), ' +
        'refused by reason (type: not the image its key says; size: over uploads.thumbnails.max_bytes; ' +
        'pixels: over max_pixels, a decompression bomb; corrupt: undecodable), and the seconds they took. ' +
        'More failed than made fires ImdThumbnailsFailing.'),
      el('h3', {}, 'Thumbnails'), counters);
    return async () => {
      await metricsTable(counters, ['media_thumbnail_total', 'media_thumbnail_refused_total', 'media_thumbnail_seconds_sum', 'media_thumbnail_seconds_count']);
    };
  }

  // pageWebhooks shows the tenant's event webhook endpoints (issue 32), adds one (its signing
  // secret shown this once: the admin API never returns it again), lists an endpoint's dead
  // letters and the node's delivery counters, and the tenant's bots (a bot's token, too, is
  // shown once, when it is made; a delete revokes its tokens).
  function pageWebhooks(root) {
    const list = el('table', { id: 'webhooks-table' });
    const bots = el('table', { id: 'bots-table' });
    const dead = el('table', { id: 'webhook-dead-table' });
    const counters = el('table', { id: 'webhooks-metrics' });
    root.append(el('h2', {}, 'Webhooks'), list,
      form('webhook-add', [
        { name: 'url', label: 'URL (http or https)', required: true, size: 40 },
        { name: 'events', label: 'Events, comma-separated', value: 'message.created', size: 40 },
        { name: 'bot_id', label: 'Bound to bot (id, optional)', size: 12 },
      ], 'Add endpoint', async (v) => {
        const body = { url: v.url, events: v.events.split(',').map((s) => s.trim()).filter(Boolean) };
        if (v.bot_id) body.bot_id = Number(v.bot_id);
        const w = await admin('POST', '/webhooks', body);
        await refreshNow();
        return 'endpoint ' + w.webhook_id + ' added; its signing secret, shown this once: ' + w.secret;
      }),
      el('h3', {}, 'Dead letters'),
      el('p', {}, 'Events an endpoint refused to the last attempt (webhooks.max_attempts); their topic moved on. ' +
        'A dead letter fires ImdWebhookDeadLetters.'),
      form('webhook-dead', [{ name: 'webhook_id', label: 'Endpoint id', required: true, size: 20 }], 'Show', async (v) => {
        const d = await admin('GET', '/webhooks/' + seg(v.webhook_id) + '/dead_letters');
        fillTable(dead, ['Topic', 'Seq', 'Event', 'Attempts', 'Last error', 'Given up'],
          d.dead_letters.map((x) => [x.topic, x.seq, x.type, x.attempts, x.last_error, fmtTime(x.at)]), 'none');
        return d.dead_letters.length + ' dead letter(s)';
      }), dead,
      el('h3', {}, 'Replay'),
      el('p', {}, 'Delivers an endpoint\'s events again from a point on, each conversation in order; receivers see the same event ids.'),
      form('webhook-replay', [
        { name: 'webhook_id', label: 'Endpoint id', required: true, size: 20 },
        { name: 'since', label: 'From (UTC, 2026-01-31T12:00:00Z)', required: true, size: 24 },
      ], 'Replay', async (v, result) => {
        const since = Date.parse(v.since);
        if (Number.isNaN(since)) throw new Error('From is not a date and time');
        if (!await confirmIn(result, 'Deliver endpoint ' + v.webhook_id + '\'s events since ' + v.since + ' again?')) return 'cancelled';
        await admin('POST', '/webhooks/' + seg(v.webhook_id) + '/replay', { since });
        return 'replaying from ' + new Date(since).toISOString();
      }),
      el('h3', {}, 'Bots'),
      el('p', {}, 'Users driven by a program: they send and read through the HTTP API with their own token and receive through an endpoint bound to them.'),
      bots,
      form('bot-add', [
        { name: 'bot_id', label: 'Bot (user) id', required: true, size: 12 },
        { name: 'name', label: 'Name', required: true, size: 24 },
      ], 'Add bot', async (v) => {
        const b = await admin('POST', '/bots', { bot_id: Number(v.bot_id), name: v.name });
        await refreshNow();
        return 'bot ' + b.bot_id + ' added; its token, shown this once: ' + b.token;
      }),
      form('bot-delete', [{ name: 'bot_id', label: 'Bot id', required: true, size: 12 }], 'Delete bot', async (v, result) => {
        if (!await confirmIn(result, 'Delete bot ' + v.bot_id + '? Its tokens stop working and its connections close; its user stays.')) return 'cancelled';
        await admin('DELETE', '/bots/' + seg(v.bot_id));
        await refreshNow();
        return 'bot ' + v.bot_id + ' deleted';
      }),
      el('h3', {}, 'Counters'), counters);
    return async () => {
      const w = await admin('GET', '/webhooks');
      fillTable(list, ['Id', 'URL', 'Events', 'Enabled', 'Bot', 'Description', 'Created'],
        w.webhooks.map((x) => [String(x.webhook_id), x.url, x.events.join(', '), x.enabled ? 'yes' : 'no', x.bot_id ? String(x.bot_id) : '',
          x.description, fmtTime(x.created_at)]), 'no endpoint');
      const b = await admin('GET', '/bots');
      fillTable(bots, ['Id', 'Name', 'Created'], b.bots.map((x) => [String(x.bot_id), x.name, fmtTime(x.created_at)]), 'no bot');
      await metricsTable(counters, ['webhook_deliveries_total', 'webhook_oldest_undelivered_seconds']);
    };
  }

  // pagePush shows native push (issue 32): the node's alert counters by provider and result,
  // and the tenant's newest dead letters of each provider.
  function pagePush(root) {
    const dead = el('table', { id: 'push-dead-table' });
    const counters = el('table', { id: 'push-metrics' });
    root.append(el('h2', {}, 'Push'),
      el('p', {}, 'Alerts sent to APNs and FCM for users no device took a message from live: ok, invalid (the token is ' +
        'no more and was removed), retry (429, 5xx, no answer), dead (given up after push.attempts; fires ' +
        'ImdPushDeadLetters), dropped (queue full). More retried, dropped or dead than sent fires ImdPushFailing.'),
      el('h3', {}, 'Counters'), counters,
      el('h3', {}, 'Dead letters'), dead);
    return async () => {
      await metricsTable(counters, ['push_send_total']);
      const rows = [];
      for (const provider of ['apns', 'fcm']) {
        const d = await admin('GET', '/push/dead_letters?provider=' + provider + '&limit=20');
        for (const x of d.dead_letters) rows.push([x.provider, String(x.user_id), x.device_id, String(x.msg_id), x.attempts, x.last_error, fmtTime(x.at)]);
      }
      fillTable(dead, ['Provider', 'User', 'Device', 'Message', 'Attempts', 'Last error', 'Given up'], rows, 'none');
    };
  }

  // The steps of seed 000 §9 and when this job has done each.
  const migrationSteps = [
    ['Route tables, idempotency table and shard manager online', () => true],
    ['Month tables created for the history, this month and the next two', (j) => j.prepared],
    ['Dual read of legacy table and month tables deployed', (j) => j.phase !== 'none'],
    ['Cutover recorded', (j) => j.cutover_at > 0],
    ['New messages written to month tables only', (j) => j.cutover_at > 0],
    ['Legacy rows copied by created_at in batches', (j) => j.copy_done],
    ['Every batch INSERT IGNORE; topic+seq, counts and content hashes verified', (j) => j.phase === 'verified' || j.phase === 'finished'],
    ['Route mirror backfilled, Redis routes rebuilt', (j) => j.copy_done],
    ['Dual read deduplicated by topic+seq', (j) => j.phase !== 'none'],
    ['Legacy reads stopped after full verification', (j) => j.phase === 'finished'],
    ['Legacy table kept read-only', (j) => j.phase === 'finished'],
    ['Cleanup after a full retention period (separate approval)', () => false],
  ];

  function pageMigration(root) {
    const phase = el('p', { id: 'migration-phase' });
    const overall = el('progress', { id: 'migration-progress', max: 1, value: 0 });
    const speed = el('span', { id: 'migration-speed' });
    const steps = el('ol', { class: 'steps', id: 'migration-steps' });
    const months = el('table', { id: 'migration-months' });
    const plan = el('table', { id: 'migration-plan' });
    const result = el('p', { class: 'result', id: 'migration-result', role: 'status' });
    const cmd = (name, label, ask) => button('migration-' + name, label, result, async () => {
      if (ask && !await confirmIn(result, ask)) return 'cancelled';
      const j = await admin('POST', '/migration/' + name);
      await refreshNow();
      return name + ': phase ' + j.phase;
    });
    root.append(el('h2', {}, 'Legacy migration (seed 000 §9)'), phase,
      el('p', {}, overall, ' ', speed),
      el('div', {},
        button('migration-plan-button', 'Plan', result, async () => {
          const p = await admin('GET', '/migration/plan');
          fillTable(plan, ['Month', 'Rows', 'Topics', 'First', 'Last', 'Table'],
            p.months.map((m) => [m.month, m.rows, m.topics, fmtTime(m.min_created_at), fmtTime(m.max_created_at), m.table_state || 'none']),
            p.present ? 'no rows' : 'no legacy table');
          return (p.present ? p.rows + ' legacy rows in ' + p.topics + ' topics' : 'no legacy table')
            + (p.warnings.length ? '; warnings: ' + p.warnings.join('; ') : '');
        }), ' ',
        cmd('start', 'Start'), ' ', cmd('pause', 'Pause'), ' ', cmd('resume', 'Resume'), ' ',
        cmd('verify', 'Verify'), ' ',
        cmd('finish', 'Finish', 'Finish the migration and stop reading the legacy table?')),
      result, el('h3', {}, 'Steps'), steps, el('h3', {}, 'Months'), months, el('h3', {}, 'Plan'), plan);
    return async () => {
      const st = await admin('GET', '/migration/status');
      const j = st.job;
      phase.textContent = 'Phase: ' + j.phase + (j.error ? ' — error: ' + j.error : '')
        + (j.cutover_at ? ' · cutover ' + fmtTime(j.cutover_at) : '');
      phase.dataset.phase = j.phase;
      overall.max = Math.max(j.rows, 1);
      overall.value = j.copied + j.skipped;
      speed.textContent = fmtNum(j.copied + j.skipped) + ' / ' + fmtNum(j.rows) + ' rows · '
        + fmtNum(Math.round(st.rows_per_second)) + ' rows/s · ETA ' + fmtDuration(st.eta_seconds)
        + ' · failed ' + fmtNum(j.failed) + ' · batches ' + fmtNum(j.batches);
      const next = migrationSteps.findIndex(([, done]) => !done(j));
      steps.replaceChildren(...migrationSteps.map(([text, done], i) => {
        const d = done(j);
        return el('li', { class: d ? 'done' : i === next ? 'current' : null }, (d ? '✓ ' : '') + text);
      }));
      fillTable(months, ['Month', 'Progress', 'Done', 'Rows', 'Failed', 'Verified', 'Verified at'],
        st.months.map((m) => [m.month, el('progress', { max: Math.max(m.rows, 1), value: m.done }), m.done, m.rows,
          m.failed, m.verified || '—', fmtTime(m.verified_at)]));
    };
  }

  // runJob polls an archive job until it ends, reporting its progress. The archive route
  // answers {status: "running", job_id}, the other month operations a job ({state, …}).
  async function runJob(result, label, first) {
    let j = first;
    if (j && j.job_id && j.status === 'running') j = { job_id: j.job_id, state: 'running', progress: {} };
    while (j && j.job_id && j.state === 'running') {
      setResult(result, '', label + ': running ' + JSON.stringify(j.progress));
      await new Promise((r) => setTimeout(r, 1000));
      j = await admin('GET', '/jobs/' + seg(j.job_id));
    }
    if (j && j.state === 'failed') throw new APIError(0, j.error.code, j.error.msg);
    return label + ': ' + (j && j.state ? j.state : 'done') + (j && j.result ? ' ' + JSON.stringify(j.result) : '');
  }

  function pageArchive(root) {
    const shards = el('table', { id: 'archive-table' });
    const policy = el('p', {});
    const steps = el('table', { id: 'retention-table' });
    const result = el('p', { class: 'result', id: 'archive-result', role: 'status' });
    const manifest = el('pre', { id: 'archive-manifest' });
    root.append(el('h2', {}, 'Archive and retention'), result, shards, manifest,
      el('h3', {}, 'Retention plan'), policy, steps);
    const act = (m, op, path, ask) => button('archive-' + op + '-' + m, op, result, async () => {
      if (ask && !await confirmIn(result, ask)) return 'cancelled';
      return runJob(result, op + ' ' + m, await admin('POST', '/shards/' + seg(m) + path + '?wait=0s'));
    });
    return async () => {
      const { shards: list } = await admin('GET', '/shards');
      fillTable(shards, ['Month', 'Status', 'Rows', 'Actions'], list.map((s) => [s.shard_month, s.status, s.row_count,
        el('span', {},
          act(s.shard_month, 'archive', '/archive', 'Archive ' + s.shard_month + '?'), ' ',
          act(s.shard_month, 'check', '/archive/check'), ' ',
          act(s.shard_month, 'restore', '/restore', 'Restore ' + s.shard_month + ' from its archive?'), ' ',
          button('archive-manifest-' + s.shard_month, 'manifest', result, async () => {
            manifest.textContent = JSON.stringify(await admin('GET', '/shards/' + seg(s.shard_month) + '/archive'), null, 2);
            return 'manifest of ' + s.shard_month;
          }))]));
      try {
        const p = await admin('GET', '/retention');
        policy.textContent = 'Policy ' + JSON.stringify(p.policy) + ' · active month ' + p.active_month;
        fillTable(steps, ['Month', 'State', 'Age (months)', 'Action'], p.steps.map((s) => [s.month, s.state, s.age, s.action]),
          'nothing to do');
      } catch (err) {
        showError(policy, err);
      }
    };
  }

  function messageTable(table, msgs) {
    fillTable(table, ['Topic', 'Seq', 'From', 'Type', 'Status', 'Created', 'Content'],
      msgs.map((m) => [m.topic, m.seq, m.from, m.type, m.status, fmtTime(m.created_at), JSON.stringify(m.content)]),
      'no messages');
  }

  function pageMessages(root) {
    const one = el('table', { id: 'lookup-table' });
    const found = el('table', { id: 'search-table' });
    const user = el('table', { id: 'user-table' });
    const now = new Date();
    const monthAgo = new Date(now.getTime() - 30 * 86400e3);
    root.append(el('h2', {}, 'Message lookup'),
      form('lookup', [
        { name: 'topic', label: 'Topic', required: true, size: 24 },
        { name: 'seq', label: 'Seq', required: true, size: 8 },
      ], 'Look up', async (v) => {
        const m = await admin('GET', '/topics/' + seg(v.topic) + '/messages/' + seg(v.seq));
        messageTable(one, [m]);
        return 'found';
      }), one,
      el('h2', {}, 'Search (as an admin: every topic)'),
      form('search', [
        { name: 'q', label: 'Text', size: 16 },
        { name: 'topic', label: 'Topic (optional)', size: 16 },
        { name: 'from', label: 'From (RFC 3339 or Unix ms)', required: true, value: monthAgo.toISOString(), size: 24 },
        { name: 'to', label: 'To', required: true, value: now.toISOString(), size: 24 },
        { name: 'limit', label: 'Limit', value: '50', size: 4 },
      ], 'Search', async (v) => {
        const q = new URLSearchParams({ from: v.from, to: v.to, q: v.q, topic: v.topic, limit: v.limit });
        const { messages } = await admin('GET', '/search?' + q);
        messageTable(found, messages);
        return messages.length + ' message(s)';
      }), found,
      el('h2', {}, 'User'),
      form('user', [{ name: 'user_id', label: 'User id', required: true, size: 10 }], 'Look up', async (v) => {
        const u = await admin('GET', '/users/' + seg(v.user_id));
        fillTable(user, Object.keys(u), [Object.entries(u).map(([k, x]) =>
          (k.endsWith('_at') && typeof x === 'number' ? fmtTime(x) : typeof x === 'object' ? JSON.stringify(x) : String(x)))]);
        return 'found';
      }), user);
    return null;
  }

  const pages = {
    tenants: ['Tenants', pageTenants],
    shards: ['Shards', pageShards],
    routes: ['Routes', pageRoutes],
    delivery: ['Delivery', pageDelivery],
    migration: ['Migration', pageMigration],
    archive: ['Archive', pageArchive],
    messages: ['Messages', pageMessages],
    media: ['Media', pageMedia],
    webhooks: ['Webhooks', pageWebhooks],
    push: ['Push', pagePush],
  };

  async function refreshNow() {
    if (!refresh) return;
    const mine = refresh;
    try {
      await mine();
      if (mine === refresh) setResult($('flash'), '', '');
    } catch (err) {
      if (mine === refresh) showError($('flash'), err);
    }
  }

  function render() {
    const name = pages[location.hash.slice(1)] ? location.hash.slice(1) : 'shards';
    for (const a of $('nav').children) a.className = a.dataset.page === name ? 'current' : '';
    const root = el('section', { id: 'page-' + name });
    $('page').replaceChildren(root);
    setResult($('flash'), '', '');
    refresh = pages[name][1](root);
    refreshNow();
  }

  async function loadTenants() {
    const { tenants } = await call('GET', '/admin/v1/tenants');
    const sel = $('tenant');
    const want = tenant || (tenants[0] && tenants[0].tenant) || '';
    sel.replaceChildren(...tenants.map((t) => el('option', { value: t.tenant }, t.tenant)));
    if (tenants.some((t) => t.tenant === want)) sel.value = want;
    tenant = sel.value;
  }

  async function readiness() {
    try {
      const r = await fetch('/readyz', { cache: 'no-store' });
      $('ready').textContent = r.ok ? 'server ready' : 'server NOT ready';
    } catch (_) {
      $('ready').textContent = 'server unreachable';
    }
  }

  async function signedIn(token) {
    csrf = token;
    $('signin').hidden = true;
    $('app').hidden = false;
    try {
      await loadTenants();
    } catch (err) {
      showError($('flash'), err);
    }
    render();
    readiness();
    clearInterval(timer);
    timer = setInterval(() => { refreshNow(); readiness(); }, REFRESH_MS);
  }

  function signedOut() {
    csrf = '';
    refresh = null;
    clearInterval(timer);
    $('app').hidden = true;
    $('signin').hidden = false;
  }

  function start() {
    $('nav').replaceChildren(...Object.entries(pages).map(([k, [label]]) =>
      el('a', { href: '#' + k, 'data-page': k, id: 'nav-' + k }, label)));
    window.addEventListener('hashchange', () => { if (csrf) render(); });
    $('tenant').addEventListener('change', () => { tenant = $('tenant').value; render(); });
    $('signin-form').addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const result = $('signin-result');
      const key = $('admin-key').value;
      if (!key) {
        setResult(result, 'error', 'the admin key is required');
        return;
      }
      setResult(result, '', 'signing in…');
      try {
        const s = await call('POST', '/console/session', { admin_key: key });
        $('admin-key').value = '';
        setResult(result, '', '');
        await signedIn(s.csrf_token);
      } catch (err) {
        showError(result, err);
      }
    });
    $('signout').addEventListener('click', async () => {
      try { await call('DELETE', '/console/session'); } catch (_) { /* signed out anyway */ }
      signedOut();
    });
    call('GET', '/console/session').then((s) => signedIn(s.csrf_token), () => signedOut());
  }

  start();
})();
