
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const rows = data.rows;
  const body = document.querySelector("#rows tbody");
  const form = document.getElementById("filters");
  const metricSelect = document.getElementById("metric");
  const providerSelect = document.getElementById("provider");
  const configSelect = document.getElementById("config");
  const search = document.getElementById("search");
  const MAX_DIFF_CELLS = 4e6;

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function change(row) {
    if (row.regressed) return ["regressed", "regressed"];
    if (row.note_kind === "known failure") return ["known", "known failure"];
    if (row.note_kind === "not significant") return ["flaky", "not significant"];
    if (row.added) return ["added", "new test"];
    if (row.status === "error" && row.base_status !== null && row.base_status !== "error") return ["changed", "new error"];
    if (row.status === "pass" && (row.base_status === "fail" || row.base_status === "error")) return ["fixed", "fixed"];
    if (row.changed) return ["changed", "changed"];
    return null;
  }

  function score(row) {
    const head = row.status === "error" ? "\u2013" : row.score.toFixed(2);
    if (row.base_score === null || row.base_score === row.score) return head;
    return row.base_score.toFixed(2) + " \u2192 " + head;
  }

  function metricsOf(row) {
    const names = new Set(Object.keys(row.metrics));
    for (const a of row.assertions) if (a.metric) names.add(a.metric);
    return names;
  }

  // The list: one line per row, its details built on first open.
  const lines = rows.map(function (row, index) {
    const tr = el("tr", "row");
    tr.dataset.index = String(index);
    const status = el("td", "st");
    status.append(el("span", "badge s-" + row.status, row.status === "error" ? "ERROR" : row.status.toUpperCase()));
    const name = el("td", "name", row.name);
    if (row.where || data.configs.length > 1) name.append(el("small", null, [data.configs.length > 1 ? data.configs[row.config] : "", row.where].filter(Boolean).join(" \u00b7 ")));
    const shown = change(row);
    const changeCell = el("td");
    if (shown) changeCell.append(el("span", "badge c-" + shown[0], shown[1]));
    tr.append(status, name, el("td", null, row.provider), el("td", "muted", row.prompt_label), el("td", "num", score(row)), changeCell);
    body.append(tr);
    return { row: row, tr: tr, detail: null, metrics: metricsOf(row), text: null };
  });

  function haystack(line) {
    if (line.text === null) {
      const r = line.row;
      line.text = [r.name, r.provider, r.prompt_label, r.output, r.base_output || "", r.reason, r.error, r.id, r.where]
        .concat(r.assertions.map(function (a) { return a.type + " " + a.metric + " " + a.reason; })).join("\n").toLowerCase();
    }
    return line.text;
  }

  function fill(select, values) {
    Array.from(values).sort().forEach(function (value) { select.append(new Option(value, value)); });
  }
  const metrics = new Set();
  lines.forEach(function (line) { line.metrics.forEach(function (m) { metrics.add(m); }); });
  fill(metricSelect, metrics);
  metricSelect.hidden = metrics.size === 0;
  fill(providerSelect, new Set(rows.map(function (r) { return r.provider; })));
  if (data.configs.length > 1) {
    data.configs.forEach(function (name, index) { configSelect.append(new Option(name, String(index))); });
    configSelect.hidden = false;
  }

  const KINDS = {
    all: function () { return true; },
    failing: function (r) { return r.status !== "pass"; },
    regressed: function (r) { return r.regressed; },
    changed: function (r) { return r.changed || r.added || (r.status === "pass" && r.base_status !== null && r.base_status !== "pass"); },
  };

  function apply() {
    const show = form.elements.show.value;
    const metric = metricSelect.value, provider = providerSelect.value, config = configSelect.value;
    const words = search.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    const counts = { all: 0, failing: 0, regressed: 0, changed: 0 };
    let visible = 0;
    for (const line of lines) {
      const r = line.row;
      let match = (!metric || line.metrics.has(metric)) && (!provider || r.provider === provider) && (!config || String(r.config) === config);
      if (match && words.length) {
        const text = haystack(line);
        match = words.every(function (w) { return text.includes(w); });
      }
      if (match) for (const kind in counts) if (KINDS[kind](r)) counts[kind] += 1;
      const on = match && KINDS[show](r);
      line.tr.hidden = !on;
      if (line.detail) line.detail.hidden = !on || !line.tr.classList.contains("open");
      if (on) visible += 1;
    }
    for (const kind in counts) form.querySelector('[data-count="' + kind + '"]').textContent = String(counts[kind]);
    document.getElementById("shown").textContent = "Showing " + visible + " of " + rows.length + (rows.length === 1 ? " row" : " rows");
    document.getElementById("empty").hidden = visible > 0;
  }

  // A word diff (longest common subsequence) of the baseline's output and this run's; lines when words are too many.
  function tokens(text, byLine) { return byLine ? text.split(/(?<=\n)/) : (text.match(/\s+|[^\s]+/g) || []); }
  function diff(before, after) {
    for (const byLine of [false, true]) {
      const a = tokens(before, byLine), b = tokens(after, byLine);
      let start = 0;
      while (start < a.length && start < b.length && a[start] === b[start]) start += 1;
      let endA = a.length, endB = b.length;
      while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) { endA -= 1; endB -= 1; }
      const n = endA - start, m = endB - start;
      if ((n + 1) * (m + 1) > MAX_DIFF_CELLS) continue;
      const table = new Uint32Array((n + 1) * (m + 1));
      for (let i = n - 1; i >= 0; i -= 1) {
        for (let j = m - 1; j >= 0; j -= 1) {
          table[i * (m + 1) + j] = a[start + i] === b[start + j] ? table[(i + 1) * (m + 1) + j + 1] + 1 : Math.max(table[(i + 1) * (m + 1) + j], table[i * (m + 1) + j + 1]);
        }
      }
      const parts = [["same", a.slice(0, start).join("")]];
      let i = 0, j = 0;
      while (i < n || j < m) {
        if (i < n && j < m && a[start + i] === b[start + j]) { parts.push(["same", a[start + i]]); i += 1; j += 1; }
        else if (j < m && (i === n || table[i * (m + 1) + j + 1] >= table[(i + 1) * (m + 1) + j])) { parts.push(["ins", b[start + j]]); j += 1; }
        else { parts.push(["del", a[start + i]]); i += 1; }
      }
      parts.push(["same", a.slice(endA).join("")]);
      return parts;
    }
    return null;
  }

  // Changed stretches read as a whole: what was removed, then what replaced it (spaces between changes belong to both).
  function diffBlock(before, after) {
    const parts = diff(before, after);
    if (parts === null) return el("p", "muted", "The outputs are too long to compare word by word.");
    const pre = el("pre", "diff");
    let removed = "", added = "", space = "";
    function flush() {
      if (removed) pre.append(el("del", null, removed));
      if (added) pre.append(el("ins", null, added));
      removed = added = "";
    }
    for (const [kind, text] of parts) {
      if (!text) continue;
      if (kind === "same" && /^\s+$/.test(text) && (removed || added)) { space += text; continue; }
      if (kind === "same") { flush(); pre.append(document.createTextNode(space + text)); space = ""; continue; }
      if (space) { if (removed) removed += space; if (added) added += space; space = ""; }
      if (kind === "del") removed += text; else added += text;
    }
    flush();
    if (space) pre.append(document.createTextNode(space));
    return pre;
  }

  function section(parent, title) { parent.append(el("h3", null, title)); }

  function details(row) {
    const cell = el("td");
    cell.colSpan = 6;
    if (row.note) cell.append(el("p", "note" + (row.regressed ? " regression" : ""), row.note));
    if (row.error) { section(cell, "Error"); cell.append(el("pre", "error-text", row.error)); }
    else if (row.reason && row.status !== "pass") { section(cell, "Why it failed"); cell.append(el("pre", null, row.reason)); }
    section(cell, "Prompt" + (row.prompt_label ? " (" + row.prompt_label + ")" : ""));
    cell.append(el("pre", null, row.prompt));
    if (row.base_output !== null) {
      section(cell, "Outputs");
      const pair = el("div", "pair");
      const base = el("div"), head = el("div");
      base.append(el("h4", null, "Baseline" + (row.base_status ? " (" + row.base_status + ")" : "")), el("pre", "base-output", row.base_output));
      head.append(el("h4", null, "This run (" + row.status + ")"), el("pre", "head-output", row.output));
      pair.append(base, head);
      cell.append(pair);
      section(cell, row.base_output === row.output ? "Diff: the outputs are the same" : "Diff");
      if (row.base_output !== row.output) cell.append(diffBlock(row.base_output, row.output));
    } else {
      section(cell, "Output");
      cell.append(el("pre", "head-output", row.output));
      if (row.base_status !== null) cell.append(el("p", "muted", "The baseline keeps no outputs, so there is nothing to compare this one with."));
    }
    if (row.assertions.length) {
      section(cell, "Assertions");
      const table = el("table", "asserts");
      const head = el("tr");
      ["Result", "Assertion", "Score", "Reason"].forEach(function (t) { head.append(el("th", t === "Score" ? "num" : null, t)); });
      table.append(head);
      for (const a of row.assertions) {
        const tr = el("tr");
        const result = el("td");
        result.append(el("span", "badge s-" + a.status, a.status));
        const type = el("td", "type", "\u00a0\u00a0".repeat(a.depth) + a.type + (a.metric ? " \u00b7 " + a.metric : "") + (a.weight !== 1 ? " (weight " + a.weight + ")" : ""));
        tr.append(result, type, el("td", "num", a.score.toFixed(2)), el("td", "reason", a.reason));
        table.append(tr);
      }
      cell.append(table);
    }
    if (row.steps.length) {
      section(cell, "Trajectory");
      const list = el("ol", "steps");
      row.steps.forEach(function (step) { list.append(el("li", null, step)); });
      cell.append(list);
    }
    const names = Object.keys(row.metrics);
    if (names.length) {
      section(cell, "Metrics");
      cell.append(el("p", null, names.map(function (n) { return n + " " + row.metrics[n].toFixed(2); }).join(" \u00b7 ")));
    }
    const facts = ["test " + row.id, row.latency ? row.latency + " ms" : "", row.cost].filter(Boolean).join(" \u00b7 ");
    cell.append(el("p", "muted", facts));
    const tr = el("tr", "detail");
    tr.append(cell);
    return tr;
  }

  body.addEventListener("click", function (event) {
    const tr = event.target.closest("tr.row");
    if (!tr) return;
    const line = lines[Number(tr.dataset.index)];
    if (line.detail === null) {
      line.detail = details(line.row);
      tr.after(line.detail);
      line.detail.hidden = true;
    }
    const open = !tr.classList.contains("open");
    tr.classList.toggle("open", open);
    line.detail.hidden = !open;
  });
  form.addEventListener("change", apply);
  form.addEventListener("submit", function (event) { event.preventDefault(); });
  search.addEventListener("input", apply);
  apply();
  performance.mark("ci-grade:rendered");
})();
