// pykcm live view: one EventSource on /api/events, each "snapshot" event redraws the page.
// No framework, no build step: plain DOM updates, so the file ships as it is.
"use strict";

const $ = (id) => document.getElementById(id);
const history = [];           // events/s of the last 60 snapshots, for the sparkline
const seen = new Map();       // row key -> last text, to flash rows that changed

function fmt(n, digits = 1) {
  if (n === null || n === undefined) return "–";
  if (typeof n !== "number") return String(n);
  if (Number.isInteger(n)) return n.toLocaleString();
  return n.toFixed(digits);
}

function dur(s) {
  if (s === null || s === undefined) return "–";
  if (s < 0.001) return (s * 1e6).toFixed(0) + " µs";
  if (s < 1) return (s * 1000).toFixed(1) + " ms";
  return s.toFixed(2) + " s";
}

function cell(text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}

// Replace a table body's rows; a row whose text changed since the last snapshot flashes.
function fill(tableId, rows) {
  const body = $(tableId).querySelector("tbody");
  body.replaceChildren();
  for (const r of rows) {
    const tr = document.createElement("tr");
    tr.dataset.key = r.key;
    for (const c of r.cells) {
      if (c instanceof Node) { const td = document.createElement("td"); td.append(c); tr.append(td); }
      else tr.append(cell(c[0], c[1]));
    }
    const text = tr.textContent;
    const k = tableId + "/" + r.key;
    if (seen.has(k) && seen.get(k) !== text) tr.classList.add("flash");
    seen.set(k, text);
    body.append(tr);
  }
}

function sum(list, field) { return list.reduce((a, x) => a + (x[field] || 0), 0); }

function drawPipeline(s) {
  const events = sum(s.informers, "events_per_s");
  $("p-requests").textContent = fmt(sum(s.requests, "per_s"));
  $("p-informers").textContent = fmt(s.informers.length);
  $("p-events").textContent = fmt(events);
  $("p-adds").textContent = fmt(sum(s.queues, "adds_per_s"));
  $("p-reconciles").textContent = fmt(sum(s.queues, "reconciles_per_s"));
  history.push(events);
  if (history.length > 60) history.shift();
  const max = Math.max(1, ...history);
  const pts = history.map((v, i) => `${(i * 300) / 59},${40 - (v / max) * 38}`).join(" ");
  $("spark").innerHTML = `<polyline points="${pts}"></polyline>`;
}

function drawWorkloads(w) {
  fill("deployments", w.deployments.map((d) => {
    const rs = document.createElement("span");
    for (const r of d.replicasets) {
      const b = document.createElement("span");
      b.className = "rs";
      b.textContent = `${r.name} (${r.revision || "?"}): ${r.ready}/${r.replicas}`;
      rs.append(b);
    }
    const done = d.updated === d.replicas && d.available === d.replicas;
    return { key: d.key, cells: [[d.key], [fmt(d.replicas), "num"], [fmt(d.updated), "num"],
      [fmt(d.ready), "num " + (d.ready === d.replicas ? "ok" : "warn")],
      [fmt(d.available), "num " + (done ? "ok" : "warn")], rs] };
  }));
  $("jobs").hidden = w.jobs.length === 0;
  fill("jobs", w.jobs.map((j) => ({ key: j.key, cells: [[j.key],
    [j.state, j.state === "Complete" ? "ok" : j.state === "Failed" ? "bad" : "warn"],
    [fmt(j.active), "num"], [fmt(j.succeeded), "num"], [fmt(j.failed), "num"],
    [fmt(j.completions), "num"]] })));
  const nodes = $("nodes");
  nodes.replaceChildren();
  for (const n of w.nodes) {
    const div = document.createElement("div");
    div.className = "node";
    div.dataset.node = n.name;
    const total = Object.values(n.pods).reduce((a, b) => a + b, 0);
    const state = n.ready === null ? "" : n.ready ? " ✓ Ready" : " ✗ NotReady";
    div.innerHTML = `<b></b><span class="${n.ready ? "ok" : "bad"}"></span> <span class="sub"></span>`;
    div.querySelector("b").textContent = n.name;
    div.querySelector("span").textContent = state;
    div.querySelector(".sub").textContent = `${total} pods`;
    const pods = document.createElement("div");
    pods.className = "pods";
    for (const [phase, count] of Object.entries(n.pods)) {
      for (let i = 0; i < Math.min(count, 200); i++) {
        const p = document.createElement("span");
        p.className = "pod " + phase;
        p.title = phase;
        pods.append(p);
      }
    }
    div.append(pods);
    nodes.append(div);
  }
}

function draw(s) {
  drawPipeline(s);
  drawWorkloads(s.workloads);
  fill("queues", s.queues.map((q) => ({ key: q.name, cells: [[q.name],
    [fmt(q.depth), "num " + (q.depth > 0 ? "warn" : "")], [fmt(q.adds_total), "num"],
    [fmt(q.adds_per_s), "num"],
    [fmt(q.reconciles_per_s), "num"], [fmt(q.retries_total), "num " + (q.retries_per_s > 0 ? "warn" : "")],
    [dur(q.longest_running_s), "num"],
    [`${dur(q.work_p50_s)} / ${dur(q.work_p90_s)} / ${dur(q.work_p99_s)}`, "num"]] })));
  fill("informers", s.informers.map((i) => ({ key: i.resource, cells: [[i.resource],
    [fmt(i.cached), "num"], [fmt(i.events_per_s), "num"], [fmt(i.events_total), "num"],
    [i.last_rv || "–", "num"], [`${fmt(i.lists)} / ${fmt(i.watches)}`, "num"]] })));
  fill("requests", s.requests.map((r) => ({ key: r.method, cells: [[r.method],
    [fmt(r.per_s), "num"], [fmt(r.total), "num"]] })));
  const l = s.leader;
  $("leader").textContent = !l.enabled ? "off (--leader-elect=false): this manager runs its controllers"
    : l.leading ? `leading: ${l.identity} holds ${l.lease}` : `standby: waiting for ${l.lease}`;
  $("leader").className = l.leading || !l.enabled ? "ok" : "warn";
  const feed = $("feed");
  feed.replaceChildren();
  for (const e of s.feed) {
    const li = document.createElement("li");
    const t = new Date(e.t * 1000).toLocaleTimeString();
    li.textContent = `${t} ${e.type.padEnd(8)} ${e.kind} ${e.key}`;
    li.className = e.type;
    feed.append(li);
  }
  document.body.dataset.snapshots = String(Number(document.body.dataset.snapshots || 0) + 1);
}

function connect() {
  const es = new EventSource("/api/events");
  es.addEventListener("open", () => { $("status").textContent = "live"; $("status").className = "status on"; });
  es.addEventListener("error", () => { $("status").textContent = "reconnecting…"; $("status").className = "status off"; });
  es.addEventListener("snapshot", (ev) => draw(JSON.parse(ev.data)));
}

connect();
