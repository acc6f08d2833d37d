// minibroker console: the cluster page's rate charts and the live trace. No framework, no build.
"use strict";

function parseTotals(text) {
  // Sum of every sample of each family without a topic label (the all-topics series) or, for
  // request counts, of all samples: enough for rates.
  const totals = {};
  for (const line of text.split("\n")) {
    if (!line || line[0] === "#") continue;
    const m = line.match(/^([a-z_]+)(\{([^}]*)\})?\s+(\S+)$/);
    if (!m) continue;
    const name = m[1], labels = m[3] || "", value = parseFloat(m[4]);
    if (name === "kafka_network_requestmetrics_requests_total" || labels === "") {
      totals[name] = (totals[name] || 0) + value;
    }
  }
  return totals;
}

function startCharts() {
  const charts = document.querySelectorAll("svg.chart");
  if (!charts.length) return;
  const history = {};
  let last = null, lastT = 0;
  async function tick() {
    try {
      const text = await (await fetch("/metrics")).text();
      const now = performance.now(), totals = parseTotals(text);
      if (last) {
        for (const svg of charts) {
          const name = svg.dataset.metric;
          const rate = ((totals[name] || 0) - (last[name] || 0)) / ((now - lastT) / 1000);
          (history[name] = history[name] || []).push(Math.max(0, rate));
          if (history[name].length > 60) history[name].shift();
          draw(svg, history[name]);
        }
      }
      last = totals; lastT = now;
    } catch (e) { /* broker going away: keep the last picture */ }
  }
  // A chart keeps the last 60 samples, one every 2 s: its x axis spans the last two minutes.
  const SAMPLES = 60, EVERY_S = 2;
  function fmt(v) {
    return v >= 1e9 ? (v / 1e9).toFixed(1) + "G" : v >= 1e6 ? (v / 1e6).toFixed(1) + "M"
      : v >= 1e3 ? (v / 1e3).toFixed(1) + "k" : v.toFixed(v < 10 ? 1 : 0);
  }
  function draw(svg, points) {
    // plot area right of the y labels and above the x labels
    const w = 260, h = 80, left = 34, top = 6, bottom = 14, pw = w - left - 4, ph = h - top - bottom;
    const max = Math.max(1, ...points);
    const x = i => left + ((SAMPLES - points.length + i) / (SAMPLES - 1)) * pw;
    const y = v => top + ph - (v / max) * ph;
    const coords = points.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
    svg.innerHTML =
      `<line class="axis" x1="${left}" y1="${top}" x2="${left}" y2="${top + ph}"/>` +
      `<line class="axis" x1="${left}" y1="${top + ph}" x2="${left + pw}" y2="${top + ph}"/>` +
      `<text class="y-max" x="${left - 3}" y="${top + 8}" text-anchor="end">${fmt(max)}</text>` +
      `<text class="y-min" x="${left - 3}" y="${top + ph}" text-anchor="end">0</text>` +
      `<text class="x-start" x="${left}" y="${h - 2}">-${SAMPLES * EVERY_S} s</text>` +
      `<text class="x-end" x="${left + pw}" y="${h - 2}" text-anchor="end">now</text>` +
      `<polyline points="${coords}"/>` +
      `<text class="last" x="${left + 4}" y="${top + 8}">${fmt(points[points.length - 1])}/s</text>`;
  }
  tick();
  setInterval(tick, 2000);
}

function startTrace() {
  const rows = document.getElementById("trace-rows");
  if (!rows) return;
  const form = document.getElementById("trace-filter"), status = document.getElementById("trace-status");
  let source = null;
  function esc(s) { return String(s).replace(/[&<>"]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c])); }
  function connect() {
    if (source) source.close();
    const params = new URLSearchParams(new FormData(form));
    source = new EventSource("/trace/stream?" + params.toString());
    source.onopen = () => { status.textContent = "live"; status.dataset.state = "live"; };
    source.onerror = () => { status.textContent = "disconnected, retrying"; status.dataset.state = "error"; };
    source.addEventListener("dropped", ev => { status.textContent = `live (${ev.data} dropped: too fast)`; });
    source.onmessage = ev => {
      const e = JSON.parse(ev.data);
      const tr = document.createElement("tr");
      tr.className = e.faults ? "trace-entry trace-fault" : "trace-entry";
      tr.dataset.api = e.api; tr.dataset.client = e.client_id || "";
      // a fault that fired on the request is named beside its API (minibroker.faults)
      const fault = e.faults ? ` <b class="fault" title="${esc(e.faults.join("; "))}">⚡ ${esc(e.faults.join("; "))}</b>` : "";
      tr.innerHTML = `<td>${e.seq}</td><td>${esc(e.api)}${fault}</td><td>${e.version}</td><td>${esc(e.client_id)}</td>` +
        `<td>${e.correlation_id}</td><td>${e.request_bytes}</td><td>${e.response_bytes ?? "-"}</td><td>${e.latency_ms}</td>`;
      const detail = document.createElement("tr");
      detail.hidden = true;
      detail.innerHTML = `<td colspan="8"><pre>${esc(JSON.stringify({faults: e.faults, request: e.request, response: e.response}, null, 1))}</pre></td>`;
      tr.onclick = () => { detail.hidden = !detail.hidden; };
      rows.prepend(detail); rows.prepend(tr);
      while (rows.children.length > 1000) rows.lastChild.remove();
    };
  }
  form.addEventListener("submit", ev => { ev.preventDefault(); rows.innerHTML = ""; connect(); });
  connect();
}

function startReplication() {
  // the replication page re-reads itself every second and swaps its partition table in: the HW
  // is seen stopping while a paused follower's lag grows (minibroker/console/replication_page.py)
  const live = document.getElementById("replication-live");
  if (!live) return;
  async function tick() {
    try {
      const html = await (await fetch(location.pathname, {cache: "no-store"})).text();
      const fresh = new DOMParser().parseFromString(html, "text/html").getElementById("replication-live");
      if (fresh) { live.innerHTML = fresh.innerHTML; live.dataset.refreshed = String(Date.now()); }
    } catch (e) { /* broker going away: keep the last picture */ }
  }
  setInterval(tick, 1000);
}

document.addEventListener("DOMContentLoaded", () => { startCharts(); startTrace(); startReplication(); });
