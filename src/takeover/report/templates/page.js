/* Behaviour of report.html and of `takeover show` pages (hand-written, no library, nothing fetched).
 *
 * - Filters (view, successor, handoff state, point type) hide every element marked data-filterable whose
 *   data-view / data-successor / data-state / data-ptype lists (separated by "|") miss the chosen value.
 * - Tables with class "sortable" sort by a clicked header (numbers by data-v when present).
 * - The run table and the list of handoff points are built from the JSON in <script id="page-index">.
 * - A point's drill-down is stored gzip+base64 in <script id="data-KEY"> and built on first opening.
 * - Links: #point-KEY opens a point, #run-KEY opens the point of a run and shows its column; links with
 *   data-set (a JSON object of filter values) set the filters and jump to the run table.
 * All texts from runs are inserted with textContent, never as HTML.
 */
(function () {
  "use strict";
  var FILTERS = ["view", "successor", "state", "ptype"];
  var OBS_HEAD = 1500, OBS_TAIL = 400, PROMPT_LIMIT = 6000, ACTION_LIMIT = 2000, PATCH_LINES = 400;
  var STEP_BATCH = 300;
  var ANSI = /\u001b\[[0-9;?]*[ -\/]*[@-~]/g;

  function $(sel, root) { return (root || document).querySelector(sel); }
  function $$(sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); }
  function el(tag, attrs) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === null || v === undefined || v === false) return;
        if (k === "text") node.textContent = v;
        else if (k === "cls") node.className = v;
        else node.setAttribute(k, v === true ? "" : v);
      });
    }
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined) continue;
      node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return node;
  }
  function fmt(n) { return n === null || n === undefined ? "n/a" : Number(n).toLocaleString("en-US"); }
  function pct(x) { return x === null || x === undefined ? "n/a" : (100 * x).toFixed(0) + "%"; }

  /* --- folded and clipped texts ---------------------------------------------------------------- */
  function clippedPre(text, head, tail, cls) {
    var pre = el("pre", { cls: cls || "" });
    var full = text || "";
    if (full.length <= head + tail + 200) { pre.textContent = full; return pre; }
    var hidden = full.length - head - tail;
    pre.appendChild(document.createTextNode(full.slice(0, head)));
    pre.appendChild(el("span", { cls: "clip", text: "\n[... " + fmt(hidden) + " characters clipped ...]\n" }));
    pre.appendChild(document.createTextNode(full.slice(full.length - tail)));
    var wrap = el("div", null, pre);
    var button = el("button", { cls: "more", type: "button", text: "show all " + fmt(full.length) + " characters" });
    button.addEventListener("click", function () { pre.textContent = full; button.remove(); });
    wrap.appendChild(button);
    return wrap;
  }
  function diffPre(patch) {
    var lines = (patch || "").split("\n");
    var pre = el("pre", { cls: "diff" });
    function fill(n) {
      pre.textContent = "";
      lines.slice(0, n).forEach(function (line) {
        var cls = line.startsWith("+") && !line.startsWith("+++") ? "add"
          : line.startsWith("-") && !line.startsWith("---") ? "del" : line.startsWith("@@") ? "hunk" : "";
        pre.appendChild(cls ? el("span", { cls: cls, text: line }) : document.createTextNode(line));
        pre.appendChild(document.createTextNode("\n"));
      });
    }
    fill(PATCH_LINES);
    var wrap = el("div", null, pre);
    if (lines.length > PATCH_LINES) {
      var b = el("button", { cls: "more", type: "button", text: "show all " + fmt(lines.length) + " lines" });
      b.addEventListener("click", function () { fill(lines.length); b.remove(); });
      wrap.appendChild(b);
    }
    return wrap;
  }
  function fold(title, body, open) {
    var d = el("details", { cls: "fold", open: !!open }, el("summary", { text: title }));
    if (typeof body === "function") {
      var built = false;
      var build = function () { if (!built && d.open) { built = true; d.appendChild(body()); } };
      d.addEventListener("toggle", build);
      if (open) d.appendChild((built = true, body()));
    } else d.appendChild(body);
    return d;
  }
  function facts(pairs) {
    var dl = el("dl", { cls: "facts" });
    pairs.forEach(function (p) {
      if (p[1] === null || p[1] === undefined || p[1] === "") return;
      dl.appendChild(el("dt", { text: p[0] }));
      dl.appendChild(el("dd", null, p[1]));
    });
    return dl;
  }
  function testsLine(name, rate, tests) {
    if (tests) {
      var ok = tests.success.length, all = ok + tests.failure.length;
      var span = el("span", { cls: all && ok === all ? "ok" : all ? "bad" : "", text: ok + "/" + all + " passed" });
      var out = el("span", null, span);
      if (tests.failure.length) out.appendChild(document.createTextNode(" (failing: " + tests.failure.join(", ") + ")"));
      return out;
    }
    return rate === undefined || rate === null ? null : pct(rate) + " passed";
  }
  function grading(g) {
    if (!g) return null;
    if (g.status !== "done") return el("span", { cls: "warn", text: g.status + (g.reason ? ": " + g.reason : "") });
    return facts([
      ["resolved", el("span", { cls: g.resolved ? "ok" : "bad", text: g.resolved ? "yes" : "no" })],
      ["FAIL_TO_PASS", testsLine("FAIL_TO_PASS", g.fail_to_pass_rate, g.fail_to_pass)],
      ["PASS_TO_PASS", testsLine("PASS_TO_PASS", g.pass_to_pass_rate, g.pass_to_pass)],
      ["warnings", (g.warnings || []).join("; ")]
    ]);
  }

  /* --- steps --------------------------------------------------------------------------------------- */
  function usageText(u) {
    if (!u) return "";
    var t = fmt(u.prompt_tokens) + " prompt";
    var parts = [];
    if (u.cached_tokens !== undefined && u.cached_tokens !== null) parts.push(fmt(u.cached_tokens) + " cached");
    if (u.cache_creation_tokens) parts.push(fmt(u.cache_creation_tokens) + " written to cache");
    if (parts.length) t += " (" + parts.join(", ") + ")";
    t += " · " + fmt(u.completion_tokens) + " completion";
    if (u.reasoning_tokens) t += " (" + fmt(u.reasoning_tokens) + " reasoning)";
    if (u.estimated) t += " · estimated";
    return t;
  }
  function stepItem(s, n) {
    var head = el("div", { cls: "step-head" },
      el("span", null, el("span", { cls: "kind", text: "#" + n + " " + s.type }),
        s.format_error ? el("span", { cls: "badge bad", text: "format error" }) : null,
        s.exit_code !== undefined && s.exit_code !== null ? el("span", { cls: "badge", text: "exit " + s.exit_code }) : null,
        s.rediscovery ? el("span", { cls: "badge " + (s.rediscovery === "new" ? "ok" : "other"), "data-rediscovery": s.rediscovery,
          text: s.rediscovery + (s.repeats !== undefined && s.repeats !== null ? " of predecessor event " + s.repeats : "") }) : null),
      el("span", { text: usageText(s.usage) + (s.seconds ? " · " + s.seconds.toFixed(1) + " s" : "") }));
    var li = el("li", { "data-event": s.index }, head);
    if (s.thought && s.thought.length <= 300) li.appendChild(el("div", { cls: "thought", text: s.thought }));
    else if (s.thought) li.appendChild(fold("thought (" + fmt(s.thought.length) + " chars)", function () {
      return el("div", { cls: "thought", text: s.thought });
    }));
    if (s.action) li.appendChild(clippedPre(s.action, ACTION_LIMIT, 0, "action"));
    if (s.detail) li.appendChild(fold("edit arguments", function () { return clippedPre(s.detail, ACTION_LIMIT, 0); }));
    if (s.observation !== undefined && s.observation !== null) {
      var obs = s.observation.replace(ANSI, "");
      li.appendChild(fold("observation (" + fmt(obs.length) + " chars)", function () {
        return clippedPre(obs, OBS_HEAD, OBS_TAIL, "observation");
      }));
    }
    return li;
  }
  function stepsList(steps) {
    var ol = el("ol", { cls: "steps" });
    var shown = 0;
    var more = el("button", { cls: "more", type: "button" });
    function next() {
      var end = Math.min(steps.length, shown + STEP_BATCH);
      for (; shown < end; shown++) ol.appendChild(stepItem(steps[shown], shown + 1));
      if (shown < steps.length) more.textContent = "show " + fmt(steps.length - shown) + " more steps";
      else more.remove();
    }
    more.addEventListener("click", next);
    var wrap = el("div", null, ol, more);
    next();
    return wrap;
  }

  /* --- one run, one point -------------------------------------------------------------------------- */
  function badgeFor(run) {
    if (run.status !== "done") return el("span", { cls: "badge other", text: run.status });
    return el("span", { cls: "badge " + (run.resolved ? "ok" : "bad"), text: run.resolved ? "solved" : "not solved" });
  }
  /* --- a note's claims (docs/protocol.md section 7.6) ----------------------------------------------- */
  var FIELD_LABELS = { problem_understanding: "Problem understanding", work_completed: "Work completed",
    evidence_observed: "Evidence observed", observed_failures: "Observed failures", remaining_uncertainty:
    "Remaining uncertainty", rollback_notes: "Rollback notes", recommended_next_action: "Recommended next action" };
  function markedText(text, claims, box) {
    var node = el("div", { cls: "note-text" });
    var at = 0;
    claims.slice().sort(function (a, b) { return a.start - b.start; }).forEach(function (c) {
      var start = text.substr(c.start, c.text.length) === c.text ? c.start : text.indexOf(c.text, at);
      if (start < at || start < 0) return;
      node.appendChild(document.createTextNode(text.slice(at, start)));
      var mark = el("mark", { cls: "claim-" + c.verdict, title: c.kind + " · " + c.verdict + ": " + c.reason,
        "data-claim-event": c.event === null || c.event === undefined ? null : c.event }, c.text);
      if (c.event !== null && c.event !== undefined) mark.addEventListener("click", function () { showEvent(box, c.event); });
      node.appendChild(mark);
      at = start + c.text.length;
    });
    node.appendChild(document.createTextNode(text.slice(at)));
    return node;
  }
  function showEvent(box, event) {
    var item = $("[data-cited=\"" + event + "\"]", box);
    if (!item) return;
    var holder = item.closest("details");
    if (holder) holder.open = true;
    $$(".cited-event.highlight", box).forEach(function (n) { n.classList.remove("highlight"); });
    item.classList.add("highlight");
    item.scrollIntoView({ block: "nearest" });
  }
  function claimsBox(check) {
    var box = el("div", { cls: "claims-box" });
    var claims = check.claims || [];
    if (check.fields) {
      Object.keys(check.fields).forEach(function (name) {
        box.appendChild(el("div", { cls: "note-field" }, el("span", { cls: "muted", text: (FIELD_LABELS[name] || name) + ": " }),
          markedText(check.fields[name], claims.filter(function (c) { return c.field === name; }), box)));
      });
    } else box.appendChild(markedText(check.note || "", claims, box));
    var list = el("ol", { cls: "claim-list" });
    claims.forEach(function (c) {
      var where = c.event === null || c.event === undefined ? null
        : el("a", { href: "#", "data-claim-event": c.event, text: "event " + c.event });
      if (where) where.addEventListener("click", function (e) { e.preventDefault(); showEvent(box, c.event); });
      list.appendChild(el("li", null, el("span", { cls: "badge claim-" + c.verdict, text: c.verdict }), " ",
        el("span", { cls: "kind", text: c.kind + (c.action && c.action !== "mention" ? " (" + c.action + ")" : "") }), " ",
        el("code", { text: c.text }), " — " + c.reason + " ", where));
    });
    box.appendChild(fold("claims (" + claims.length + ")", list, true));
    var events = check.events || {};
    var cited = el("div");
    Object.keys(events).sort(function (a, b) { return a - b; }).forEach(function (k) {
      cited.appendChild(el("pre", { cls: "cited-event", "data-cited": k, text: events[k] }));
    });
    box.appendChild(fold("predecessor events cited (" + Object.keys(events).length + ")", cited));
    if (check.judge && check.judge.verdicts) {
      var judged = el("ol");
      check.judge.verdicts.forEach(function (v) {
        var c = claims[v.claim] || {};
        judged.appendChild(el("li", null, el("span", { cls: "badge claim-" + v.verdict, text: v.verdict }), " ",
          el("code", { text: c.text || "" }), v.reason ? " — " + v.reason : ""));
      });
      box.appendChild(fold("model judge on unsupported claims (" + (check.judge.model || "") + ", recorded apart)", judged));
    }
    return box;
  }
  function claimsSummary(check) {
    var f = check.figures || {};
    return "claims of the note: " + fmt(f.claims) + " (" + fmt(f.supported) + " supported, " + fmt(f.unsupported) +
      " unsupported, " + fmt(f.contradicted) + " contradicted)";
  }

  function runColumn(run, prompt, role, check) {
    var col = el("div", { cls: "run-col", id: "run-" + run.takeover_key, "data-filterable": true,
      "data-view": run.view, "data-successor": run.successor });
    col.appendChild(el("h4", null, run.view, " ", badgeFor(run)));
    var tokens = run.prompt_tokens === undefined ? null : fmt(run.prompt_tokens) +
      (run.cached_tokens !== undefined ? " (" + fmt(run.cached_tokens) + " cached)" : "");
    col.appendChild(facts([
      ["why", run.reason || run.failure_kind ? [run.failure_kind, run.reason].filter(Boolean).join(": ") : null],
      ["exit status", run.exit_status ? run.exit_status + (run.exit_detail ? ": " + run.exit_detail : "") : null],
      ["agent events", run.agent_events === undefined ? null : fmt(run.agent_events)],
      ["model calls", run.llm_calls === undefined ? null : fmt(run.llm_calls) +
        (run.estimated_calls ? " (" + fmt(run.estimated_calls) + " with estimated usage)" : "")],
      ["prompt tokens", tokens],
      ["completion tokens", run.completion_tokens === undefined ? null : fmt(run.completion_tokens) +
        (run.reasoning_tokens !== undefined ? " (" + fmt(run.reasoning_tokens) + " reasoning)" : "")],
      ["initial prompt", run.initial_prompt_chars === undefined ? null : fmt(run.initial_prompt_chars) + " chars" +
        (run.initial_prompt_tokens !== undefined ? ", " + fmt(run.initial_prompt_tokens) + " tokens" : "")],
      ["wall time", run.wall_seconds === undefined ? null : run.wall_seconds.toFixed(1) + " s"],
      ["checkpoint diff kept", run.checkpoint_diff_preserved === undefined ? null : run.checkpoint_diff_preserved ? "yes" : "no"],
      ["run folder", run.run_dir || null],
      ["note", run.note || null]
    ]));
    if (run.grading && run.grading.status !== "not_graded") {
      col.appendChild(el("div", { cls: "muted", text: "grading of the final patch" }));
      col.appendChild(grading(run.grading));
    }
    if (prompt !== undefined && prompt !== null) {
      col.appendChild(fold("prompt the " + role + " received (" + fmt(prompt.length) + " chars)", function () {
        return clippedPre(prompt, PROMPT_LIMIT, 0, "prompt");
      }));
    }
    if (check) col.appendChild(fold(claimsSummary(check), function () { return claimsBox(check); }));
    var steps = run.steps || [];
    col.appendChild(fold("steps (" + fmt(steps.length) + ")", function () { return stepsList(steps); }, steps.length > 0));
    if (run.final_patch !== undefined) {
      var n = run.final_patch ? run.final_patch.split("\n").length : 0;
      col.appendChild(fold("final patch (" + fmt(n) + " lines)", function () { return diffPre(run.final_patch); }));
    }
    return col;
  }
  function renderPoint(data, body) {
    body.textContent = "";
    if (data.instance_id || data.problem_statement) {
      body.appendChild(el("h3", { text: "Task" }));
      body.appendChild(facts([["instance", data.instance_id], ["repository", data.repo], ["base commit", data.base_commit]]));
      if (data.problem_statement) body.appendChild(fold("problem statement (" + fmt(data.problem_statement.length) + " chars)",
        function () { return clippedPre(data.problem_statement, 4000, 0); }));
    }
    if (data.point_type || data.event_index !== undefined) {
      body.appendChild(el("h3", { text: "Handoff point" }));
      body.appendChild(facts([
        ["type", data.point_type], ["event index", data.event_index === undefined ? null : String(data.event_index)],
        ["changed source files", (data.changed_source_files || []).join(", ") || "none"],
        ["changed test files", (data.changed_test_files || []).join(", ") || "none"],
        ["non-source artifacts", (data.non_source_artifacts || []).join(", ") || "none"],
        ["latest verification", data.latest_verification_command ?
          data.latest_verification_command + " → " + (data.latest_verification_result || "?") : "none"],
        ["validation after latest source change", data.validation_after_latest_source_change],
        ["checkpoint method", data.checkpoint_method]
      ]));
      if (data.latest_verification_evidence) body.appendChild(fold("verification evidence", function () {
        return clippedPre(data.latest_verification_evidence, 2000, 0);
      }));
    }
    if (data.checkpoint_patch !== undefined) {
      body.appendChild(fold("checkpoint diff (" + fmt(data.checkpoint_patch.split("\n").length) + " lines)", function () {
        return diffPre(data.checkpoint_patch);
      }, true));
    }
    if (data.handoff && data.handoff.status !== "not_graded") {
      body.appendChild(el("h3", null, "Handoff state ", el("span", { cls: "badge", text: data.handoff.handoff_state || data.handoff.status })));
      body.appendChild(grading(data.handoff));
    }
    var prompts = data.prompts || {};
    var bySuccessor = {};
    (data.runs || []).forEach(function (r) { (bySuccessor[r.successor] = bySuccessor[r.successor] || []).push(r); });
    Object.keys(bySuccessor).forEach(function (succ) {
      var runs = bySuccessor[succ];
      var role = data.role || "successor";
      body.appendChild(el("h3", { "data-filterable": true, "data-successor": succ,
        text: role.charAt(0).toUpperCase() + role.slice(1) + " " + succ }));
      var grid = el("div", { cls: "views-grid", "data-filterable": true, "data-successor": succ });
      grid.style.gridTemplateColumns = "repeat(" + runs.length + ", minmax(320px, 1fr))";
      runs.forEach(function (r) { grid.appendChild(runColumn(r, prompts[r.view], role, (data.claims || {})[r.view])); });
      body.appendChild(grid);
    });
    applyFilters();
  }

  function decodeBase64(text) {
    var bin = atob(text.trim());
    var bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return bytes;
  }
  function loadPoint(key) {
    var holder = document.getElementById("data-" + key);
    if (!holder) return Promise.reject(new Error("no data for point " + key));
    if (typeof DecompressionStream === "undefined") {
      return Promise.reject(new Error("this browser cannot unpack the drill-down (no DecompressionStream)"));
    }
    var stream = new Blob([decodeBase64(holder.textContent)]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text().then(JSON.parse);
  }
  var rendering = {};
  function openPoint(details) {
    var key = details.getAttribute("data-point");
    if (!rendering[key]) {
      var body = $(".point-body", details);
      body.textContent = "loading...";
      rendering[key] = loadPoint(key).then(function (data) { renderPoint(data, body); details.setAttribute("data-rendered", ""); },
        function (err) { body.textContent = String(err && err.message || err); });
    }
    details.open = true;
    return rendering[key];
  }

  /* --- filters, sorting, links --------------------------------------------------------------------- */
  function chosen() {
    var f = {};
    FILTERS.forEach(function (k) { var s = document.getElementById("filter-" + k); f[k] = s ? s.value : ""; });
    return f;
  }
  function matches(node, f) {
    for (var i = 0; i < FILTERS.length; i++) {
      var k = FILTERS[i], want = f[k], have = node.getAttribute("data-" + k);
      if (want && have !== null && have.split("|").indexOf(want) < 0) return false;
    }
    return true;
  }
  function applyFilters() {
    var f = chosen();
    $$("[data-filterable]").forEach(function (node) { node.hidden = !matches(node, f); });
    var rows = $$("#run-table tbody tr"), shown = rows.filter(function (r) { return !r.hidden; }).length;
    var count = document.getElementById("run-count");
    if (count) count.textContent = "showing " + shown + " of " + rows.length + " runs";
  }
  function setFilters(values) {
    FILTERS.forEach(function (k) {
      var s = document.getElementById("filter-" + k);
      if (!s) return;
      var v = values[k] || "";
      s.value = Array.prototype.some.call(s.options, function (o) { return o.value === v; }) ? v : "";
    });
    applyFilters();
  }
  function sortBy(th) {
    var table = th.closest("table"), tbody = table.tBodies[0];
    var index = Array.prototype.indexOf.call(th.parentNode.children, th);
    var numeric = th.getAttribute("data-sort") === "num";
    var asc = !th.classList.contains("asc");
    $$("th", table).forEach(function (h) { h.classList.remove("asc", "desc"); });
    th.classList.add(asc ? "asc" : "desc");
    var rows = Array.prototype.slice.call(tbody.rows);
    function key(row) {
      var cell = row.cells[index], v = cell.getAttribute("data-v");
      if (numeric) { var x = parseFloat(v !== null ? v : cell.textContent); return isNaN(x) ? -Infinity : x; }
      return (v !== null ? v : cell.textContent).toLowerCase();
    }
    rows.sort(function (a, b) { var x = key(a), y = key(b); return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1); });
    var frag = document.createDocumentFragment();
    rows.forEach(function (r) { frag.appendChild(r); });
    tbody.appendChild(frag);
  }
  function go(hash) {
    var m = /^#(run|point)-(.+)$/.exec(hash || "");
    if (!m) return;
    var pointKey = m[2], runKey = null;
    if (m[1] === "run") {
      runKey = m[2];
      var row = document.getElementById("row-" + runKey);
      if (!row) return;
      $$("#run-table tr.row-selected").forEach(function (r) { r.classList.remove("row-selected"); });
      row.classList.add("row-selected");
      pointKey = row.getAttribute("data-point");
    }
    var details = document.getElementById("point-" + pointKey);
    if (!details) return;
    openPoint(details).then(function () {
      var target = runKey ? document.getElementById("run-" + runKey) : details;
      if (!target) return;
      $$(".run-col.highlight").forEach(function (c) { c.classList.remove("highlight"); });
      if (runKey) target.classList.add("highlight");
      target.scrollIntoView({ block: "start" });
    });
  }

  /* --- the run table and the list of points, from the page index --------------------------------- */
  function numCell(v) {
    return el("td", { cls: "num", "data-v": v === null || v === undefined ? "" : String(v) },
      v === null || v === undefined ? "" : fmt(v));
  }
  function filterAttrs(attrs, view, successor, state, ptype) {
    attrs["data-filterable"] = true;
    attrs["data-view"] = view; attrs["data-successor"] = successor;
    attrs["data-state"] = state; attrs["data-ptype"] = ptype;
    return attrs;
  }
  function buildIndex() {
    var holder = document.getElementById("page-index");
    if (!holder) return;
    var index = JSON.parse(holder.textContent);
    var tbody = $("#run-table tbody"), frag = document.createDocumentFragment();
    var col = {};
    index.runs.columns.forEach(function (name, i) { col[name] = i; });
    index.runs.rows.forEach(function (r) {
      var state = r[col.handoff_state] || "ungraded", key = r[col.takeover_key];
      var tr = el("tr", filterAttrs({ id: "row-" + key, "data-point": r[col.point_key] },
        r[col.view], r[col.successor], state, r[col.point_type]));
      var why = r[col.exit_status] || "";
      if (r[col.reason]) why += (why ? ": " : "") + r[col.reason];
      tr.appendChild(el("td", { text: r[col.successor] }));
      tr.appendChild(el("td", null, el("a", { href: "#run-" + key, text: r[col.instance_id] })));
      tr.appendChild(el("td", { text: r[col.point_type] }));
      tr.appendChild(el("td", { text: state }));
      tr.appendChild(el("td", { text: r[col.view] }));
      tr.appendChild(el("td", { cls: r[col.resolved] ? "ok" : "bad", text: r[col.resolved] ? "yes" : "no" }));
      tr.appendChild(el("td", { text: r[col.status] + (r[col.failure_kind] ? " (" + r[col.failure_kind] + ")" : "") }));
      ["agent_events", "llm_calls", "prompt_tokens", "cached_tokens", "completion_tokens", "estimated_calls"].forEach(
        function (name) { tr.appendChild(numCell(r[col[name]])); });
      tr.appendChild(el("td", { text: why }));
      frag.appendChild(tr);
    });
    tbody.appendChild(frag);
    var list = document.getElementById("point-list");
    frag = document.createDocumentFragment();
    index.points.forEach(function (p) {
      var key = p[0], runs = p[4], several = p[5];
      var views = [], successors = [];
      runs.forEach(function (r) {
        if (views.indexOf(r[1]) < 0) views.push(r[1]);
        if (successors.indexOf(r[0]) < 0) successors.push(r[0]);
      });
      var summary = el("summary", null, el("strong", { text: p[1] || key }), " · " + (p[2] || "") + " · ",
        el("span", { cls: "badge", text: p[3] || "ungraded" }));
      runs.forEach(function (r) {
        var done = r[3] === "done";
        var label = r[1] + (several ? " (" + r[0] + ")" : "") + " " + (done ? (r[2] ? "\u2713" : "\u2717") : "!");
        summary.appendChild(document.createTextNode(" "));
        summary.appendChild(el("span", { cls: "badge " + (done ? (r[2] ? "ok" : "bad") : "other"),
          "data-filterable": true, "data-view": r[1], "data-successor": r[0], text: label,
          title: r[0] + " \u00b7 " + r[1] + ": " + (done ? (r[2] ? "solved" : "not solved") : r[3]) }));
      });
      var details = el("details", filterAttrs({ cls: "point", id: "point-" + key, "data-point": key },
        views.join("|"), successors.join("|"), p[3] || "ungraded", p[2] || ""), summary, el("div", { cls: "point-body" }));
      frag.appendChild(details);
    });
    list.appendChild(frag);
  }

  function init() {
    buildIndex();
    FILTERS.forEach(function (k) {
      var s = document.getElementById("filter-" + k);
      if (s) s.addEventListener("change", applyFilters);
    });
    var reset = document.getElementById("filter-reset");
    if (reset) reset.addEventListener("click", function () { setFilters({}); });
    $$("table.sortable th[data-sort]").forEach(function (th) { th.addEventListener("click", function () { sortBy(th); }); });
    $$("details.point").forEach(function (d) {
      d.addEventListener("toggle", function () { if (d.open) openPoint(d); });
      if (d.open) openPoint(d);
    });
    document.addEventListener("click", function (ev) {
      var a = ev.target.closest && ev.target.closest("a[data-set]");
      if (!a) return;
      ev.preventDefault();
      setFilters(JSON.parse(a.getAttribute("data-set")));
      var runs = document.getElementById("runs");
      if (runs) runs.scrollIntoView({ block: "start" });
    });
    window.addEventListener("hashchange", function () { go(location.hash); });
    applyFilters();
    go(location.hash);
    window.takeoverPageReady = performance.now();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();
