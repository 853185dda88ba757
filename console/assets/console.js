// argo console: live refresh of the overview and the task page, and the
// overview's charts (drawn by the vendored uPlot). Data from the server is
// only ever put into the page with textContent and attribute setters.
(function () {
  "use strict";

  var REFRESH_MS = 5000;
  var body = document.body;
  var root = body.getAttribute("data-root") || "./";
  var live = body.getAttribute("data-live") || "";
  var charts = {};

  function byId(id) { return document.getElementById(id); }

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    if (cls) { e.className = cls; }
    return e;
  }

  function link(href, text, cls) {
    var a = el("a", text, cls);
    a.setAttribute("href", href);
    return a;
  }

  function clear(node) {
    while (node.firstChild) { node.removeChild(node.firstChild); }
  }

  function setText(id, text) {
    var n = byId(id);
    if (n && n.textContent !== String(text)) { n.textContent = String(text); }
  }

  function taskURL(id) { return root + "tasks/" + encodeURIComponent(String(Number(id))); }

  function listURL(params) {
    var q = new URLSearchParams();
    Object.keys(params).forEach(function (k) { if (params[k]) { q.set(k, params[k]); } });
    return root + "tasks?" + q.toString();
  }

  function fmtTime(sec) {
    return new Date(sec * 1000).toISOString().slice(11, 16);
  }

  function getJSON(path, onData) {
    return fetch(root + path, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) {
        if (!r.ok) { throw new Error("HTTP " + r.status); }
        return r.json();
      })
      .then(function (data) { body.removeAttribute("data-stale"); onData(data); })
      .catch(function () { body.setAttribute("data-stale", "true"); });
  }

  // ---- overview ----

  function drawChart(id, series, data) {
    var node = byId(id);
    if (!node || typeof uPlot === "undefined") { return; }
    if (charts[id]) { charts[id].setData(data); return; }
    var opts = {
      width: Math.max(280, node.clientWidth || 600),
      height: 220,
      scales: { x: { time: true } },
      series: [{ value: function (u, v) { return v == null ? "-" : fmtTime(v); } }].concat(series),
      axes: [{}, { size: 80 }],
      hooks: { draw: [function () { node.setAttribute("data-rendered", "true"); }] }
    };
    charts[id] = new uPlot(opts, data, node);
  }

  function drawCharts(d) {
    var o = d.outcomes, l = d.lateness;
    drawChart("chart-outcomes", [
      { label: "succeeded", stroke: "#2e7d32", width: 2 },
      { label: "recovered", stroke: "#00838f", width: 2 },
      { label: "failed", stroke: "#c62828", width: 2 },
      { label: "retried", stroke: "#ef6c00", width: 2 },
      { label: "dead", stroke: "#4a148c", width: 2 }
    ], [o.time, o.succeeded, o.recovered, o.failed, o.retried, o.dead]);
    drawChart("chart-lateness", [
      { label: "p50 ms", stroke: "#1565c0", width: 2 },
      { label: "p95 ms", stroke: "#ad1457", width: 2 }
    ], [l.time, l.p50_ms, l.p95_ms]);
  }

  function emptyRow(tbody, cols, text) {
    var tr = el("tr", null, "empty");
    var td = el("td", text);
    td.setAttribute("colspan", String(cols));
    tr.appendChild(td);
    tbody.appendChild(tr);
  }

  function renderCounts(d) {
    var table = byId("state-counts");
    if (!table) { return; }
    var headRow = el("tr");
    headRow.appendChild(el("th", "task name"));
    headRow.appendChild(el("th", "tenant"));
    d.states.forEach(function (s) { var th = el("th", s); th.setAttribute("data-state", s); headRow.appendChild(th); });
    headRow.appendChild(el("th", "total"));
    headRow.appendChild(el("th", "new dead"));
    var thead = table.tHead; clear(thead); thead.appendChild(headRow);

    var tbody = table.tBodies[0]; clear(tbody);
    d.counts.forEach(function (row) {
      var tr = el("tr");
      tr.setAttribute("data-name", row.name);
      tr.setAttribute("data-tenant", row.tenant);
      tr.appendChild(el("td", row.name, "name"));
      tr.appendChild(el("td", row.tenant || "-"));
      row.counts.forEach(function (n, i) {
        var td = el("td", null, "num");
        if (n) { td.appendChild(link(listURL({ state: d.states[i], name: row.name, tenant: row.tenant }), n)); } else { td.textContent = "0"; }
        tr.appendChild(td);
      });
      tr.appendChild(el("td", row.total, "num"));
      tr.appendChild(el("td", row.dead_growth ? "+" + row.dead_growth : "0", "num dead-growth"));
      tbody.appendChild(tr);
    });
    if (!d.counts.length) { emptyRow(tbody, 2, "no tasks"); }

    var foot = el("tr");
    foot.appendChild(el("th", "all"));
    foot.appendChild(el("th", ""));
    d.totals.forEach(function (n) { foot.appendChild(el("th", n, "num")); });
    foot.appendChild(el("th", ""));
    foot.appendChild(el("th", ""));
    var tfoot = table.tFoot; clear(tfoot); tfoot.appendChild(foot);
  }

  function fillTable(id, rows, cols, emptyText, cells) {
    var table = byId(id);
    if (!table) { return; }
    var tbody = table.tBodies[0]; clear(tbody);
    rows.forEach(function (r) {
      var tr = el("tr");
      cells(r).forEach(function (c) { tr.appendChild(c); });
      tbody.appendChild(tr);
    });
    if (!rows.length) { emptyRow(tbody, cols, emptyText); }
  }

  function fmtISO(s) {
    if (!s || s.indexOf("0001-") === 0) { return "-"; }
    return s.replace("T", " ").replace(/(\.\d{3})\d*/, "$1");
  }

  // breakerForm is the form that opens or closes a flow group's breaker
  // by hand (POST ./breakers/{group}/{action}), as the page first drew it.
  function breakerForm(group, action, label, csrf) {
    var f = el("form", null, "breaker-" + action);
    f.setAttribute("data-group", group);
    f.setAttribute("method", "post");
    f.setAttribute("action", "breakers/" + encodeURIComponent(group) + "/" + action);
    var token = el("input");
    token.setAttribute("type", "hidden");
    token.setAttribute("name", "csrf");
    token.setAttribute("value", csrf);
    f.appendChild(token);
    var button = el("button", label);
    button.setAttribute("type", "submit");
    f.appendChild(button);
    return f;
  }

  function renderOverview(d) {
    setText("overview-at", fmtISO(d.at));
    setText("dead-letters", d.dead_letters + (d.dead_letters_more ? "+" : ""));
    renderCounts(d);
    fillTable("instances", d.instances, 6, "no instance has registered", function (i) {
      return [el("td", i.id), el("td", i.live ? "yes" : "no"), el("td", i.shards), el("td", fmtISO(i.heartbeat)), el("td", i.held_retries, "num"), el("td", (i.names || []).join(", "), "names")];
    });
    var rows = byId("instances") ? byId("instances").tBodies[0].rows : [];
    d.instances.forEach(function (i, n) { if (rows[n]) { rows[n].className = i.live ? "live" : "gone"; } });
    var ul = byId("unrunnable-names");
    if (ul) {
      clear(ul);
      d.unrunnable_names.forEach(function (n) { var li = el("li"); li.appendChild(link(listURL({ name: n }), n)); ul.appendChild(li); });
      if (!d.unrunnable_names.length) { ul.appendChild(el("li", "none: every task name with due tasks has a live instance", "empty")); }
    }
    var breakers = byId("breakers");
    var breakerCSRF = breakers ? breakers.getAttribute("data-csrf") : null;
    fillTable("breakers", d.breakers, breakerCSRF ? 7 : 6, "no flow group", function (b) {
      var cells = [el("td", b.group), el("td", (b.members || []).join(", ")), el("td", b.breaker, "breaker-" + b.breaker), el("td", fmtISO(b.until)), el("td", b.window_ok + " / " + b.window_failed, "num"), el("td", b.granted_slots + " (" + b.granted_instances + " instances)", "num")];
      if (breakerCSRF) {
        var td = el("td", null, "breaker-actions");
        td.appendChild(breakerForm(b.group, "open", "Open", breakerCSRF));
        td.appendChild(document.createTextNode(" "));
        td.appendChild(breakerForm(b.group, "close", "Close", breakerCSRF));
        cells.push(td);
      }
      return cells;
    });
    if (breakers) {
      Array.prototype.forEach.call(breakers.tBodies[0].rows, function (tr, i) {
        if (d.breakers[i]) { tr.setAttribute("data-group", d.breakers[i].group); }
      });
    }
    drawCharts(d);
  }

  // ---- task page ----

  var initialState = null;

  function renderTask(t) {
    var state = byId("task-state");
    if (state) {
      if (initialState === null) { initialState = state.textContent; }
      setText("task-state", t.state);
      state.className = "state state-" + t.state;
      if (t.state !== initialState && !byId("stale-note")) {
        var note = el("p", "The task changed since the page loaded: reload it for the actions that apply now.", "flash");
        note.id = "stale-note";
        state.parentNode.appendChild(note);
      }
    }
    setText("task-attempts", t.attempts);
    setText("task-due", t.due);
    setText("task-modified", t.modified);
    setText("task-lease", t.lease);
    setText("task-progress", t.progress || "-");
    var bar = byId("task-progress-bar");
    if (bar) {
      if (t.progress_fraction === null || t.progress_fraction === undefined) {
        bar.hidden = true;
      } else {
        bar.hidden = false;
        bar.value = t.progress_fraction;
      }
    }
    setText("task-error", t.error);
    setText("task-error-code", t.error_code || "-");

    var ol = byId("attempts");
    if (ol) {
      clear(ol);
      t.timeline.forEach(function (a) {
        var li = el("li", null, "attempt outcome-" + a.outcome);
        li.appendChild(el("span", "#" + a.attempt + " " + a.kind, "n"));
        li.appendChild(document.createTextNode(" "));
        li.appendChild(el("b", a.outcome, "outcome"));
        li.appendChild(document.createTextNode(" at " + a.started + " for " + (a.duration || "-") + " on " + a.worker));
        if (a.progress) {
          li.appendChild(document.createTextNode("; reached "));
          li.appendChild(el("span", a.progress, "progress"));
        }
        if (a.backoff) {
          li.appendChild(document.createTextNode("; next after a backoff of "));
          li.appendChild(el("span", a.backoff, "backoff"));
        }
        if (a.code) {
          li.appendChild(document.createTextNode("; code "));
          li.appendChild(el("code", a.code, "error-code"));
        }
        if (a.error) { li.appendChild(el("pre", a.error, "error")); }
        ol.appendChild(li);
      });
      if (!t.timeline.length) { ol.appendChild(el("li", "no attempt yet", "empty")); }
    }

    fillTable("trail", t.trail, 4, "no operator action yet", function (a) {
      var action = el("td", a.action, "action");
      if (a.other_task) {
        action.appendChild(document.createTextNode(" → "));
        action.appendChild(link(taskURL(a.other_task), "task " + a.other_task));
      }
      return [el("td", a.at), action, el("td", a.operator, "operator"), el("td", a.reason, "reason")];
    });
    fillTable("transitions", t.transitions || [], 7, "no transition recorded yet", function (a) {
      var what = el("td", a.what, "what");
      if (a.other_task) {
        what.appendChild(document.createTextNode(" → "));
        what.appendChild(link(taskURL(a.other_task), "task " + a.other_task));
      }
      var move = el("td", null, "move");
      move.appendChild(el("span", a.from, "state state-" + a.from));
      move.appendChild(document.createTextNode(" → "));
      move.appendChild(el("span", a.to, "state state-" + a.to));
      var trace = el("td", a.trace_id ? null : "-", "trace");
      if (a.trace_id) { trace.appendChild(el("code", a.trace_id)); }
      return [el("td", a.at), el("td", String(a.attempt), "n"), el("td", a.kind, "kind"), what, move, el("td", a.by, "by"), trace];
    });
    var trs = byId("transitions") ? byId("transitions").tBodies[0].rows : [];
    for (var k = 0; k < trs.length; k++) { if (!trs[k].classList.contains("empty")) { trs[k].classList.add("transition"); } }
    var rows = byId("trail") ? byId("trail").tBodies[0].rows : [];
    for (var i = 0; i < rows.length; i++) { if (!rows[i].classList.contains("empty")) { rows[i].classList.add("trail-entry"); } }
  }

  // ---- polling ----

  function refresh() {
    if (live.indexOf("api/overview.json") === 0) { return getJSON(live, renderOverview); }
    if (live.indexOf("api/tasks/") === 0) { return getJSON(live, renderTask); }
  }

  if (live) {
    refresh();
    setInterval(function () { if (!document.hidden) { refresh(); } }, REFRESH_MS);
  }

  window.addEventListener("resize", function () {
    Object.keys(charts).forEach(function (id) {
      var node = byId(id);
      if (node) { charts[id].setSize({ width: Math.max(280, node.clientWidth || 600), height: 220 }); }
    });
  });
})();
