// The dashboard's live view. Every two seconds (while the tab is visible)
// the batches still running are asked about in one request and their
// counts updated in place; a batch page also redraws its job table when
// its count moves. Everything from the server is set as text, never as
// markup.
"use strict";
(function () {
  const PERIOD_MS = 2000;
  const FIELDS = ["done", "total", "ok", "failed", "kinds", "rate", "eta", "state"];

  function running() {
    return Array.from(document.querySelectorAll("[data-batch][data-state=running]"));
  }

  function setField(el, field, value) {
    el.querySelectorAll('[data-f="' + field + '"]').forEach(function (node) {
      node.textContent = String(value);
    });
  }

  function cell(row, text) {
    const td = document.createElement("td");
    td.textContent = text;
    row.appendChild(td);
    return td;
  }

  async function redraw(url) {
    let data;
    try {
      const res = await fetch(url, { credentials: "same-origin", headers: { accept: "application/json" } });
      if (!res.ok) return;
      data = await res.json();
    } catch (_) {
      return;
    }
    const body = document.querySelector("#jobs tbody");
    if (!body) return;
    const rows = document.createDocumentFragment();
    for (const r of data.rows) {
      const tr = document.createElement("tr");
      tr.className = r.status;
      const link = document.createElement("a");
      link.href = r.href;
      link.textContent = "job";
      cell(tr, "").appendChild(link);
      cell(tr, r.url).className = "url";
      cell(tr, r.final_url).className = "url";
      for (const value of [r.status, r.error_kind, r.message, r.duration, String(r.attempt), r.warnings]) {
        cell(tr, value);
      }
      rows.appendChild(tr);
    }
    body.replaceChildren(rows);
    const matching = document.getElementById("matching");
    if (matching) matching.textContent = data.matching + " matching jobs";
  }

  async function tick() {
    const live = running();
    if (live.length === 0 || document.hidden) return;
    const ids = Array.from(new Set(live.map(function (el) { return el.dataset.batch; })));
    let data;
    try {
      const res = await fetch("/ui/progress?ids=" + ids.map(encodeURIComponent).join(","), {
        credentials: "same-origin",
        headers: { accept: "application/json" },
      });
      if (!res.ok) return;
      data = await res.json();
    } catch (_) {
      return;
    }
    for (const el of live) {
      const p = data[el.dataset.batch];
      if (!p) continue;
      for (const f of FIELDS) setField(el, f, p[f]);
      el.querySelectorAll('progress[data-f="bar"]').forEach(function (bar) {
        bar.max = p.total;
        bar.value = p.done;
      });
      const moved = el.dataset.done !== String(p.done) || p.state !== "running";
      el.dataset.done = String(p.done);
      el.dataset.state = p.state;
      if (el.dataset.rows && moved) await redraw(el.dataset.rows);
      if (p.state !== "running") {
        document.querySelectorAll('form[action$="/cancel"]').forEach(function (f) { f.hidden = true; });
      }
    }
  }

  setInterval(tick, PERIOD_MS);
})();
