// Clink's web console: polls the Coordinator's JSON API (same origin,
// the session cookie of /ui/login when a token is required) and renders
// with textContent only.
"use strict";

const POLL_MS = 1500;
let prev = new Map(); // "job/op/subtask" -> {out, at}
let timer = null;

async function get(path) {
  const r = await fetch(path, { credentials: "same-origin", headers: { Accept: "application/json" } });
  if (r.status === 401) {
    location.href = "login";
    throw new Error("unauthorized");
  }
  if (!r.ok) {
    throw new Error(path + ": HTTP " + r.status);
  }
  return r.json();
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function row(cells, opts) {
  const tr = document.createElement("tr");
  for (const c of cells) {
    const td = el("td", c.v, c.cls);
    tr.appendChild(td);
  }
  if (opts && opts.onclick) {
    tr.className = "link";
    tr.addEventListener("click", opts.onclick);
  }
  if (opts && opts.id) tr.dataset.id = opts.id;
  return tr;
}

function fill(tableId, rows) {
  const tb = document.querySelector("#" + tableId + " tbody");
  tb.replaceChildren(...rows);
}

function dur(ms) {
  if (ms === undefined || ms === null) return "";
  if (ms < 1000) return ms + " ms";
  const s = Math.floor(ms / 1000);
  if (s < 120) return s + " s";
  const m = Math.floor(s / 60);
  if (m < 120) return m + " min";
  return Math.floor(m / 60) + " h " + (m % 60) + " min";
}

function bytes(n) {
  if (n === undefined || n === null) return "";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + u[i];
}

function time(ms) {
  if (!ms) return "";
  return new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

async function renderList() {
  const [ov, jobs, workers] = await Promise.all([get("/api/v1/overview"), get("/api/v1/jobs"), get("/api/v1/workers")]);
  document.getElementById("overview").textContent =
    ov.workers + " workers, " + ov.slots_available + " of " + ov.slots_total + " slots free, up " + dur(ov.uptime_ms);
  const details = await Promise.all(jobs.jobs.map((j) => get("/api/v1/jobs/" + j.id).catch(() => null)));
  fill("jobs", jobs.jobs.map((j, i) => {
    const d = details[i] || {};
    const lc = d.latest_checkpoint;
    return row([
      { v: j.id }, { v: j.name }, { v: j.status, cls: j.status }, { v: d.guarantee || "" },
      { v: j.parallelism, cls: "num" }, { v: d.restarts || 0, cls: "num" },
      { v: lc ? lc.id + " (" + dur(lc.duration_ms) + ")" : "none" }, { v: dur(j.duration_ms) },
    ], { id: j.id, onclick: () => { location.hash = "#job=" + j.id; } });
  }));
  fill("workers", workers.workers.map((w) => row([
    { v: w.id }, { v: w.addr }, { v: w.slots, cls: "num" }, { v: w.slots_free, cls: "num" },
    { v: dur(Date.now() - w.last_heartbeat) + " ago" },
  ])));
}

async function renderJob(id) {
  const [d, ops, cks] = await Promise.all([
    get("/api/v1/jobs/" + encodeURIComponent(id)),
    get("/api/v1/jobs/" + encodeURIComponent(id) + "/operators"),
    get("/api/v1/jobs/" + encodeURIComponent(id) + "/checkpoints"),
  ]);
  document.getElementById("job-title").textContent = "Job " + d.id + ": " + d.name;
  const facts = [
    ["status", d.status], ["guarantee", d.guarantee], ["parallelism", d.parallelism],
    ["attempt", d.attempt], ["restarts", d.restarts], ["errors", d.error_count],
    ["checkpoints", d.checkpoint_dir || "none"], ["running for", dur(d.duration_ms)],
  ];
  const dl = document.getElementById("job-facts");
  dl.replaceChildren(...facts.flatMap(([k, v]) => [el("dt", k), el("dd", v, k === "status" ? String(v) : "")]));
  const now = Date.now();
  const rates = new Map(); // operator -> records/s out, summed over subtasks
  const rows = (ops.operators || []).map((o) => {
    const key = id + "/" + o.name + "/" + o.subtask;
    const p = prev.get(key);
    let rate = "";
    if (p && now > p.at) {
      const r = ((o.records_out - p.out) * 1000) / (now - p.at);
      rate = Math.max(0, Math.round(r));
      rates.set(o.name, (rates.get(o.name) || 0) + rate);
    }
    prev.set(key, { out: o.records_out, at: now });
    const wm = o.watermark;
    return row([
      { v: o.name }, { v: o.subtask, cls: "num" }, { v: o.worker },
      { v: o.records_in, cls: "num" }, { v: o.records_out, cls: "num" }, { v: rate, cls: "num" },
      { v: wm === null || wm === undefined ? "none" : time(wm) },
      { v: wm === null || wm === undefined ? "" : dur(now - wm) },
      { v: o.late_dropped, cls: "num" }, { v: o.records_skipped, cls: "num" },
    ]);
  });
  fill("operators", rows);
  const order = [];
  for (const o of ops.operators || []) if (!order.includes(o.name)) order.push(o.name);
  document.getElementById("graph").replaceChildren(...order.map((name) => {
    const li = el("li", name);
    li.appendChild(el("span", rates.has(name) ? rates.get(name) + " records/s" : "", "rate"));
    return li;
  }));
  document.getElementById("ck-counts").textContent =
    (cks.counts ? cks.counts.completed + " completed, " + cks.counts.failed + " failed" : "") + (cks.dir ? " in " + cks.dir : "");
  fill("checkpoints", (cks.history || []).map((c) => row([
    { v: c.id, cls: "num" }, { v: c.kind }, { v: c.status, cls: c.status }, { v: c.trigger_time },
    { v: dur(c.duration_ms) }, { v: bytes(c.state_size), cls: "num" }, { v: (c.sync_duration_ms || 0).toFixed(1) + " ms", cls: "num" },
    { v: c.delta_parts, cls: "num" }, { v: c.failure || "" },
  ])));
  document.getElementById("restarts").textContent = d.restarts
    ? d.restarts + " restart(s); last failure: " + (d.failure || "unknown")
    : "none" + (d.failure ? " (failure: " + d.failure + ")" : "");
}

async function tick() {
  const m = /^#job=(.+)$/.exec(location.hash);
  document.getElementById("jobs-view").hidden = !!m;
  document.getElementById("job-view").hidden = !m;
  try {
    if (m) await renderJob(decodeURIComponent(m[1]));
    else await renderList();
    document.getElementById("status").textContent = "updated " + new Date().toLocaleTimeString();
  } catch (e) {
    document.getElementById("status").textContent = String(e.message || e);
  }
}

function schedule() {
  clearTimeout(timer);
  tick().finally(() => { timer = setTimeout(schedule, POLL_MS); });
}

window.addEventListener("hashchange", schedule);
schedule();
