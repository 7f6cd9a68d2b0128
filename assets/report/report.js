/*
 * robots-proxy report: the page's own script, inlined into the page after uPlot.
 * It renders the embedded report data (#report-data), and on a live page
 * (served on the admin listener) fetches /report/data/report.json again when
 * the range or a filter changes. Every value from the ledger is written with
 * textContent, never as HTML: tokens, URLs and patterns come from clients and sites.
 */
(function () {
  'use strict';

  var app = document.getElementById('app');
  var mode = app.getAttribute('data-mode');
  var data = JSON.parse(document.getElementById('report-data').textContent);
  var staticDiffs = JSON.parse(document.getElementById('report-diffs').textContent);
  var charts = [];
  var PRESETS = ['1h', '24h', '7d', '30d'];

  /** The state of the controls: a preset range or custom from/to, and the filters. */
  var state = initialState();

  function initialState() {
    var params = new URLSearchParams(mode === 'live' ? location.search : '');
    var range = params.get('range');
    var s = { range: range || '24h', from: params.get('from') || '', to: params.get('to') || '' };
    if (s.from) s.range = 'custom';
    if (mode !== 'live') {
      var span = data.query.toMs - data.query.fromMs;
      s.range = 'custom';
      PRESETS.forEach(function (p) { if (presetMs(p) === span) s.range = p; });
    }
    ['identity', 'token', 'origin'].forEach(function (k) {
      var v = mode === 'live' ? params.get(k) : data.query[k];
      s[k] = v === null || v === undefined ? null : v;
    });
    return s;
  }

  function presetMs(p) {
    return { '1h': 3600000, '24h': 86400000, '7d': 604800000, '30d': 2592000000 }[p];
  }

  /** Creates an element; `attrs` may hold className, text, and attributes; children are nodes or strings. */
  function el(tag, attrs) {
    var node = document.createElement(tag);
    var a = attrs || {};
    Object.keys(a).forEach(function (k) {
      if (k === 'className') node.className = a[k];
      else if (k === 'text') node.textContent = a[k] === null || a[k] === undefined ? '' : String(a[k]);
      else if (k.indexOf('on') === 0) node.addEventListener(k.slice(2), a[k]);
      else if (a[k] !== null && a[k] !== undefined) node.setAttribute(k, String(a[k]));
    });
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined) continue;
      node.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    }
    return node;
  }

  function fmt(value) {
    if (value === null || value === undefined || value === '') return '—';
    if (typeof value === 'number') return value.toLocaleString('en-US');
    return String(value);
  }

  function fmtMs(ms) {
    if (ms === null || ms === undefined) return '—';
    if (ms < 1000) return Math.round(ms) + ' ms';
    return (ms / 1000).toLocaleString('en-US', { maximumFractionDigits: 1 }) + ' s';
  }

  function fmtBytes(n) {
    var units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    var i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i === 0 ? n : n.toFixed(1)) + ' ' + units[i];
  }

  function botName(identity, token) {
    var t = token === '' ? '(no token)' : token;
    return identity ? identity + ' / ' + t : t;
  }

  /** The query string of the current state (for fetches, export links and the address bar). */
  function queryString() {
    var p = new URLSearchParams();
    if (state.range === 'custom') {
      if (state.from) p.set('from', new Date(state.from).toISOString());
      if (state.to) p.set('to', new Date(state.to).toISOString());
    } else {
      p.set('range', state.range);
    }
    ['identity', 'token', 'origin'].forEach(function (k) { if (state[k] !== null) p.set(k, state[k]); });
    return p.toString();
  }

  function load() {
    var qs = queryString();
    history.replaceState(null, '', '?' + qs);
    setStatus('Loading…');
    fetch('/report/data/report.json?' + qs, { headers: { accept: 'application/json' } })
      .then(function (r) {
        return r.json().then(function (body) {
          if (!r.ok) throw new Error(body.message || 'HTTP ' + r.status);
          return body;
        });
      })
      .then(function (next) { data = next; render(); })
      .catch(function (error) { setStatus('Could not load the report: ' + error.message, true); });
  }

  function setStatus(text, isError) {
    var s = document.getElementById('status');
    if (!s) return;
    s.textContent = text;
    s.className = isError ? 'note error' : 'note';
  }

  function toLocalInput(ms) {
    var d = new Date(ms - new Date(ms).getTimezoneOffset() * 60000);
    return d.toISOString().slice(0, 16);
  }

  function select(label, id, values, current, onChange, allLabel) {
    var s = el('select', { id: id, onchange: function () { onChange(s.value); } });
    if (allLabel !== null) s.appendChild(el('option', { value: '\u0000all', text: allLabel }));
    values.forEach(function (v) {
      var option = el('option', { value: v, text: v === '' ? '(none)' : v });
      if (v === current) option.selected = true;
      s.appendChild(option);
    });
    if (current === null && allLabel !== null) s.value = '\u0000all';
    return el('label', {}, label, s);
  }

  function renderControls() {
    var box = el('div', { className: 'controls', id: 'controls' });
    var f = data.filters;
    var rangeSelect = select('Time range', 'range', PRESETS.concat(['custom']), state.range, function (v) {
      state.range = v;
      if (v === 'custom') {
        state.from = state.from || toLocalInput(data.query.fromMs);
        state.to = state.to || toLocalInput(data.query.toMs);
        render();
      } else if (mode === 'live') {
        load();
      }
    }, null);
    box.appendChild(rangeSelect);
    if (state.range === 'custom') {
      box.appendChild(el('label', {}, 'From', el('input', { type: 'datetime-local', id: 'from', value: state.from || toLocalInput(data.query.fromMs), onchange: function (e) { state.from = e.target.value; } })));
      box.appendChild(el('label', {}, 'To', el('input', { type: 'datetime-local', id: 'to', value: state.to || toLocalInput(data.query.toMs), onchange: function (e) { state.to = e.target.value; } })));
    }
    var onFilter = function (key) {
      return function (v) {
        state[key] = v === '\u0000all' ? null : v;
        if (mode === 'live') load();
      };
    };
    box.appendChild(select('Identity', 'filter-identity', withCurrent(f.identities, state.identity), state.identity, onFilter('identity'), 'all identities'));
    box.appendChild(select('Product token', 'filter-token', withCurrent(f.tokens, state.token), state.token, onFilter('token'), 'all tokens'));
    box.appendChild(select('Origin', 'filter-origin', withCurrent(f.origins, state.origin), state.origin, onFilter('origin'), 'all origins'));
    if (mode === 'live') box.appendChild(el('button', { id: 'apply', type: 'button', text: 'Apply', onclick: load }));
    else box.querySelectorAll('select, input').forEach(function (c) { c.disabled = true; });
    return box;
  }

  function withCurrent(values, current) {
    return current !== null && values.indexOf(current) < 0 ? [current].concat(values) : values;
  }

  function ruleLine(r) {
    return r.robotsUrl + ' line ' + r.ruleLine + ' (Disallow: ' + r.rulePattern + ') ' + fmt(r.refusals) + '×';
  }

  function renderHighlights() {
    var h = data.highlights;
    var box = el('div', { className: 'highlights', id: 'highlights' });
    var refused = el('div', { className: 'answer' });
    if (h.mostRefused === null) {
      refused.textContent = 'No bot was refused in this range.';
    } else {
      var m = h.mostRefused;
      var parts = [];
      if (m.refusedByRule) parts.push(fmt(m.refusedByRule) + ' by robots.txt rules');
      if (m.robotsUnreachable) parts.push(fmt(m.robotsUnreachable) + ' robots.txt unreachable');
      var other = m.refused - (m.refusedByRule || 0) - (m.robotsUnreachable || 0);
      if (other > 0) parts.push(fmt(other) + ' other reasons');
      refused.appendChild(el('div', { className: 'lead', id: 'answer-refused-bot', text: botName(m.identity, m.token) + ': ' + fmt(m.refused) + ' of ' + fmt(m.requests) + ' requests refused' + (parts.length ? ' (' + parts.join(', ') + ')' : '') }));
      var rules = m.topRules || (m.rule ? [m.rule] : []);
      if (rules.length > 0) {
        var tied = rules.length > 1 && rules[1].refusals === rules[0].refusals;
        refused.appendChild(el('div', { text: tied ? 'Rules that refused it most (a tie):' : 'Rule that refused it most:' }));
        var list = el('ol', { className: 'rules', id: 'answer-refused-rules' });
        rules.forEach(function (r) { list.appendChild(el('li', { text: ruleLine(r) })); });
        refused.appendChild(list);
        if (m.ruleCount > rules.length) refused.appendChild(el('div', { className: 'note', text: '+' + (m.ruleCount - rules.length) + ' more rules: see "Refusals by bot and robots.txt rule".' }));
      }
    }
    box.appendChild(el('div', { className: 'highlight', id: 'answer-refused' }, el('h3', { text: 'Refused most' }), refused));

    var issues = el('div', { className: 'answer' });
    if (h.robotsIssues.length === 0) {
      issues.textContent = 'No robots.txt changed or failed in this range.';
    } else {
      var items = el('ul', { className: 'issues' });
      h.robotsIssues.slice(0, 5).forEach(function (i) {
        var what = [];
        if (i.changes) what.push(i.changes + ' change' + (i.changes > 1 ? 's' : ''));
        if (i.failures) what.push(i.failures + ' failed fetch' + (i.failures > 1 ? 'es' : ''));
        var now = i.lastState + (i.lastStatus ? ' ' + i.lastStatus : '') + (i.lastError ? ', ' + i.lastError : '');
        var item = el('li', { 'data-origin': i.origin }, i.origin + ': ' + what.join(', ') + ' (now ' + now + ')');
        if (i.latestChangeId !== null && i.latestChangeId !== undefined) {
          item.appendChild(document.createTextNode(' '));
          item.appendChild(el('button', { className: 'link', type: 'button', 'data-answer-diff': i.latestChangeId, text: 'show the latest diff', onclick: function () { showDiff(i.latestChangeId, true); } }));
        }
        items.appendChild(item);
      });
      issues.appendChild(items);
      if (h.robotsIssues.length > 5) issues.appendChild(el('div', { className: 'note', text: '+' + (h.robotsIssues.length - 5) + ' more origins: see "Origins" and "robots.txt versions".' }));
    }
    box.appendChild(el('div', { className: 'highlight', id: 'answer-robots' }, el('h3', { text: 'robots.txt changed or failed' }), issues));
    var wait = h.longestWait === null
      ? 'No request waited in a queue in this range.'
      : botName(h.longestWait.identity, h.longestWait.token) + ': p95 ' + fmtMs(h.longestWait.waitP95Ms) + ', max ' + fmtMs(h.longestWait.waitMaxMs) + ' over ' + fmt(h.longestWait.paced) + ' paced requests';
    box.appendChild(el('div', { className: 'highlight', id: 'answer-wait' }, el('h3', { text: 'Waited longest in the queues' }), el('div', { className: 'answer', text: wait })));
    return box;
  }

  function renderCards() {
    var s = data.tables.summary.rows[0];
    var cards = [
      ['requests', 'Requests', fmt(s.requests), ''],
      ['allowed', 'Allowed', fmt(s.allowed), 'allow'],
      ['refused', 'Refused', fmt(s.refused), 'deny'],
      ['refusedByRule', 'by a robots.txt rule', fmt(s.refusedByRule), 'deny'],
      ['robotsUnreachable', 'robots.txt unreachable', fmt(s.robotsUnreachable), 'deny'],
      ['queueFull', 'queue full (429)', fmt(s.queueFull), 'deny'],
      ['refusedOther', 'other reasons', fmt(s.refusedOther), 'deny'],
      ['paced', 'Paced (queued)', fmt(s.paced), ''],
      ['waitP50Ms', 'Queue wait p50', fmtMs(s.waitP50Ms), ''],
      ['waitP95Ms', 'Queue wait p95', fmtMs(s.waitP95Ms), ''],
      ['waitMaxMs', 'Queue wait max', fmtMs(s.waitMaxMs), ''],
      ['bytesOut', 'Bytes to bots', fmtBytes(s.bytesOut), ''],
      ['bytesIn', 'Bytes from bots', fmtBytes(s.bytesIn), ''],
      ['backoffs', 'Upstream 429/503', fmt(s.backoffs), ''],
    ];
    var box = el('div', { className: 'cards', id: 'summary' });
    cards.forEach(function (c) {
      box.appendChild(el('div', { className: 'card ' + c[3], 'data-key': c[0], 'data-value': s[c[0]] }, el('div', { className: 'label', text: c[1] }), el('div', { className: 'value', text: c[2] })));
    });
    return box;
  }

  function renderCharts() {
    var box = el('div', { className: 'charts' });
    var outcomes = el('div', { className: 'chart', id: 'chart-outcomes' }, el('h3', { text: 'Requests per ' + bucketLabel() + ', by outcome' }));
    var waits = el('div', { className: 'chart', id: 'chart-wait' }, el('h3', { text: 'Queue wait per ' + bucketLabel() + ' (ms)' }));
    box.appendChild(outcomes);
    box.appendChild(waits);
    // Drawn once the boxes are in the document (uPlot needs their width).
    setTimeout(function () { drawCharts(outcomes, waits); }, 0);
    return box;
  }

  function bucketLabel() {
    var m = data.bucketMinutes;
    return m === 1 ? 'minute' : m < 60 ? m + ' minutes' : m === 60 ? 'hour' : m / 60 + ' hours';
  }

  function drawCharts(outcomes, waits) {
    charts.forEach(function (c) { c.destroy(); });
    charts = [];
    if (typeof uPlot !== 'function') return;
    var rows = data.tables.trend.rows;
    var xs = rows.map(function (r) { return r.atMs / 1000; });
    var col = function (k) { return rows.map(function (r) { return r[k]; }); };
    var width = Math.max(300, outcomes.clientWidth - 20);
    // Points shown too: a range with traffic in one bucket only still draws something.
    var line = function (label, stroke, dash) { return { label: label, stroke: stroke, width: 2, dash: dash, points: { show: true, size: 5 } }; };
    var series = [{}, line('allowed', '#2d8a4e'), line('refused by rule', '#c23b22'), line('robots.txt unreachable', '#8250df'), line('queue full', '#b7791f'), line('refused, other', '#57606a')];
    charts.push(new uPlot({ width: width, height: 220, series: series, axes: [{}, { label: 'requests' }] },
      [xs, col('allowed'), col('refusedByRule'), col('robotsUnreachable'), col('queueFull'), col('refusedOther')], outcomes));
    charts.push(new uPlot({ width: width, height: 220, series: [{}, line('mean', '#1f6feb'), line('max', '#bf3989', [4, 4])], axes: [{}, { label: 'ms' }] },
      [xs, col('waitMeanMs'), col('waitMaxMs')], waits));
  }

  /** Export links: by URL on a live page, from the embedded data on a static one. */
  function exportLinks(name, table) {
    var span = el('span', { className: 'exports' });
    if (mode === 'live') {
      span.appendChild(el('a', { href: '/report/data/' + name + '.csv?' + queryString(), text: 'CSV', 'data-export': 'csv' }));
      span.appendChild(el('a', { href: '/report/data/' + name + '.json?' + queryString(), text: 'JSON', 'data-export': 'json' }));
    } else {
      span.appendChild(el('a', { href: blobUrl(toCsv(table), 'text/csv'), download: name + '.csv', text: 'CSV', 'data-export': 'csv' }));
      span.appendChild(el('a', { href: blobUrl(JSON.stringify(table, null, 1), 'application/json'), download: name + '.json', text: 'JSON', 'data-export': 'json' }));
    }
    return span;
  }

  function blobUrl(text, type) {
    return URL.createObjectURL(new Blob([text], { type: type }));
  }

  function toCsv(table) {
    var quote = function (v) {
      var s = v === null || v === undefined ? '' : String(v);
      return /[",\r\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
    };
    var lines = [table.columns.map(function (c) { return quote(c.key); }).join(',')];
    table.rows.forEach(function (r) { lines.push(table.columns.map(function (c) { return quote(r[c.key]); }).join(',')); });
    return lines.join('\r\n') + '\r\n';
  }

  /** Rows a table shows before its "Show all" button; the exports always carry every row. */
  var ROWS_SHOWN = 25;
  /** Tables the reader expanded (kept across reloads of the data). */
  var expanded = {};

  var WIDE = { url: 1, topRule: 1, description: 1, robotsUrl: 1, crawlDelays: 1, warningList: 1, botNames: 1, pressureOrigin: 0 };

  function renderTable(name, title, note, extra) {
    var table = data.tables[name];
    var section = el('section', { id: 'section-' + name });
    section.appendChild(el('h2', {}, title, exportLinks(name, table)));
    if (note) section.appendChild(el('p', { className: 'note', text: note }));
    if (table.rows.length === 0) {
      section.appendChild(el('div', { className: 'empty table-wrap', text: 'Nothing in this range.' }));
      return section;
    }
    var thead = el('tr');
    table.columns.forEach(function (c) { thead.appendChild(el('th', { text: c.title, className: isNumeric(table, c.key) ? 'num' : '' })); });
    if (extra) thead.appendChild(el('th', { text: '' }));
    var tbody = el('tbody');
    var isCut = table.rows.length > ROWS_SHOWN && !expanded[name];
    (isCut ? table.rows.slice(0, ROWS_SHOWN) : table.rows).forEach(function (r) {
      var tr = el('tr');
      table.columns.forEach(function (c) {
        var v = r[c.key];
        var cls = (isNumeric(table, c.key) ? 'num' : '') + (WIDE[c.key] ? ' wrap' : '') + (c.key === 'robotsState' || c.key === 'state' ? ' state-' + v : '');
        tr.appendChild(el('td', { className: cls, 'data-key': c.key, text: fmt(v) }));
      });
      if (extra) tr.appendChild(el('td', {}, extra(r)));
      tbody.appendChild(tr);
    });
    section.appendChild(el('div', { className: 'table-wrap' }, el('table', { 'data-table': name }, el('thead', {}, thead), tbody)));
    if (isCut) {
      section.appendChild(el('button', { className: 'link more', type: 'button', 'data-more': name, text: 'Show all ' + fmt(table.rows.length) + ' rows (' + ROWS_SHOWN + ' shown)', onclick: function () { expanded[name] = true; section.replaceWith(renderTable(name, title, note, extra)); } }));
    }
    return section;
  }

  function isNumeric(table, key) {
    for (var i = 0; i < table.rows.length; i++) {
      var v = table.rows[i][key];
      if (v !== null && v !== undefined) return typeof v === 'number';
    }
    return false;
  }

  function diffButton(row) {
    // A static page carries the diffs of changed versions only.
    if (mode !== 'live' && !staticDiffs.some(function (d) { return d.version.id === row.id; })) return null;
    var isChange = row.change === 'changed';
    return el('button', { className: 'link', type: 'button', 'data-diff': row.id, text: isChange ? 'diff' : 'show', onclick: function () { showDiff(row.id); } });
  }

  function showDiff(id, isFromAnswer) {
    var out = document.getElementById('diff');
    out.textContent = 'Loading…';
    if (isFromAnswer) out.scrollIntoView({ block: 'center' });
    var shown = function (d) {
      out.textContent = '';
      if (!d) { out.textContent = 'This version is not in the report.'; return; }
      var v = d.version;
      var head = v.origin + ': version ' + v.id + ', ' + v.state + (v.status ? ' ' + v.status : '') + (v.error ? ' (' + v.error + ')' : '') + ', first fetched ' + new Date(v.firstFetchedMs).toISOString() +
        (d.previous ? '; changed from version ' + d.previous.id + ' (' + d.previous.state + (d.previous.status ? ' ' + d.previous.status : '') + ', first fetched ' + new Date(d.previous.firstFetchedMs).toISOString() + ')' : '');
      out.appendChild(el('span', { className: 'head', text: head + '\n' }));
      (v.warnings || []).forEach(function (w) { out.appendChild(el('span', { className: 'warn', text: 'parse warning: ' + (w.line > 0 ? 'line ' + w.line + ': ' : '') + w.code + ' (' + w.message + ')\n' })); });
      if (v.truncated) out.appendChild(el('span', { className: 'warn', text: 'truncated: only the first bytes were parsed (robots.maxBytes)\n' }));
      out.appendChild(document.createTextNode('\n'));
      if (d.diff === null) { out.appendChild(document.createTextNode('No diff: the body of this version or of the one before it was not kept (not a 2xx answer, or older than ledger.robotsBodiesPerOrigin versions).')); return; }
      d.diff.split('\n').forEach(function (line) {
        if (/^=+$/.test(line)) return; // the patch format's separator under its title: noise here
        var cls = line.indexOf('+') === 0 && line.indexOf('+++') !== 0 ? 'add' : line.indexOf('-') === 0 && line.indexOf('---') !== 0 ? 'del' : '';
        out.appendChild(el('span', { className: cls, text: line + '\n' }));
      });
    };
    if (mode === 'live') {
      fetch('/report/robots-diff.json?id=' + encodeURIComponent(id)).then(function (r) { return r.ok ? r.json() : null; }).then(shown, function () { shown(null); });
    } else {
      shown(staticDiffs.filter(function (d) { return d.version.id === id; })[0]);
    }
  }

  function render() {
    var q = data.query;
    app.textContent = '';
    app.appendChild(el('header', {},
      el('h1', { text: 'robots-proxy report' }),
      el('div', { className: 'sub', id: 'range-text', text: new Date(q.fromMs).toISOString() + ' – ' + new Date(q.toMs).toISOString() + ' · generated ' + new Date(data.generatedAtMs).toISOString() + (mode === 'static' ? ' · static file' : '') }),
    ));
    var main = el('main');
    app.appendChild(main);
    main.appendChild(renderControls());
    main.appendChild(el('p', { className: 'note', id: 'status', text: mode === 'static' ? 'A static report: its range and filters were chosen when it was made (robots-proxy report --since, --identity, --token, --origin).' : '' }));
    main.appendChild(el('section', {}, el('h2', { text: 'Answers' }), renderHighlights()));
    main.appendChild(el('section', {}, el('h2', {}, 'Overview', exportLinks('summary', data.tables.summary)), renderCards()));
    main.appendChild(el('section', {}, el('h2', {}, 'Trend', exportLinks('trend', data.tables.trend)), renderCharts()));
    main.appendChild(renderTable('reasons', 'Requests by verdict and reason'));
    main.appendChild(renderTable('bots', 'Bots', 'One row per identity and product token. Wait percentiles are estimated from the ledger\'s coarse histogram. "Offered / allowed": the bot\'s busiest minute at one origin against what the crawl-delay in force allows per minute (above 1: it pushed harder than the delay allows and was queued or refused). ' + data.catalogSource + '.'));
    main.appendChild(renderTable('bot-rules', 'Refusals by bot and robots.txt rule', refusalNote()));
    main.appendChild(renderTable('origins', 'Origins', 'robots.txt health per origin: the latest version as of the end of the range, its changes and failed fetches within it, the crawl-delays the file gives, the longest delay the queue applied (more than the crawl-delay in the file when pacing.minDelay or a policy rule raised it, or while an instance of a fleet paced alone without Redis: delay x state.fleetSize), and the upstream 429/503 answers that paused the origin.'));
    var versions = renderTable('robots-versions', 'robots.txt versions', 'Status history: a new row each time an origin\'s robots.txt changed (content, status or state), with its fetches. "diff" shows what changed from the version before, "show" a first version; both list its parse warnings.', diffButton);
    versions.appendChild(el('pre', { className: 'diff', id: 'diff', text: 'Choose "diff" on a changed version.' }));
    main.appendChild(versions);
    main.appendChild(renderTable('refusals', 'Latest refusals', refusalNote()));
  }

  function refusalNote() {
    var oldest = data.oldestRefusalMs;
    return 'From the refusals the ledger keeps (ledger.refusalRetention, ledger.maxRefusals)' + (oldest ? '; the oldest kept is from ' + new Date(oldest).toISOString() : '') + '. Totals above come from the per-minute rollups.';
  }

  window.addEventListener('resize', function () {
    var o = document.getElementById('chart-outcomes');
    if (!o) return;
    charts.forEach(function (c) { c.setSize({ width: Math.max(300, o.clientWidth - 20), height: 220 }); });
  });

  render();
})();
