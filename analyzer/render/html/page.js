/* SPDX-License-Identifier: MIT */
/* The one-file HTML report: draws the model that `cumemtrace report --format
 * html` embedded (docs/html.md, "The model") with uPlot and d3-flame-graph.
 * It reads nothing from outside the file. */
(function () {
  'use strict';
  var model = JSON.parse(document.getElementById('cmt-model').textContent);
  var root = document.getElementById('cmt-root');
  root.textContent = '';

  /* ---- formatting ------------------------------------------------------ */
  var UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  function human(n) {
    if (n === null || n === undefined) return '-';
    var v = Math.abs(n), u = 0;
    while (v >= 1024 && u < UNITS.length - 1) { v /= 1024; u++; }
    return (n < 0 ? '-' : '') + (u === 0 ? String(v) : v.toFixed(1)) + ' ' + UNITS[u];
  }
  /* axis steps in binary units: 1, 2, 4 ... 512 of B, KiB, MiB ... */
  var BYTE_INCRS = [];
  for (var ui = 0; ui < 6; ui++) for (var ms = 1; ms < 1024; ms *= 2) BYTE_INCRS.push(ms * Math.pow(1024, ui));
  function exact(n) { return n === null || n === undefined ? '-' : String(n) + ' B'; }
  function both(n) { return human(n) + ' (' + exact(n) + ')'; }
  /* "1 allocation", "2 allocations" */
  function count(n, one) { return n + ' ' + (n === 1 ? one : one + 's'); }
  /* What the leaks' figures are, as the text says it (report_text.c): live at
   * the cut or when read is no leak; with PyTorch's tensors recorded, the
   * segments' leaks are those outside its cache (its tensors' have a card). */
  function leaksUnknown(lk) { return lk && (lk.basis === 'cut' || lk.basis === 'in_progress'); }
  function leaksTitle(r) {
    var b = r.leaks && r.leaks.basis;
    return b === 'cut' ? 'Live at the cut (not leaks: the trace is cut short)' :
      b === 'in_progress' ? 'Live when read (not leaks, not yet)' :
      r.tensors ? 'Leaks outside PyTorch\'s cache (live at exit)' : 'Leaks (live at exit)';
  }
  /* a duration as the text report writes it (units.c, cmt_format_duration):
   * 41.2 ms, 1.536 s, 20.0 us, 800 ns */
  function secs(ns) {
    if (ns === null || ns === undefined) return '-';
    if (ns === 0) return '0 s';
    if (ns >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
    if (ns >= 1e6) return (ns / 1e6).toFixed(1) + ' ms';
    if (ns >= 1e3) return (ns / 1e3).toFixed(1) + ' us';
    return Math.round(ns) + ' ns';
  }
  /* Ticks of a time axis in seconds, by magnitude: the unit and the digits
   * follow the step between ticks, so a run of 2 ms reads 0, 0.5 ms, 1 ms ...
   * rather than 24 ticks of "0.001". */
  function timeTicks(u, vals) {
    var step = vals.length > 1 ? Math.abs(vals[1] - vals[0]) : Math.abs(vals[0] || 1);
    var top = Math.max.apply(null, vals.map(Math.abs));
    var unit = top >= 1 || step >= 1 ? [1, 's'] : top >= 1e-3 || step >= 1e-3 ? [1e-3, 'ms'] : top >= 1e-6 || step >= 1e-6 ? [1e-6, 'us'] : [1e-9, 'ns'];
    var digits = Math.max(0, Math.min(6, -Math.floor(Math.log10(step / unit[0]) + 1e-9)));
    return vals.map(function (v) { return v === 0 ? '0' : (v / unit[0]).toFixed(digits) + ' ' + unit[1]; });
  }
  function base(p) { return p ? p.slice(p.lastIndexOf('/') + 1) : ''; }
  function isPython(f) { return !!(f && f.file && /\.py$/.test(f.file)); }
  function frameName(f) {
    if (!f) return '(no stack)';
    if (f.function) return f.function;
    if (f.module) return base(f.module) + '+0x' + Number(f.address || 0).toString(16);
    return '0x' + Number(f.address || 0).toString(16);
  }
  function frameWhere(f) {
    var line = f.line !== undefined ? f.line : (f.lines && f.lines.length ? f.lines.join(',') : 0);
    if (f.file) return f.file + (line ? ':' + line : '');
    return f.module || '';
  }
  function frameShort(f) {
    /* a call tree's node is every line of the frame its children come from
     * (main leak.cu:32,33), not the first one only */
    var line = f.line !== undefined ? f.line : (f.lines && f.lines.length ? f.lines.join(',') : 0);
    return frameName(f) + (f.file ? '  ' + base(f.file) + (line ? ':' + line : '') : '');
  }

  /* ---- DOM helpers ------------------------------------------------------ */
  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (k === 'text') e.textContent = attrs[k];
      else if (k === 'cls') e.className = attrs[k];
      else e.setAttribute(k, attrs[k]);
    }
    (kids || []).forEach(function (c) {
      if (c === null || c === undefined) return;
      e.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
    });
    return e;
  }
  function card(cls, key, value, extra, data) {
    var c = el('div', {cls: 'card ' + cls}, [el('div', {cls: 'k', text: key}), el('div', {cls: 'v', text: value}),
      extra ? el('div', {cls: 'x', text: extra}) : null]);
    if (data) for (var k in data) c.setAttribute('data-' + k, String(data[k]));
    return c;
  }
  /* frames innermost first; site: index of the frame naming the call site */
  function framesList(frames, site) {
    var ol = el('ol', {cls: 'frames'});
    (frames || []).forEach(function (f, i) {
      var li = el('li', {text: frameName(f) + (frameWhere(f) ? '  ' + frameWhere(f) : '') + (f.inlined ? '  (inlined)' : '')});
      if (i === site) li.className = 'site';
      else if (isPython(f)) li.className = 'py';
      else if (site !== null && site !== undefined && i < site) li.className = 'folded';
      ol.appendChild(li);
    });
    return ol;
  }
  function siteCell(frames, site) {
    var at = frames && frames.length ? (site !== null && site !== undefined ? site : 0) : -1;
    var f = at >= 0 ? frames[at] : null, caller = at >= 0 && at + 1 < frames.length ? frames[at + 1] : null;
    /* the site and where it was called from: rows of one helper called from
     * several places read apart before they are opened */
    var d = el('details', null, [el('summary', {cls: 'mono', text: f ? frameShort(f) + (caller ? ' · from ' + frameShort(caller) : '') : '(no stack)'})]);
    d.appendChild(framesList(frames, site));
    return d;
  }
  /* a table of rows, 100 at first and a button for the rest */
  function table(cols, rows, render) {
    var t = el('table');
    var hr = el('tr');
    cols.forEach(function (c) { hr.appendChild(el('th', {cls: c.num ? 'num' : '', text: c.name})); });
    t.appendChild(el('thead', null, [hr]));
    var tb = el('tbody');
    t.appendChild(tb);
    var shown = 0;
    function more(n) {
      var end = Math.min(rows.length, shown + n);
      for (; shown < end; shown++) {
        var tr = el('tr');
        render(rows[shown]).forEach(function (v, i) {
          var td = el('td', {cls: cols[i].num ? 'num' : ''});
          if (v instanceof Node) td.appendChild(v); else td.textContent = v === null || v === undefined ? '-' : String(v);
          tr.appendChild(td);
        });
        tb.appendChild(tr);
      }
    }
    more(100);
    var box = el('div', null, [t]);
    if (shown < rows.length) {
      var b = el('button', {cls: 'more', text: 'show all ' + rows.length});
      b.onclick = function () { more(rows.length); b.remove(); };
      box.appendChild(b);
    }
    return box;
  }
  function section(parent, title, id) {
    var s = el('section', id ? {id: id} : null, [el('h3', {text: title})]);
    parent.appendChild(s);
    return s;
  }

  /* ---- traces and their common time axis -------------------------------- */
  var traces = model.traces.filter(function (t) { return t.report && !t.report.error; });
  var t0 = Infinity;
  traces.forEach(function (t) { t0 = Math.min(t0, t.report.start_realtime_ns || 0); });
  /* seconds on the common axis of a time since trace t's start */
  function axisS(t, ns) { return ((t.report.start_realtime_ns || 0) - t0 + ns) / 1e9; }
  function traceName(t) {
    var r = t.report, p = r.process || {};
    var who = base(p.executable || r.trace);
    if (p.rank !== undefined && p.rank >= 0) who = 'rank ' + p.rank + ' · ' + who;
    return who + ' (pid ' + p.pid + ')';
  }

  document.getElementById('cmt-subtitle').textContent = traces.length + (traces.length === 1 ? ' trace' : ' traces') +
    ' · cumemtrace ' + model.version + (model.traces.length > traces.length ? ' · ' + (model.traces.length - traces.length) + ' could not be read' : '');

  /* ---- overview --------------------------------------------------------- */
  var over = el('section', {id: 'overview'});
  root.appendChild(over);
  over.appendChild(el('h2', {text: 'Overview'}));
  if (model.traces.length > traces.length)
    model.traces.forEach(function (t) {
      if (t.report && t.report.error) over.appendChild(el('p', {cls: 'warn', text: t.report.trace + ': ' + t.report.error}));
    });
  /* a job of many ranks: one row each, the highest peak marked */
  if (traces.length > 3) {
    var top = Math.max.apply(null, traces.map(function (t) { return Math.max.apply(null, (t.report.devices || []).map(function (d) { return d.peak_bytes; }).concat([0])); }));
    over.appendChild(table([{name: 'trace'}, {name: 'device peaks', num: 1}, {name: 'leaks', num: 1}, {name: 'failed', num: 1}, {name: 'growing', num: 1}, {name: 'state'}],
      traces, function (t) {
        var r = t.report;
        var peaks = el('span', null, (r.devices || []).map(function (d) {
          return el('span', {cls: d.peak_bytes === top ? 'verdict' : '', 'data-peak-bytes': d.peak_bytes,
            text: 'dev ' + d.ordinal + ' ' + human(d.peak_bytes) + ' (' + exact(d.peak_bytes) + ') '});
        }));
        return [traceName(t), peaks, both(r.leaks ? r.leaks.bytes : 0), r.failed_count,
          ((r.growth && r.growth.candidates) || []).length, r.trace_state];
      }));
  }
  traces.forEach(function (t, ti) {
    if (traces.length > 3) return;
    var r = t.report;
    var row = el('div', {cls: 'cards'});
    var head = el('div', {cls: 'trace-title'}, [traceName(t) + '  ', el('span', {cls: 'muted', text: r.trace + ' · ' +
      secs(r.duration_ns) + ' · ' + r.events + ' events · ' + r.trace_state})]);
    over.appendChild(head);
    (r.devices || []).forEach(function (d) {
      row.appendChild(card('peak', 'Device ' + d.ordinal + ' peak', human(d.peak_bytes),
        exact(d.peak_bytes) + ' at ' + secs(d.peak_time_ns) + (d.peak_phase && d.peak_phase.path ? ' · ' + d.peak_phase.path : ''),
        {'peak-bytes': d.peak_bytes, 'device': d.ordinal, 'trace': ti}));
    });
    (r.pinned_host || []).forEach(function (d) {
      if (d.peak_bytes) row.appendChild(card('', 'Pinned host peak', human(d.peak_bytes), exact(d.peak_bytes)));
    });
    (r.tensors && r.tensors.devices || []).forEach(function (d) {
      if (d.peak) row.appendChild(card('peak', 'Device ' + d.device + ' tensors\' peak', human(d.peak.allocated_bytes),
        exact(d.peak.allocated_bytes) + ', the cache\'s reserve ' + human(d.peak.categories.reserve) + ' beside them',
        {'tensors-peak-bytes': d.peak.allocated_bytes, 'device': d.device}));
    });
    if (r.tensors) {
      var tl = r.tensors.leaks, ta = r.tensors.alive_at_exit;
      row.appendChild(card(tl.bytes ? 'leak' : 'good', 'Tensors kept step after step', human(tl.bytes),
        exact(tl.bytes) + ' in ' + count(tl.count, 'tensor') + ' when the work ended (' + human(ta.bytes) + ' alive at exit)', {'tensor-leak-bytes': tl.bytes}));
    }
    var lk = r.leaks || {bytes: 0, count: 0};
    row.appendChild(card(lk.bytes && !leaksUnknown(lk) ? 'leak' : 'good', leaksTitle(r), human(lk.bytes),
      exact(lk.bytes) + ' in ' + count(lk.count, 'allocation'), {'leak-bytes': lk.bytes, 'trace': ti}));
    (r.held_at_exit || []).forEach(function (h) {
      row.appendChild(card('', 'Held by ' + h.holder + ' at exit', human(h.bytes), count(h.segments, 'segment') + ', not a leak'));
    });
    /* one per failure: a caching allocator's own retries and probes are not failures of their own */
    var failures = r.failed_count - (r.failed_calls_probing || 0) - (r.failed_calls_retrying || 0);
    row.appendChild(card(failures ? 'fail' : 'good', 'Failed allocations', String(failures),
      failures ? (r.failed || []).filter(function (f) { return !f.probe; }).map(function (f) { return f.verdict || f.error; })
        .filter(function (v, i, a) { return a.indexOf(v) === i; }).join(', ') : (r.failed_count ? 'none; ' + r.failed_count + ' allocator probes' : 'none'),
      {'failed-count': failures}));
    var g = (r.growth && r.growth.candidates) || [];
    row.appendChild(card(g.length ? 'leak' : 'good', 'Growing call sites', String(g.length),
      g.length ? 'fastest ' + human(Math.round(g[0].rate_bytes_per_second)) + '/s' : 'none'));
    over.appendChild(row);
    var ws = r.warnings || [];
    if (ws.length) {
      var wd = el('details', {cls: 'warnings'}, [el('summary', {text: ws.length + (ws.length === 1 ? ' warning' : ' warnings') + ' from the analyzer'})]);
      ws.forEach(function (w) { wd.appendChild(el('div', {cls: 'mono', text: w})); });
      over.appendChild(wd);
    }
  });

  /* the job view (several traces, or their summaries: then no trace) */
  if (model.job_view) drawJobView(model.job_view, over);

  /* ---- timelines -------------------------------------------------------- */
  var COLORS = ['#1c7ed6', '#2b8a3e', '#e8590c', '#7048e8', '#0c8599', '#c2255c', '#5c940d', '#862e9c', '#495057'];
  var charts = [];
  var fragCharts = []; /* "Fragmentation over time": checkpoints, not on the timelines' zoom */
  var STEPPED = uPlot.paths.stepped({align: 1}); /* a value holds until the next one */
  var syncing = false;
  var tl = el('section', {id: 'timeline'});
  root.appendChild(tl);
  if (!traces.length && model.job_view) tl.hidden = true; /* summaries: no trace's timeline */
  tl.appendChild(el('h2', {text: 'Live bytes over time'}));
  tl.appendChild(el('div', {cls: 'chart-help', text: 'Hover for exact figures · drag to zoom (every chart follows) · double-click to zoom out · click an instant for what was live then. ' +
    'Orange: the peak; red: failed allocations; shaded bands: steps.'}));
  var keys = el('div', {cls: 'keys'});
  [['#d9480f', 'peak'], ['#c92a2a', 'failed allocation'], ['#e7f5ff', 'step (alternate bands)']].forEach(function (k) {
    keys.appendChild(el('span', null, [el('span', {cls: 'legend-key', style: 'background:' + k[0]}), k[1]]));
  });
  tl.appendChild(keys);

  function seriesOf(t, device) {
    return (t.timeline && t.timeline.series || []).filter(function (s) { return s.device === device; });
  }
  function failuresOf(t, device) {
    var r = t.report, out = [];
    var cases = r.oom && r.oom.cases;
    if (cases && cases.length) cases.forEach(function (c) { if (c.device === device) out.push(c); });
    else (r.failed || []).forEach(function (f) { if (f.device === device) out.push(f); });
    return out;
  }
  function seriesLabel(s) {
    if (s.layer === 'kind') return s.name === 'total' ? 'total' : s.name;
    return s.layer + ': ' + s.name;
  }

  function drawChart(t, ti, device, acct) {
    var m = t.timeline;
    var all = seriesOf(t, device);
    if (!m || !all.length) return;
    var total = all.filter(function (s) { return s.layer === 'kind' && s.name === 'total'; })[0] || all[0];
    var kinds = all.filter(function (s) { return s !== total && s.layer === 'kind' && s.name !== 'managed' && s.max.some(function (v) { return v > 0; }); });
    if (kinds.length === 1 && kinds[0].peak_bytes === total.peak_bytes) kinds = [];
    var others = all.filter(function (s) { return s.layer !== 'kind' && s.max.some(function (v) { return v > 0; }); });
    var n = m.buckets;
    var xs = new Array(n);
    for (var b = 0; b < n; b++) xs[b] = axisS(t, (m.origin_ns || 0) + b * m.bucket_ns);
    var data = [xs, total.max, total.min];
    var fmt = function (u, v) { return v === null || v === undefined ? '-' : both(v); };
    var series = [{label: 'time', value: function (u, v) { return v === null ? '-' : secs(Math.round((v - axisS(t, 0)) * 1e9)); }},
      {label: 'total (highest in bucket)', stroke: '#1d2330', width: 1.5, fill: 'rgba(28,126,214,0.10)', paths: STEPPED, value: fmt},
      {label: 'total (lowest in bucket)', stroke: 'rgba(29,35,48,0.35)', width: 1, paths: STEPPED, value: fmt}];
    kinds.concat(others).forEach(function (s, i) {
      data.push(s.max);
      series.push({label: seriesLabel(s), stroke: COLORS[i % COLORS.length], width: 1, paths: STEPPED, value: fmt});
    });
    var box = el('div', {cls: 'chart-box', 'data-trace': ti, 'data-device': device});
    var title = (traces.length > 1 ? traceName(t) + ' · ' : '') + (device < 0 ? 'pinned host memory' : 'device ' + device);
    box.appendChild(el('div', {cls: 'chart-head'}, [el('span', {cls: 'name', text: title}),
      el('span', {cls: 'muted', text: 'peak ' + both(acct ? acct.peak_bytes : total.peak_bytes) + ' at ' + secs(acct ? acct.peak_time_ns : total.peak_time_ns)})]));
    var plotDiv = el('div');
    box.appendChild(plotDiv);
    var instant = el('div', {cls: 'instant', hidden: ''});
    tl.appendChild(box);
    tl.appendChild(instant);

    var peakX = axisS(t, acct ? acct.peak_time_ns : total.peak_time_ns);
    var fails = failuresOf(t, device).map(function (f) { return axisS(t, f.time_ns); });
    var steps = (t.report.phases && t.report.phases.steps) || [];
    function vline(u, x, color, dash, label) {
      var px = Math.round(u.valToPos(x, 'x', true));
      if (px < u.bbox.left || px > u.bbox.left + u.bbox.width) return;
      var c = u.ctx;
      c.save();
      c.strokeStyle = color; c.lineWidth = 1.5 * devicePixelRatio; c.setLineDash(dash);
      c.beginPath(); c.moveTo(px, u.bbox.top); c.lineTo(px, u.bbox.top + u.bbox.height); c.stroke();
      if (label) {
        c.fillStyle = color; c.font = (11 * devicePixelRatio) + 'px sans-serif';
        c.fillText(label, px + 3 * devicePixelRatio, u.bbox.top + 12 * devicePixelRatio);
      }
      c.restore();
    }
    var opts = {
      width: Math.max(400, tl.clientWidth - 16), height: 240,
      cursor: {drag: {x: true, y: false, setScale: true}, sync: {key: 'cmt'}},
      scales: {x: {time: false}},
      axes: [{label: traces.length > 1 ? 'time (common time axis of the traces)' : 'time since the trace started',
        values: timeTicks},
        {values: function (u, vals) { return vals.map(human); }, size: 80, incrs: BYTE_INCRS}],
      bands: [{series: [1, 2], fill: 'rgba(28,126,214,0.22)'}],
      series: series,
      hooks: {
        drawClear: [function (u) {
          var c = u.ctx;
          c.save();
          c.fillStyle = 'rgba(28,126,214,0.07)';
          for (var i = 0; i < steps.length; i += 2) {
            var a = u.valToPos(axisS(t, steps[i].start_time_ns), 'x', true);
            var e = u.valToPos(axisS(t, steps[i].end_time_ns), 'x', true);
            a = Math.max(a, u.bbox.left); e = Math.min(e, u.bbox.left + u.bbox.width);
            if (e > a) c.fillRect(a, u.bbox.top, Math.max(1, e - a), u.bbox.height);
          }
          c.restore();
        }],
        draw: [function (u) {
          fails.forEach(function (x) { vline(u, x, '#c92a2a', [4 * devicePixelRatio, 3 * devicePixelRatio], null); });
          vline(u, peakX, '#d9480f', [], 'peak');
        }],
        setScale: [function (u, key) {
          if (key !== 'x' || syncing) return;
          syncing = true;
          charts.forEach(function (o) {
            if (o !== u) o.setScale('x', {min: u.scales.x.min, max: u.scales.x.max});
          });
          syncing = false;
        }]
      }
    };
    var u = new uPlot(opts, data, plotDiv);
    u.cmtTrace = ti; u.cmtDevice = device;
    charts.push(u);
    holderChart(box, t, device, xs[0], xs[n - 1]);
    poolChart(box, t, device, xs[0], xs[n - 1]);
    var downX = null;
    u.over.addEventListener('mousedown', function (e) { downX = e.clientX; });
    u.over.addEventListener('click', function (e) {
      if (downX !== null && Math.abs(e.clientX - downX) > 3) return; /* a drag, not a click */
      var idx = u.posToIdx(u.cursor.left);
      if (idx === null || idx === undefined || idx < 0) return;
      showInstant(instant, t, device, idx, all);
    });
  }

  /* Who held the memory (PyTorch's cache, cuBLAS, ..., the rest) over the
   * run: per growth checkpoint interval, the sum of what each call site held
   * throughout it, by the holder its frames name. Drawn when some holder
   * other than the program held memory. */
  var HOLDER_NAMES = {other: 'the program and the rest', pytorch: 'PyTorch', cupy: 'CuPy', xla: 'XLA', rmm: 'RMM',
    cublas: 'cuBLAS', cudnn: 'cuDNN', nccl: 'NCCL', pytorch_host: 'PyTorch\'s host cache'};
  function holderChart(box, t, device, xmin, xmax) {
    var st = t.sites;
    if (!st || !st.by_holder || !st.intervals) return;
    var rows = st.by_holder.filter(function (h) { return h.device === device; });
    if (!rows.some(function (h) { return h.holder !== 'other'; })) return;
    var xs = [];
    for (var c = 0; c < st.intervals; c++) xs.push(axisS(t, st.origin_ns + c * st.interval_ns));
    var fmt = function (u, v) { return v === null || v === undefined ? '-' : both(v); };
    var series = [{label: 'interval from', value: function (u, v) { return v === null ? '-' : secs(Math.round((v - axisS(t, 0)) * 1e9)); }}];
    rows.forEach(function (h, i) {
      series.push({label: HOLDER_NAMES[h.holder] || h.holder, stroke: COLORS[(i + 3) % COLORS.length], width: 1.5,
        paths: uPlot.paths.stepped({align: 1}), points: {show: false}, value: fmt});
    });
    box.appendChild(el('div', {cls: 'chart-help', text: 'By holder, a lower bound: per checkpoint interval, the sum of each call site\'s lowest bytes in it (what was held throughout; coarser than the timeline above)'}));
    var div = el('div', {cls: 'holder-chart'});
    box.appendChild(div);
    var u = new uPlot({width: Math.max(400, tl.clientWidth - 16), height: 150,
      scales: {x: {time: false, range: function (u, min, max) { return u.cmtZoomed ? [min, max] : [xmin, xmax]; }}},
      cursor: {drag: {x: true, y: false, setScale: true}, sync: {key: 'cmt'}},
      axes: [{values: timeTicks}, {values: function (u, vals) { return vals.map(human); }, size: 80, incrs: BYTE_INCRS}],
      series: series,
      hooks: {setScale: [function (u, key) {
        if (key !== 'x' || syncing) return;
        syncing = true;
        charts.forEach(function (o) { if (o !== u) o.setScale('x', {min: u.scales.x.min, max: u.scales.x.max}); });
        syncing = false;
      }]}}, [xs].concat(rows.map(function (h) { return h.floor; })), div);
    u.cmtZoomed = true; /* from now on setScale (zoom, sync) decides the range */
    charts.push(u);
  }

  /* The stream-ordered pools of a device over time: what they reserved from
   * the device and what of it was in use, at each of the driver's device
   * samples. Drawn when the device's pools ever reserved memory. */
  function poolChart(box, t, device, xmin, xmax) {
    var p = (t.pools || []).filter(function (q) { return q.device === device; })[0];
    if (!p || !p.time_ns.length) return;
    var xs = p.time_ns.map(function (ns) { return axisS(t, ns); });
    var fmt = function (u, v) { return v === null || v === undefined ? '-' : both(v); };
    var series = [{label: 'sample at', value: function (u, v) { return v === null ? '-' : secs(Math.round((v - axisS(t, 0)) * 1e9)); }},
      {label: 'pool reserved', stroke: COLORS[1 % COLORS.length], width: 1.5, paths: uPlot.paths.stepped({align: 1}), points: {show: false}, value: fmt},
      {label: 'pool used', stroke: COLORS[2 % COLORS.length], width: 1.5, paths: uPlot.paths.stepped({align: 1}), points: {show: false}, value: fmt}];
    var top = function (a) { var k = 0; for (var i = 1; i < a.length; i++) if (a[i] > a[k]) k = i; return k; };
    var r = top(p.reserved), un = top(p.used);
    box.appendChild(el('div', {cls: 'chart-help', text: 'Stream-ordered pools (cudaMallocAsync): reserved from the device and in use, at each of the driver\'s ' +
      p.time_ns.length + ' device samples; at most ' + both(p.reserved[r]) + ' reserved at ' + secs(p.time_ns[r]) +
      ', ' + both(p.used[un]) + ' in use at ' + secs(p.time_ns[un])}));
    var div = el('div', {cls: 'pool-chart'});
    div.dataset.device = device;
    div.dataset.peakReserved = p.reserved[r];
    div.dataset.peakUsed = p.used[un];
    box.appendChild(div);
    var u = new uPlot({width: Math.max(400, tl.clientWidth - 16), height: 150,
      scales: {x: {time: false, range: function (u, min, max) { return u.cmtZoomed ? [min, max] : [xmin, xmax]; }}},
      cursor: {drag: {x: true, y: false, setScale: true}, sync: {key: 'cmt'}},
      axes: [{values: timeTicks}, {values: function (u, vals) { return vals.map(human); }, size: 80, incrs: BYTE_INCRS}],
      series: series,
      hooks: {setScale: [function (u, key) {
        if (key !== 'x' || syncing) return;
        syncing = true;
        charts.forEach(function (o) { if (o !== u) o.setScale('x', {min: u.scales.x.min, max: u.scales.x.max}); });
        syncing = false;
      }]}}, [xs, p.reserved, p.used], div);
    u.cmtZoomed = true; /* from now on setScale (zoom, sync) decides the range */
    u.cmtPool = {device: device, reserved: p.reserved, used: p.used};
    charts.push(u);
  }

  /* what was live in bucket idx: every series, and the call sites */
  function showInstant(box, t, device, idx, all) {
    var m = t.timeline;
    box.hidden = false;
    box.textContent = '';
    var from = (m.origin_ns || 0) + idx * m.bucket_ns, to = Math.min(from + m.bucket_ns, m.end_ns);
    var step = null;
    ((t.report.phases && t.report.phases.steps) || []).forEach(function (s) {
      if (s.start_time_ns <= from && (s.end_time_ns === null || s.end_time_ns >= from)) step = s;
    });
    box.appendChild(el('div', null, [el('b', {text: 'From ' + secs(from) + ' to ' + secs(to) + ' (since the trace started)'}),
      step ? ' · ' + step.name : '', ' · ', count(m.allocs[idx], 'allocation') + ', ' + count(m.frees[idx], 'release') + ', ' + count(m.failures[idx], 'failure')]));
    box.appendChild(table([{name: 'series'}, {name: 'lowest', num: 1}, {name: 'highest', num: 1}, {name: 'at the end', num: 1}],
      all.filter(function (s) { return s.max.some(function (v) { return v > 0; }); }),
      function (s) { return [seriesLabel(s), both(s.min[idx]), both(s.max[idx]), both(s.last[idx])]; }));
    var st = t.sites;
    if (st && st.list && st.intervals) {
      var c = Math.floor((from - st.origin_ns) / st.interval_ns);
      if (c < 0 || c >= st.intervals) {
        box.appendChild(el('div', {cls: 'muted', text: 'No complete checkpoint interval covers this instant: the call sites are known from ' +
          secs(st.origin_ns) + ' to ' + secs(st.origin_ns + st.intervals * st.interval_ns) + '.'}));
        return;
      }
      var live = st.list.filter(function (x) { return x.device === device && x.floor[c] > 0; })
        .sort(function (a, b) { return b.floor[c] - a.floor[c]; });
      box.appendChild(el('div', {text: 'Call sites holding memory throughout ' + secs(st.origin_ns + c * st.interval_ns) + ' to ' +
        secs(st.origin_ns + (c + 1) * st.interval_ns) + ' (the least each held then; ' + live.length + ' sites):'}));
      box.appendChild(table([{name: 'bytes held throughout', num: 1}, {name: 'kind'}, {name: 'call site'}], live,
        function (x) { return [both(x.floor[c]), x.kind, siteCell(x.frames, x.site_frame)]; }));
    }
  }

  /* several traces: every trace's device totals on one chart first */
  function drawJob() {
    var lines = [];
    traces.forEach(function (t, ti) {
      (t.report.devices || []).forEach(function (d) {
        var s = seriesOf(t, d.ordinal).filter(function (x) { return x.layer === 'kind' && x.name === 'total'; })[0];
        if (s) lines.push({t: t, ti: ti, d: d, s: s});
      });
    });
    if (traces.length < 2 || lines.length < 2) return;
    var pts = [];
    lines.forEach(function (l, li) {
      var m = l.t.timeline;
      for (var b = 0; b < m.buckets; b++) pts.push([axisS(l.t, (m.origin_ns || 0) + b * m.bucket_ns), li, l.s.max[b]]);
    });
    pts.sort(function (a, b) { return a[0] - b[0]; });
    var xs = [], cols = lines.map(function () { return []; });
    pts.forEach(function (p) {
      if (!xs.length || xs[xs.length - 1] !== p[0]) { xs.push(p[0]); cols.forEach(function (c) { c.push(null); }); }
      cols[p[1]][xs.length - 1] = p[2];
    });
    var fmt = function (u, v) { return v === null || v === undefined ? '-' : both(v); };
    var series = [{label: 'time', value: function (u, v) { return v === null ? '-' : secs(Math.round(v * 1e9)); }}];
    lines.forEach(function (l, li) {
      series.push({label: traceName(l.t).replace(/ \(pid \d+\)$/, '') + ' dev ' + l.d.ordinal, stroke: COLORS[li % COLORS.length],
        width: 1.25, spanGaps: true, value: fmt});
    });
    var box = el('div', {cls: 'chart-box', id: 'job-chart'});
    box.appendChild(el('div', {cls: 'chart-head'}, [el('span', {cls: 'name', text: 'Every trace: device live bytes (highest per bucket)'}),
      el('span', {cls: 'muted', text: 'highest peak ' + both(Math.max.apply(null, lines.map(function (l) { return l.d.peak_bytes; }))) +
        ', lowest ' + both(Math.min.apply(null, lines.map(function (l) { return l.d.peak_bytes; })))})]));
    var div = el('div');
    box.appendChild(div);
    tl.appendChild(box);
    var u = new uPlot({width: Math.max(400, tl.clientWidth - 16), height: 260, scales: {x: {time: false}},
      cursor: {drag: {x: true, y: false, setScale: true}, sync: {key: 'cmt'}},
      axes: [{label: 'time (common time axis of the traces)', values: timeTicks}, {values: function (u, vals) { return vals.map(human); }, size: 80, incrs: BYTE_INCRS}],
      series: series,
      hooks: {setScale: [function (u, key) {
        if (key !== 'x' || syncing) return;
        syncing = true;
        charts.forEach(function (o) { if (o !== u) o.setScale('x', {min: u.scales.x.min, max: u.scales.x.max}); });
        syncing = false;
      }]}}, [xs].concat(cols), div);
    charts.push(u);
  }
  drawJob();

  traces.forEach(function (t, ti) {
    var r = t.report;
    (r.devices || []).forEach(function (d) { drawChart(t, ti, d.ordinal, d); });
    (r.pinned_host || []).forEach(function (d) { if (d.peak_bytes) drawChart(t, ti, -1, d); });
  });
  window.addEventListener('resize', function () {
    charts.forEach(function (u) { u.setSize({width: Math.max(400, tl.clientWidth - 16), height: 240}); });
  });

  /* ---- per trace: the peak's flame graph and the findings --------------- */
  function treeToHierarchy(tree) {
    var nodes = tree.nodes, byId = {};
    nodes.forEach(function (n) {
      var f = n.id === 0 ? null : n;
      byId[n.id] = {name: n.id === 0 ? 'all live at the peak' : frameShort(n), value: n.inclusive_bytes,
        count: n.inclusive_count, frame: f, python: isPython(n), children: []};
      if (n.hidden_bytes) byId[n.id].hidden = n;
    });
    nodes.forEach(function (n) {
      if (n.parent !== null && byId[n.parent]) { byId[n.id].up = byId[n.parent]; byId[n.parent].children.push(byId[n.id]); }
    });
    nodes.forEach(function (n) {
      if (n.hidden_bytes) byId[n.id].children.push({name: '(' + n.hidden_paths + ' smaller paths)', value: n.hidden_bytes,
        count: n.hidden_count, frame: null, hiddenNode: true, up: byId[n.id], children: []});
    });
    return byId[0];
  }
  function flameGraph(parent, t, ti, d) {
    var tree = d.peak_call_tree;
    if (!tree || !tree.nodes || tree.nodes.length < 2) return;
    var h = treeToHierarchy(tree);
    var wrap = el('div', {cls: 'flame-box', id: 'flame-' + ti + '-' + d.ordinal});
    var details = el('div', {cls: 'flame-details', text: 'Hover a frame for its bytes; click it to zoom in and see its whole stack.'});
    var stackBox = el('div', {cls: 'flame-stack', hidden: ''});
    parent.appendChild(el('div', {cls: 'muted', text: 'Live at the peak of device ' + d.ordinal + ' (' + both(d.peak_bytes) +
      '): an icicle, outermost frame on top; width is bytes. Blue frames are Python.'}));
    parent.appendChild(wrap);
    parent.appendChild(details);
    parent.appendChild(stackBox);
    var chart = flamegraph.default()
      .width(Math.max(400, (wrap.clientWidth || 900) - 10)).cellHeight(18).inverted(true).sort(true)
      .minFrameSize(2).transitionDuration(0).title('') /* no animation: a zoom is drawn at once */
      .setDetailsElement(details)
      .setLabelHandler(function (n) {
        return n.data.name + ': ' + both(n.data.value) + ', ' + count(n.data.count, 'allocation') + ', ' +
          (100 * n.data.value / tree.total_bytes).toFixed(1) + '%';
      })
      .setColorMapper(function (n, orig) {
        if (n.data.hiddenNode) return '#ced4da';
        if (!n.data.frame) return '#adb5bd';
        if (n.data.python) return '#74c0fc';
        return orig;
      })
      .onClick(function (n) { showStack(stackBox, n.data); });
    d3.select(wrap).datum(h).call(chart);
    /* new frames grow in over 250 ms whatever the duration set (d3-flame-graph
     * 5.0.0); drawing again replaces that with the zero-length transition */
    chart.update();
    wrap.cmtFlame = chart;
  }
  function showStack(box, node) {
    box.hidden = false;
    box.textContent = '';
    var frames = [];
    for (var p = node; p; p = p.up) if (p.frame) frames.push(p.frame);
    box.appendChild(el('div', null, [el('b', {text: node.name}), ' holds ' + both(node.value) + ' in ' + count(node.count, 'allocation') + '. Its stack, innermost first:']));
    box.appendChild(framesList(frames, 0));
  }

  /* PyTorch's block layer (docs/report.md, "Inside PyTorch's cache"): the
   * tensors inside the caching allocator's segments, per device */
  function blocksSections(parent, r) {
    var b = r.blocks;
    if (!b) return;
    (b.devices || []).forEach(function (d) {
      var sec = section(parent, 'Device ' + d.ordinal + ': inside PyTorch\'s cache');
      sec.className = 'blocks';
      sec.setAttribute('data-device', String(d.ordinal));
      sec.appendChild(el('div', {cls: 'cards'}, [
        card('blocks-allocated', 'peak allocated (tensors)', human(d.peak_allocated_bytes), exact(d.peak_allocated_bytes) +
          ' at ' + secs(d.at_peak.ts_ns), {'peak-allocated-bytes': d.peak_allocated_bytes}),
        card('blocks-reserved', 'peak reserved (segments)', human(d.peak_reserved_bytes), exact(d.peak_reserved_bytes),
          {'peak-reserved-bytes': d.peak_reserved_bytes}),
        card('blocks-cache', 'reserved but unallocated at the tensors\' peak', human(d.at_peak.unallocated_bytes),
          exact(d.at_peak.unallocated_bytes) + ' (caching and fragmentation)', {'unallocated-bytes': d.at_peak.unallocated_bytes}),
        card('blocks-leaked', 'tensors never released', human(d.leaked_bytes), exact(d.leaked_bytes) + ' in ' + count(d.leaked_blocks, 'tensor'),
          {'leaked-bytes': d.leaked_bytes, 'leaked-blocks': d.leaked_blocks})]));
      var ap = d.at_peak;
      sec.appendChild(el('div', {text: 'At the tensors\' peak (' + secs(ap.ts_ns) + '): allocated ' + both(ap.allocated_bytes) +
        ', requested ' + both(ap.requested_bytes) + ', reserved ' + both(ap.reserved_bytes) + ', reserved but unallocated ' +
        both(ap.unallocated_bytes) + '.'}));
      sec.appendChild(el('h4', {text: 'Reserved but unallocated, by segment size class, at the tensors\' peak'}));
      var cls = sec.appendChild(table([{name: 'class'}, {name: 'segments', num: 1}, {name: 'reserved', num: 1}, {name: 'allocated', num: 1},
        {name: 'unallocated', num: 1}, {name: 'largest free range', num: 1}], ap.size_classes || [], function (c) {
        return [c['class'], c.segments, both(c.reserved_bytes), both(c.allocated_bytes), both(c.unallocated_bytes), both(c.largest_free_bytes)];
      }));
      cls.className = 'blocks-classes';
      sec.appendChild(el('h4', {text: 'Tensors live at the peak, by call site'}));
      var st = sec.appendChild(table([{name: 'bytes', num: 1}, {name: 'tensors', num: 1}, {name: 'call site'}], ap.sites || [],
        function (x) { return [both(x.bytes), x.blocks, siteCell(x.frames, x.site_frame)]; }));
      st.className = 'blocks-sites';
      sec.appendChild(el('h4', {text: 'Failed allocations, by both layers'}));
      if (!d.failures || !d.failures.length) sec.appendChild(el('div', {cls: 'blocks-failures', text: 'none'}));
      else {
        var ft = sec.appendChild(table([{name: 'when', num: 1}, {name: 'asked', num: 1}, {name: 'rounded', num: 1}, {name: 'free on the device', num: 1},
          {name: 'verdict'}, {name: 'why'}, {name: 'call site'}], d.failures, function (f) {
          return [secs(f.cache.ts_ns), both(f.requested_bytes), both(f.rounded_bytes), both(f.device_free_bytes),
            el('span', {cls: 'verdict', text: f.verdict}),
            el('div', null, [el('div', {text: f.explanation}),
              el('div', {cls: 'muted', text: f.replayed && f.replayed.what_to_try ? 'Try: ' + f.replayed.what_to_try :
                f.expandable_segments_would_serve ? 'Try: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True' : ''}),
              f.replayed ? replayedList(f.replayed) : null]),
            siteCell(f.frames, f.site_frame)];
        }));
        ft.className = 'blocks-failures';
      }
      sec.appendChild(el('h4', {text: 'Tensors never released'}));
      if (!d.leaks || !d.leaks.length) sec.appendChild(el('div', {cls: 'blocks-leaks', text: 'none'}));
      else {
        var lt = sec.appendChild(table([{name: 'bytes', num: 1}, {name: 'tensors', num: 1}, {name: 'call site'}], d.leaks,
          function (x) { return [both(x.bytes), x.blocks, siteCell(x.frames, x.site_frame)]; }));
        lt.className = 'blocks-leaks';
      }
      if (d.suppressed && d.suppressed.length) {
        sec.appendChild(el('div', {text: 'Suppressed, not counted as leaks (as cumemtrace check applies the suppressions): ' +
          both(d.suppressed_bytes) + ' in ' + count(d.suppressed_blocks, 'tensor')}));
        var st = sec.appendChild(table([{name: 'bytes', num: 1}, {name: 'tensors', num: 1}, {name: 'suppressed by'}, {name: 'call site'}],
          d.suppressed, function (x) { return [both(x.bytes), x.blocks, suppressionText(x.suppression), siteCell(x.frames, x.site_frame)]; }));
        st.className = 'blocks-suppressed';
      }
    });
  }

  /* PyTorch's tensors (docs/report.md, "Tensors"): what the page leads a
   * trace with when it has the block layer: the categories at the tensors'
   * peak with the cache's reserve beside them, a stacked chart of them over
   * time, each phase's peak, the tensors at the peak by call site, growth
   * per step, the tensors alive at exit with the leak rule's answer, and
   * advice with the bytes it acts on. */
  var CATEGORY_NAMES = {parameters: 'parameters', gradients: 'gradients', optimizer_state: 'optimizer state',
    activations: 'activations (saved for backward)', temporaries: 'temporaries', cublas: 'cuBLAS workspaces',
    cudnn: 'cuDNN workspaces', nccl: 'NCCL buffers', other: 'the rest', reserve: 'the cache\'s reserve'};
  var CATEGORY_COLORS = {parameters: '#1c7ed6', gradients: '#e8590c', optimizer_state: '#7048e8', activations: '#2b8a3e',
    temporaries: '#fab005', cublas: '#0c8599', cudnn: '#15aabf', nccl: '#99e9f2', other: '#c2255c', reserve: '#ced4da'};
  function categoryText(cats) {
    var parts = [];
    for (var k in cats) if (cats[k]) parts.push(CATEGORY_NAMES[k] + ' ' + human(cats[k]));
    return parts.join(', ') || 'none';
  }
  function stackedChart(box, t, d) {
    var c = d.chart;
    if (!c || !c.buckets) return;
    var keys = Object.keys(c.bytes).filter(function (k) { return c.bytes[k].some(function (v) { return v > 0; }); });
    var xs = c.time_ns.map(function (ns) { return axisS(t, ns); });
    /* cumulative sums, the last category on top: each series is filled
     * down to the axis and drawn over the ones above it */
    var cum = [], acc = xs.map(function () { return 0; });
    keys.forEach(function (k) {
      acc = acc.map(function (v, i) { return v + c.bytes[k][i]; });
      cum.push(acc.slice());
    });
    var data = [xs], series = [{label: 'time', value: function (u, v) { return v === null ? '-' : secs(Math.round((v - axisS(t, 0)) * 1e9)); }}];
    for (var i = keys.length - 1; i >= 0; i--) {
      (function (k) {
        data.push(cum[keys.indexOf(k)]);
        series.push({label: CATEGORY_NAMES[k], stroke: CATEGORY_COLORS[k], fill: CATEGORY_COLORS[k], width: 1, paths: STEPPED,
          value: function (u, v, si, idx) { return idx === null || idx === undefined ? '-' : both(c.bytes[k][idx]); }});
      })(keys[i]);
    }
    var plot = el('div');
    box.appendChild(plot);
    var u = new uPlot({width: Math.max(400, (box.clientWidth || 800) - 16), height: 240, scales: {x: {time: false}},
      cursor: {sync: {key: 'cmt'}},
      axes: [{label: 'time since the trace started', values: timeTicks}, {values: function (u, vals) { return vals.map(human); }, size: 80, incrs: BYTE_INCRS}],
      series: series}, data, plot);
    u.cmtTrace = -1;
    charts.push(u);
  }
  function tensorsSections(parent, t, r) {
    var ts = r.tensors;
    if (!ts) return;
    var steps = ts.steps;
    (ts.devices || []).forEach(function (d) {
      var p = d.peak;
      if (!p) return;
      var sec = section(parent, 'Device ' + d.device + ': PyTorch\'s tensors');
      sec.className = 'tensors';
      sec.setAttribute('data-device', String(d.device));
      var a = ts.alive_at_exit, lk = ts.leaks;
      var g = steps.growth;
      sec.appendChild(el('div', {cls: 'cards'}, [
        card('peak', 'tensors at their peak (' + p.phase + ')', human(p.allocated_bytes), exact(p.allocated_bytes) + ' at ' + secs(p.time_ns),
          {'peak-allocated-bytes': p.allocated_bytes}),
        card('', 'the cache\'s reserve beside them', human(p.categories.reserve), 'reserved ' + both(p.reserved_bytes),
          {'reserve-bytes': p.categories.reserve}),
        card(lk.bytes ? 'leak' : 'good', 'kept step after step (leaks)', human(lk.bytes),
          exact(lk.bytes) + ' in ' + count(lk.count, 'tensor') + ' when the work ended; ' + human(a.bytes) + ' alive at exit in all',
          {'leak-bytes': lk.bytes}),
        card(g.growing ? 'leak' : 'good', 'growth per step', g.growing ? '+' + human(g.rate_bytes_per_step) : (g.samples ? 'none' : '-'),
          steps.count + ' steps, ' + steps.source, {'step-rate-bytes': g.growing ? g.rate_bytes_per_step : 0})]));
      sec.appendChild(el('div', {cls: 'muted', text: 'Steps: ' + steps.rule + '.'}));
      sec.appendChild(el('h4', {text: 'By category at the peak (each tensor as what it turned out to be)'}));
      var rows = [];
      for (var k in p.categories) if (p.categories[k]) rows.push(k);
      var ct = sec.appendChild(table([{name: 'category'}, {name: 'bytes', num: 1}, {name: 'share of the device memory then', num: 1}], rows,
        function (k) {
          return [el('span', null, [el('span', {cls: 'legend-key', style: 'background:' + CATEGORY_COLORS[k]}), CATEGORY_NAMES[k]]),
            both(p.categories[k]), (100 * p.categories[k] / p.device_bytes).toFixed(1) + '%'];
        }));
      ct.className = 'tensors-categories';
      var box = el('div', {cls: 'chart-box'}, [el('div', {cls: 'chart-head'}, [el('span', {cls: 'name', text: 'Categories over time, stacked'}),
        el('span', {cls: 'muted', text: 'each column the highest instant of its span of time'})])]);
      sec.appendChild(box);
      stackedChart(box, t, d);
      var ph = [];
      for (var n in d.phases) if (d.phases[n]) ph.push([n, d.phases[n]]);
      var pt = sec.appendChild(table([{name: 'phase'}, {name: 'its peak of tensors', num: 1}, {name: 'when', num: 1}, {name: 'by category'}], ph,
        function (x) { return [x[0], both(x[1].allocated_bytes), secs(x[1].time_ns), categoryText(x[1].categories)]; }));
      pt.className = 'tensors-phases';
      var bd = r.blocks && (r.blocks.devices || []).filter(function (b) { return b.ordinal === d.device; })[0];
      if (bd && bd.at_peak && bd.at_peak.sites) {
        sec.appendChild(el('h4', {text: 'Tensors live at the peak, by call site'}));
        var st = sec.appendChild(table([{name: 'bytes', num: 1}, {name: 'tensors', num: 1}, {name: 'call site'}], bd.at_peak.sites,
          function (x) { return [both(x.bytes), x.blocks, siteCell(x.frames, x.site_frame)]; }));
        st.className = 'tensors-sites';
      }
      var adv = (ts.advice || []).filter(function (x) { return x.device === d.device; });
      if (adv.length) {
        sec.appendChild(el('h4', {text: 'What to try, with the bytes each acts on at the peak'}));
        var ul = sec.appendChild(el('ul', {cls: 'tensors-advice'}));
        adv.forEach(function (x) { ul.appendChild(el('li', {'data-category': x.category, 'data-bytes': x.bytes, text: x.text})); });
      }
    });
    var gsec = section(parent, 'PyTorch\'s tensors: growth, leaks and what was alive at exit');
    gsec.className = 'tensors-exit';
    var grow = ts.growth || [];
    gsec.appendChild(el('h4', {text: 'Growing tensor call sites'}));
    if (!grow.length) gsec.appendChild(el('div', {cls: 'tensors-growth', text: 'none'}));
    else {
      var gt = gsec.appendChild(table([{name: 'rate', num: 1}, {name: 'held when the work ended', num: 1}, {name: 'alive at exit', num: 1},
        {name: 'allocations', num: 1}, {name: 'frees', num: 1}, {name: 'call site'}],
        grow, function (x) {
          return [x.per_step ? '+' + both(x.rate_bytes_per_step) + ' per step' : '+' + human(x.rate_bytes_per_second) + '/s',
            both(x.kept_bytes), both(x.live_bytes), x.allocations, x.frees, siteCell(x.frames, x.site_frame)];
        }));
      gt.className = 'tensors-growth';
    }
    var leaks = ts.leaks;
    gsec.appendChild(el('h4', {text: 'Leaks (kept step after step and held when the work ended, ' + secs(leaks.work_end_time_ns) + '): ' +
      both(leaks.bytes) + ' in ' + count(leaks.count, 'tensor')}));
    var lt = gsec.appendChild(table([{name: 'held when the work ended', num: 1}, {name: 'tensors', num: 1}, {name: 'rate', num: 1},
      {name: 'alive at exit', num: 1}, {name: 'call site'}],
      leaks.sites || [], function (x) {
        return [both(x.kept_bytes), x.kept_count,
          el('span', {cls: 'verdict', text: x.per_step ? '+' + human(x.rate_bytes_per_step) + ' per step' : '+' + human(x.rate_bytes_per_second) + '/s'}),
          both(x.live_bytes), siteCell(x.frames, x.site_frame)];
      }));
    lt.className = 'tensors-leaks';
    var alive = ts.alive_at_exit;
    gsec.appendChild(el('h4', {text: 'Tensors alive at exit: ' + both(alive.bytes) + ' in ' + count(alive.count, 'tensor')}));
    var at = gsec.appendChild(table([{name: 'bytes', num: 1}, {name: 'tensors', num: 1}, {name: 'made by'}, {name: 'verdict'}, {name: 'call site'}],
      alive.sites || [], function (x) {
        return [both(x.live_bytes), x.live_count, x.origin,
          x.suppression ? suppressionText(x.suppression) : 'alive at exit, not a leak', siteCell(x.frames, x.site_frame)];
      }));
    at.className = 'tensors-alive';
  }

  /* What if (docs/report.md, "What if"): the recorded tensors replayed
   * through PyTorch's caching allocator under the usual settings, per device */
  function signedHuman(n) { return n === 0 ? 'same' : (n > 0 ? '+' : '-') + human(Math.abs(n)); }
  function whatifSections(parent, r) {
    var w = r.whatif;
    if (w && w.source === 'none') {
      var none = section(parent, 'What if (PyTorch\'s caching allocator replayed)');
      none.className = 'whatif';
      none.appendChild(el('div', {cls: 'whatif-none', text: w.reason}));
      return;
    }
    if (!w || !w.devices) return;
    w.devices.forEach(function (d) {
      var sec = section(parent, 'Device ' + d.ordinal + ': what if (PyTorch\'s caching allocator replayed)');
      sec.className = 'whatif';
      sec.setAttribute('data-device', String(d.ordinal));
      var rows = d.settings || [];
      var best = rows.filter(function (x) { return x.setting === d.best; })[0];
      var rec = rows.filter(function (x) { return x.recorded; })[0];
      sec.appendChild(el('div', {cls: 'cards'}, [
        card('whatif-recorded', 'recorded reserved peak', human(d.recorded.peak_reserved_bytes), exact(d.recorded.peak_reserved_bytes) +
          (d.replays_exactly ? ', replayed to the byte' : ''), {'recorded-reserved-bytes': d.recorded.peak_reserved_bytes}),
        card('whatif-best', 'fits with the least reserve', best ? best.label : 'none of these',
          best ? human(best.peak_reserved_bytes) + ' reserved, ' + signedHuman(best.vs_recorded_bytes) + ' against the recorded run' :
            'every setting runs out of memory', best ? {'best-reserved-bytes': best.peak_reserved_bytes} : null),
        card('whatif-room', 'room for PyTorch\'s cache', d.min_room_bytes === null ? 'unknown' : human(d.min_room_bytes),
          d.capacity_bytes === null ? 'the device\'s size is unknown' : 'of ' + human(d.capacity_bytes) + '; the context and other libraries took up to ' +
            human(d.outside_cache_max_bytes))]));
      var how = w.source === 'uncached' ? 'PyTorch ran with its cache off; its ' + count(d.tensor_requests, 'tensor') + ' replayed with the cache' :
        d.tensor_requests + ' tensor requests replayed';
      var settings = w.recorded_settings.known ? (w.recorded_settings.variable ? w.recorded_settings.variable + '=' + w.recorded_settings.value : 'the defaults') :
        (rec ? rec.label : 'the defaults') + (w.recorded_settings.inferred ? ' (inferred: this trace did not record them)' : ' (assumed)');
      sec.appendChild(el('div', {text: how + '; recorded settings: ' + settings + '.'}));
      if (w.assumes) sec.appendChild(el('div', {cls: 'muted whatif-assumes', text: 'With PyTorch\'s cache these requests would reserve as below; this assumes ' + w.assumes + '.'}));
      var t = sec.appendChild(table([{name: 'setting'}, {name: 'reserved peak', num: 1}, {name: 'vs recorded', num: 1},
        {name: 'allocated peak', num: 1}, {name: 'cache at the peak', num: 1}, {name: 'segments', num: 1}, {name: 'out of memory'}], rows,
        function (x) {
          var f = x.first_failure;
          var oom = !x.out_of_memory ? (x.garbage_collection_inert ? 'no (garbage collection inert without a memory fraction)' : 'no') :
            el('div', null, [el('span', {cls: 'verdict', text: f.verdict}),
              el('div', {cls: 'muted', text: 'at ' + secs(f.time_ns) + ': ' + both(f.requested_bytes) + (f.site ? ' at ' + f.site : '') +
                (f.phase ? ', in ' + f.phase : '') + (f.short_by_bytes ? '; the peak must be ' + human(f.short_by_bytes) + ' smaller' : '')})]);
          /* a setting that runs out where the recorded run did not: its peaks up to that failure, not a saving */
          var cut = x.out_of_memory && !f.recorded_run_failed_it, upTo = cut ? ' up to its first failure' : '';
          return [x.label + (x.recorded ? ' (recorded)' : ''), both(x.peak_reserved_bytes) + upTo,
            cut ? '-' : signedHuman(x.vs_recorded_bytes), both(x.peak_allocated_bytes) + upTo, human(x.unallocated_at_peak.total),
            x.maps ? x.maps + ' mappings' : String(x.segments_made), oom];
        }));
      t.className = 'whatif-settings';
    });
  }

  /* A PyTorch failure's replay under the usual settings: each setting, whether it serves the request, the
     reserve it reaches (docs/fragmentation.md, "What to try"). */
  function replayedList(p) {
    return el('ul', {cls: 'replayed'}, p.settings.map(function (x) {
      return el('li', {text: x.label + (x.recorded ? ' (recorded)' : '') + ': ' +
        (x.outcome === 'no-failure' ? 'no failure, reserved peak ' + human(x.peak_reserved_bytes) :
          x.outcome === 'fails-later' ? 'serves it, runs out later (' + x.verdict + ')' :
            'fails' + (x.outcome === 'fails-here' ? ' here' : ' before it') + ' (' + x.verdict + ')')});
    }));
  }

  /* "default.supp:20 (cuBLAS handle state)", as the text report words it */
  function suppressionText(x) {
    if (!x) return '';
    return x.source + ':' + x.line + ' (' + (x.reason || 'leak:' + x.pattern) + ')';
  }

  traces.forEach(function (t, ti) {
    var r = t.report;
    var s = el('section', {id: 'trace-' + ti});
    root.appendChild(s);
    s.appendChild(el('h2', {text: traceName(t)}));
    var p = r.process || {};
    s.appendChild(el('div', {cls: 'muted mono', text: (p.argv || []).join(' ')}));
    if (r.damage) s.appendChild(el('div', {cls: 'warn', text: r.damage}));

    tensorsSections(s, t, r);

    (r.devices || []).forEach(function (d) {
      var sec = section(s, 'Device ' + d.ordinal + ': what was live at the peak');
      if (d.peak_by_holder) {
        var parts = [];
        for (var k in d.peak_by_holder) if (d.peak_by_holder[k]) parts.push(k + ' ' + human(d.peak_by_holder[k]));
        sec.appendChild(el('div', {text: 'At the peak, by holder: ' + parts.join(', ')}));
      }
      if (d.peak_by_kind) {
        var kp = [];
        for (var kk in d.peak_by_kind) if (d.peak_by_kind[kk]) kp.push(kk + ' ' + human(d.peak_by_kind[kk]));
        sec.appendChild(el('div', {text: 'At the peak, by kind: ' + kp.join(', ')}));
      }
      flameGraph(sec, t, ti, d);
      if (d.top_sites_at_peak && d.top_sites_at_peak.length)
        sec.appendChild(table([{name: 'bytes', num: 1}, {name: 'allocations', num: 1}, {name: 'API'}, {name: 'call site'}],
          d.top_sites_at_peak, function (x) {
            return [both(x.bytes), x.count, x.api + (x.exported ? '; exported to another process' : ''), siteCell(x.frames, x.site_frame)];
          }));
    });

    blocksSections(s, r);
    whatifSections(s, r);

    var lk = r.leaks;
    var ls = section(s, leaksTitle(r));
    if (!lk || !lk.count) ls.appendChild(el('div', {text: (r.held_at_exit && r.held_at_exit.length) ? 'none but allocator caches' : 'none'}));
    else {
      ls.appendChild(el('div', {cls: 'leak-total', 'data-leak-bytes': lk.bytes, text: both(lk.bytes) + ' in ' + count(lk.count, 'allocation') + ': allocated once ' + human(lk.once.bytes) + ', allocated repeatedly ' + human(lk.repeated.bytes)}));
      ls.appendChild(table([{name: 'bytes', num: 1}, {name: 'allocations', num: 1}, {name: 'kind'}, {name: 'pattern'}, {name: 'call site'}],
        lk.sites, function (x) {
          return [both(x.bytes), x.count, x.kind, x.pattern + (x.growing ? ', growing' : ''), siteCell(x.frames, x.site_frame)];
        }));
    }
    var sp = lk && lk.suppressed;
    if (sp && sp.sites && sp.sites.length) {
      ls.appendChild(el('div', {cls: 'suppressed-total', 'data-suppressed-bytes': sp.bytes, text: 'Suppressed, not counted as leaks (as cumemtrace check applies the suppressions): ' +
        both(sp.bytes) + ' in ' + count(sp.count, 'allocation')}));
      var spt = ls.appendChild(table([{name: 'bytes', num: 1}, {name: 'allocations', num: 1}, {name: 'kind'}, {name: 'suppressed by'}, {name: 'call site'}],
        sp.sites, function (x) { return [both(x.bytes), x.count, x.kind, suppressionText(x.suppression), siteCell(x.frames, x.site_frame)]; }));
      spt.className = 'suppressed';
    }
    /* memory mapped from another process (CUDA IPC): not this process's, apart from its peaks and leaks */
    var ipc = r.ipc;
    if (ipc && (ipc.mapped.length || ipc.failed_opens || ipc.failed_imports)) {
      var is = section(s, 'Mapped from another process (not this process\'s memory, not in its peaks or leaks)');
      is.appendChild(el('div', {cls: 'ipc-total', 'data-mapped-bytes': ipc.opened_bytes, text: 'peak ' + both(ipc.mapped_peak_bytes) +
        '; opened ' + both(ipc.opened_bytes) + ' in ' + ipc.opened_count + ' mappings, ' + both(ipc.never_closed_bytes) + ' in ' +
        ipc.never_closed_count + ' never closed (leaks of mappings)' + (ipc.failed_opens ? '; ' + ipc.failed_opens + ' failed opens' : '')}));
      if (ipc.mapped.length)
        is.appendChild(table([{name: 'bytes', num: 1}, {name: 'mappings', num: 1}, {name: 'API'}, {name: 'closed'}, {name: 'handle'}, {name: 'call site'}],
          ipc.mapped, function (x) {
            return [x.unknown_size_count === x.count ? 'size unknown (CUDA gives none for an imported pool pointer)' : both(x.bytes),
              x.count, x.api, x.closed ? 'closed' : x.never_closed_count + ' never closed: a leak of a mapping',
              x.handle || '-', siteCell(x.frames, x.site_frame)];
          }));
    }
    if (ipc && ipc.exported.length) {
      var es = section(s, 'Exported to other processes');
      es.appendChild(table([{name: 'bytes', num: 1}, {name: 'API'}, {name: 'when', num: 1}, {name: 'handle'}, {name: 'allocation'}],
        ipc.exported, function (x) {
          return [x.allocation_found ? both(x.bytes) : '-', x.api, secs(x.time_ns), x.handle || '-', siteCell(x.frames, x.site_frame)];
        }));
    }
    (r.held_at_exit || []).forEach(function (hh) {
      var hs = section(s, 'Held by ' + hh.holder + ' at exit (a cache, not a leak)');
      hs.appendChild(el('div', {text: both(hh.bytes) + ' in ' + count(hh.segments, 'segment') + '. ' + (hh.advice || '')}));
      hs.appendChild(table([{name: 'bytes', num: 1}, {name: 'allocations', num: 1}, {name: 'call site'}], hh.sites || [],
        function (x) { return [both(x.bytes), x.count, siteCell(x.frames, x.site_frame)]; }));
    });

    var g = (r.growth && r.growth.candidates) || [];
    var gs = section(s, 'Growing call sites');
    if (!g.length) gs.appendChild(el('div', {text: 'none'}));
    else gs.appendChild(table([{name: 'rate', num: 1}, {name: 'live now', num: 1}, {name: 'allocations', num: 1}, {name: 'frees', num: 1}, {name: 'call site'}],
      g, function (x) { return [human(Math.round(x.rate_bytes_per_second)) + '/s', both(x.live_bytes), x.allocations, x.frees, siteCell(x.frames, x.site_frame)]; }));

    var fs = section(s, 'Failed allocations');
    if (!r.failed_count) fs.appendChild(el('div', {text: 'none'}));
    else {
      var cases = (r.oom && r.oom.cases) || [];
      if (cases.length)
        fs.appendChild(table([{name: 'when', num: 1}, {name: 'device', num: 1}, {name: 'asked', num: 1}, {name: 'verdict'}, {name: 'why, and what to try'}, {name: 'call site'}],
          cases, function (c) {
            return [secs(c.time_ns), c.device, both(c.size), el('span', {cls: 'verdict', text: c.verdict || 'unknown'}),
              el('div', null, [el('div', {text: c.explanation || ''}), el('div', {cls: 'muted', text: c.what_to_try ? 'Try: ' + c.what_to_try : ''}),
                c.replayed ? replayedList(c.replayed) : null]),
              siteCell(c.frames, c.site_frame)];
          }));
      fs.appendChild(table([{name: 'first', num: 1}, {name: 'calls', num: 1}, {name: 'API'}, {name: 'asked', num: 1}, {name: 'error'}, {name: 'verdict'}, {name: 'live then', num: 1}, {name: 'call site'}],
        r.failed || [], function (f) {
          return [secs(f.time_ns), f.count + (f.allocator_retries ? ' (' + f.allocator_retries + ' the allocator\'s own retry)' : ''), f.api,
            both(f.size), f.error, f.probe ? 'allocator probe: asked again and served, not a failure' : f.verdict || '-',
            both(f.live_device_bytes), siteCell(f.frames, f.site_frame)];
        }));
    }

    var fr = r.fragmentation && r.fragmentation.devices;
    if (fr && fr.length) {
      var frs = section(s, 'Fragmentation over time');
      fr.forEach(function (fd) { fragChart(frs, t, fd); });
    }
    /* as the text report: a default pool never used is no pool of the program's */
    var used = (r.pools || []).filter(function (x) { return x.created_in_trace || x.peak_reserved_bytes > 0 || x.trims; });
    var pools = used.filter(function (x) { return x.peak_reserved_bytes > 0; });
    if (used.length && !pools.length)
      section(s, 'Stream-ordered pools').appendChild(el('div', {text: 'none held memory (' + count(used.length, 'pool') + ' created)'}));
    if (pools.length) {
      var ps = section(s, 'Stream-ordered pools');
      ps.appendChild(table([{name: 'pool'}, {name: 'device', num: 1}, {name: 'reserved at exit', num: 1}, {name: 'used at exit', num: 1}, {name: 'peak reserved', num: 1}, {name: 'peak unused', num: 1}, {name: 'trims', num: 1}],
        pools, function (x) {
          return ['0x' + x.handle.toString(16) + (x['default'] ? ' (default)' : ''), x.device, both(x.reserved_bytes), both(x.used_bytes),
            both(x.peak_reserved_bytes) + ' at ' + secs(x.peak_reserved_ns), both(x.peak_unused_bytes), x.trims];
        }));
    }
    if (r.device_samples && r.device_samples.length) {
      var ds = section(s, 'Device memory no event explains');
      ds.appendChild(el('div', {cls: 'muted', text: 'In use on the device (cuMemGetInfo) minus this process\'s live bytes and its pools\' unused bytes: the CUDA context, libraries\' own memory, other processes.'}));
      ds.appendChild(table([{name: 'device', num: 1}, {name: 'samples', num: 1}, {name: 'at the start', num: 1}, {name: 'largest', num: 1}, {name: 'when', num: 1}, {name: 'at the end', num: 1}],
        r.device_samples, function (x) {
          /* as the text: no gap is "all explained", and has no time */
          var gap = x.largest_unexplained.unexplained;
          return [x.ordinal, x.samples, both(x.first.unexplained), gap ? both(gap) : 'all explained', gap ? secs(x.largest_unexplained.time_ns) : '-', both(x.last.unexplained)];
        }));
    }
    var ph = r.phases;
    if (ph && ph.recorded && ph.list && ph.list.length) {
      var phs = section(s, 'Phases');
      phs.appendChild(table([{name: 'phase'}, {name: 'instances', num: 1}, {name: 'peak', num: 1}, {name: 'allocated', num: 1}, {name: 'left live', num: 1}, {name: 'failures', num: 1}],
        ph.list, function (x) { return [x.path, x.instances, both(x.peak_bytes), both(x.allocated_bytes), both(x.left_live_bytes), x.failures]; }));
      var om = ph.list_omitted;
      if (om && om.phases)
        phs.appendChild(el('div', {cls: 'muted phases-omitted', text: om.phases + ' more phases are not in this page (' +
          om.instances + ' instances, ' + both(om.allocated_bytes) + ' allocated, ' + both(om.left_live_bytes) +
          ' left live, ' + om.failures + ' failures in all): cumemtrace report --json lists every one'}));
    }
  });

  function fragChart(parent, t, fd) {
    var pts = fd.series || [];
    /* address space is not memory: said apart from the holes */
    var ex = fd.at_exit || {};
    if (ex.vmm_reserved_bytes || ex.address_space_bytes)
      parent.appendChild(el('div', {cls: 'muted', text: 'Device ' + fd.ordinal + ' at exit: address space reserved (VMM) ' +
        both(ex.vmm_reserved_bytes || 0) + ', mapped ' + both(ex.vmm_mapped_bytes || 0) + '; address space between allocations ' +
        both(ex.address_space_bytes || 0) + ': not memory, no hole is counted in it'}));
    if (!fd.worst) { parent.appendChild(el('div', {text: 'Device ' + fd.ordinal + ': no holes between live allocations were examined'})); return; }
    parent.appendChild(el('div', {text: 'Device ' + fd.ordinal + ': worst at ' + secs(fd.worst && fd.worst.time_ns) + ': ' +
      (fd.worst ? both(fd.worst.holes.free_bytes) + ' free between live allocations in ' + fd.worst.holes.holes + ' holes, largest ' +
      human(fd.worst.holes.largest_hole) + ', ratio ' + fd.worst.holes.ratio : '-')}));
    if (pts.length < 2) return;
    var box = el('div', {cls: 'chart-box'});
    parent.appendChild(box);
    var xs = pts.map(function (p) { return axisS(t, p.time_ns); });
    var fmt = function (u, v) { return v === null || v === undefined ? '-' : both(v); };
    /* Checkpoints, not a signal: each holds until the next one (steps), and
     * nothing is drawn between two as if it slid from one to the other. */
    var step = function (color) { return {stroke: color, paths: STEPPED, points: {show: true, size: 4}, value: fmt}; };
    fragCharts.push(new uPlot({width: Math.max(400, parent.clientWidth - 16), height: 180, scales: {x: {time: false}},
      cursor: {sync: {key: 'cmt'}},
      axes: [{label: 'time of the checkpoint', values: timeTicks}, {values: function (u, vals) { return vals.map(human); }, size: 80, incrs: BYTE_INCRS}],
      series: [{label: 'checkpoint at', value: function (u, v) { return v === null ? '-' : secs(Math.round((v - axisS(t, 0)) * 1e9)); }},
        Object.assign({label: 'live'}, step('#1d2330')), Object.assign({label: 'free in holes'}, step('#e8590c')),
        Object.assign({label: 'largest hole'}, step('#7048e8'))]},
    [xs, pts.map(function (p) { return p.live_bytes; }), pts.map(function (p) { return p.free_bytes; }), pts.map(function (p) { return p.largest_hole; })], box));
  }

  /* ---- the job view from summaries (docs/html.md, "A job from summaries") --
   * v: the model's job_view: the comparison and the jobs as `report --json`
   * gives them. Per job: cards, the ranks' table (100 rows, then a button),
   * the imbalance, memory on other ranks' GPUs, IPC mappings, and the
   * timeline as a heat map (a row per rank, a column per stretch of time). */
  function drawJobView(v, parent) {
    var fromSummaries = v.summaries !== undefined;
    if (!fromSummaries && !(v.jobs || []).length) return; /* traces of no job: their own sections say it all */
    if (fromSummaries)
      document.getElementById('cmt-subtitle').textContent = v.summaries + (v.summaries === 1 ? ' summary' : ' summaries') +
        ' · cumemtrace ' + model.version + (v.settings ? ' · summarised with ' + v.settings : '');
    var cmp = v.comparison || {processes: []};
    var bad = cmp.processes.filter(function (p) { return !p.analysed; });
    if (fromSummaries)
      bad.forEach(function (p) { parent.appendChild(el('p', {cls: 'warn', text: p.trace + ': ' + p.error})); });
    (v.jobs || []).forEach(function (job, ji) { drawOneJob(job, ji, parent); });
    if (!v.jobs || !v.jobs.length)
      parent.appendChild(el('p', {cls: 'muted', text: 'No job: the summaries name no rank of a job of several.'}));
    if (!fromSummaries) return; /* the traces' own overview compares them */
    parent.appendChild(el('h3', {text: 'Comparison of ' + cmp.processes.length + ' processes'}));
    parent.appendChild(table([{name: 'trace'}, {name: 'rank', num: 1}, {name: 'host'}, {name: 'peak', num: 1},
      {name: 'leaks', num: 1}, {name: 'growing', num: 1}, {name: 'failed', num: 1}, {name: 'events', num: 1}],
      cmp.processes.filter(function (p) { return p.analysed; }), function (p) {
        var peak = Math.max.apply(null, (p.devices || []).map(function (d) { return d.peak_bytes; }).concat([0]));
        return [p.trace, p.rank, p.hostname, both(peak), both(p.leak_bytes), p.growth_candidates, p.failed_count, p.events];
      }));
  }
  function drawOneJob(job, ji, parent) {
    var box = el('div', {cls: 'job', id: 'job-' + ji});
    parent.appendChild(box);
    box.appendChild(el('h3', {text: 'Job ' + (job.job_id || 'without an id') + ' (' + job.launcher + '): ' +
      job.ranks.length + ' ranks' + (job.world_size >= 0 ? ' of ' + job.world_size : '') + ', ' +
      job.hosts.length + (job.hosts.length === 1 ? ' host' : ' hosts')}));
    var im = job.imbalance, cards = el('div', {cls: 'cards'});
    if (im) {
      cards.appendChild(card('peak', 'Highest peak', human(im.peak_max_bytes), 'rank ' + im.peak_max_rank + ', ' +
        exact(im.peak_max_bytes), {'job-peak-bytes': im.peak_max_bytes, 'rank': im.peak_max_rank}));
      cards.appendChild(card('', 'Mean peak', human(im.peak_mean_bytes), 'highest / mean ' + im.peak_max_over_mean.toFixed(2)));
      cards.appendChild(card('', 'Lowest peak', human(im.peak_min_bytes), 'rank ' + im.peak_min_rank));
    }
    var leaks = job.ranks.reduce(function (a, r) { return a + r.leak_bytes; }, 0);
    var failing = job.ranks.filter(function (r) { return r.failed_count > 0; });
    cards.appendChild(card(leaks ? 'leak' : 'good', 'Leaks, all ranks', human(leaks), exact(leaks), {'job-leak-bytes': leaks}));
    cards.appendChild(card(failing.length ? 'fail' : 'good', 'Ranks with failed allocations', String(failing.length),
      failing.slice(0, 8).map(function (r) { return 'rank ' + r.rank; }).join(', ')));
    box.appendChild(cards);
    if (job.missing_ranks.length)
      box.appendChild(el('p', {cls: 'warn', text: 'No trace of rank ' + job.missing_ranks.join(', ') + ' (world size ' + job.world_size + ')'}));
    if (job.duplicate_ranks.length)
      box.appendChild(el('p', {cls: 'warn', text: 'More than one trace of rank ' + job.duplicate_ranks.join(', ')}));
    if (job.clock.hosts > 1)
      box.appendChild(el('p', {cls: 'muted', text: 'Clocks of ' + job.clock.hosts + ' hosts, taken to agree within ' +
        secs(job.clock.tolerance_ns) + ': times on different hosts closer than that are not ordered.'}));
    drawJobHeat(job, box);
    box.appendChild(table([{name: 'rank', num: 1}, {name: 'local', num: 1}, {name: 'host'}, {name: 'pid', num: 1},
      {name: 'own device'}, {name: 'peak', num: 1}, {name: 'peak at', num: 1}, {name: 'NCCL', num: 1}, {name: 'leaks', num: 1},
      {name: 'failed', num: 1}, {name: 'largest site at the peak'}], job.ranks, function (r) {
        return [r.rank, r.local_rank >= 0 ? r.local_rank : '-', r.host, r.pid,
          r.own_device === null ? '-' : r.own_device + (r.own_gpu !== String(r.own_device) ? ' (GPU ' + r.own_gpu + ')' : ''),
          el('span', {'data-rank-peak': r.peak_bytes, text: both(r.peak_bytes)}), secs(r.peak_time_ns),
          human(r.peak_by_holder ? r.peak_by_holder.nccl : 0), human(r.leak_bytes) + ' in ' + r.leak_count,
          r.failed_count ? r.failed_count + ', the first of ' + human(r.failed_first_size_bytes) : '0',
          (r.peak_site || '-') + (r.complete ? '' : ' (incomplete)')];
      }));
    if (job.peer_memory.length) {
      box.appendChild(el('div', {text: 'Memory on another rank\'s GPU (each rank should allocate on its own):'}));
      box.appendChild(table([{name: 'rank', num: 1}, {name: 'device', num: 1}, {name: 'GPU'}, {name: 'owner ranks'},
        {name: 'peak there', num: 1}, {name: 'at exit', num: 1}, {name: 'site'}], job.peer_memory, function (p) {
          return [p.rank, p.device, p.gpu, p.owner_ranks.join(', ') || '-', both(p.peak_bytes), both(p.live_at_end_bytes), p.peak_site || '-'];
        }));
    }
    if (job.ipc_mappings.length) {
      box.appendChild(el('div', {text: 'Memory mapped from another process:'}));
      box.appendChild(table([{name: 'rank', num: 1}, {name: 'bytes', num: 1}, {name: 'closed'}, {name: 'exporter rank', num: 1},
        {name: 'exporter site'}, {name: 'opened at'}], job.ipc_mappings, function (m) {
          return [m.rank, both(m.bytes), m.closed ? 'yes' : 'never: a leak of a mapping',
            m.exporter_rank === null ? 'outside these traces' : m.exporter_rank, m.exporter_site || '-', m.site || '-'];
        }));
    }
  }
  /* live bytes on each rank's own device over the job's span: a row per
   * rank, darker for more; hovering says the rank, the time and the bytes */
  function drawJobHeat(job, parent) {
    var t = job.timeline;
    if (!t || !t.columns || !t.ranks.length) return;
    var max = 1;
    t.ranks.forEach(function (r) { r.own_device_max_bytes.forEach(function (b) { if (b > max) max = b; }); });
    var rowH = Math.max(1, Math.min(12, Math.floor(600 / t.ranks.length))), colW = Math.max(2, Math.floor(1000 / t.columns));
    var c = el('canvas', {width: t.columns * colW, height: t.ranks.length * rowH, cls: 'job-heat'});
    var ctx = c.getContext('2d');
    t.ranks.forEach(function (r, ri) {
      r.own_device_max_bytes.forEach(function (b, ci) {
        if (!b) return;
        var f = b / max;
        ctx.fillStyle = 'rgb(' + Math.round(255 - 40 * f) + ',' + Math.round(235 - 200 * f) + ',' + Math.round(200 - 170 * f) + ')';
        ctx.fillRect(ci * colW, ri * rowH, colW, rowH);
      });
    });
    var info = el('div', {cls: 'muted', text: 'Live bytes on each rank\'s own device over the job\'s ' + secs(t.columns * t.column_ns) +
      ' (a row per rank, top to bottom by rank; darkest: ' + both(max) + '). Hover for figures.'});
    c.onmousemove = function (e) {
      var rect = c.getBoundingClientRect();
      var ci = Math.floor((e.clientX - rect.left) * c.width / rect.width / colW);
      var ri = Math.floor((e.clientY - rect.top) * c.height / rect.height / rowH);
      var r = t.ranks[ri];
      if (!r || ci < 0 || ci >= t.columns) return;
      info.textContent = 'rank ' + r.rank + ', ' + secs(ci * t.column_ns) + ' to ' + secs((ci + 1) * t.column_ns) + ': ' +
        both(r.own_device_max_bytes[ci]) + ' at most';
    };
    parent.appendChild(el('div', {cls: 'chart-box'}, [el('div', {cls: 'chart-head'},
      [el('span', {cls: 'name', text: 'The ranks side by side'})]), c, info]));
  }

  /* for whoever drives the page (the suite's headless Chromium) */
  window.cmtReport = {model: model, charts: charts, fragCharts: fragCharts, stepped: STEPPED};
  /* ready once the flame graphs' first transition (d3's timer, on the next
   * animation frame) has put every frame in its place */
  requestAnimationFrame(function () {
    requestAnimationFrame(function () { document.body.setAttribute('data-cmt-ready', '1'); });
  });
})();
