// The page of a running topology: reads the REST API every 2 s and draws what it says.
// "/" shows the topology, "/component/ID" one component and its tasks.
"use strict";

const API = "/api/v1/topology";
const REFRESH_MS = 2000;
const COLORS = ["#2f6fd0", "#2e9d5b", "#c98a12", "#8b4fc4", "#b23b3b", "#1a9aa0", "#6d7686"];
const component = decodeURIComponent((location.pathname.match(/^\/component\/(.+)$/) || [])[1] || "");
const plots = {};
let name = null;
let status = null;
let killed = false;

const SPOUT_COLUMNS = [
  ["spoutId", "Id"], ["tasks", "Tasks"], ["emitted", "Emitted"], ["transferred", "Transferred"],
  ["pending", "Pending"], ["completeLatency", "Complete ms"], ["completeLatencyP50", "p50 ms"],
  ["completeLatencyP99", "p99 ms"], ["acked", "Acked"], ["failed", "Failed"], ["lastError", "Last error"],
];
const BOLT_COLUMNS = [
  ["boltId", "Id"], ["tasks", "Tasks"], ["executed", "Executed"], ["executeLatency", "Execute ms"],
  ["processLatency", "Process ms"], ["capacity", "Capacity"], ["emitted", "Emitted"],
  ["transferred", "Transferred"], ["acked", "Acked"], ["failed", "Failed"], ["prepares", "Prepares"],
  ["lastError", "Last error"],
];
const TASK_COLUMNS = [
  ["id", "Task"], ["emitted", "Emitted"], ["transferred", "Transferred"], ["executed", "Executed"],
  ["executeLatency", "Execute ms"], ["processLatency", "Process ms"], ["capacity", "Capacity"],
  ["acked", "Acked"], ["failed", "Failed"], ["pending", "Pending"], ["prepares", "Prepares"],
  ["stateBytes", "State bytes"], ["worker", "Worker"],
];
// The continuous mode's workers: where each runs, what it holds, what waits in it.
const WORKER_COLUMNS = [
  ["worker", "Worker"], ["host", "Host"], ["pid", "Process"], ["tasks", "Tasks"],
  ["backlog", "Queued"], ["sent", "Sent"], ["received", "Received"], ["dropped", "Dropped"],
  ["turns", "Turns"],
];
const ERROR_COLUMNS = [["time", "Time"], ["component", "Component"], ["task", "Task"], ["count", "Count"], ["error", "Error"]];

function text(value) {
  if (value === null || value === undefined || value === "") return "-";
  if (typeof value === "number") return value.toLocaleString("en-US", { maximumFractionDigits: 3 });
  return String(value);
}

function cell(tag, content, className) {
  const element = document.createElement(tag);
  element.textContent = content;
  if (className) element.className = className;
  return element;
}

// Rows of objects as a table; each cell carries data-field, each row data-id.
function fill(table, columns, rows, link) {
  table.replaceChildren();
  const head = table.insertRow();
  for (const [, label] of columns) head.appendChild(cell("th", label));
  for (const row of rows) {
    const tr = table.insertRow();
    tr.dataset.id = row[columns[0][0]];
    for (const [field] of columns) {
      const td = cell("td", text(row[field]), typeof row[field] === "string" ? "text" : "");
      td.dataset.field = field;
      if (link && field === columns[0][0]) {
        td.replaceChildren(Object.assign(document.createElement("a"), {
          href: "/component/" + encodeURIComponent(row[field]), textContent: row[field],
        }));
      }
      tr.appendChild(td);
    }
  }
}

function facts(table, pairs) {
  table.replaceChildren();
  for (const [label, value, href] of pairs) {
    const tr = table.insertRow();
    tr.appendChild(cell("th", label));
    const td = cell("td", text(value));
    if (href) td.replaceChildren(Object.assign(document.createElement("a"), { href, textContent: value }));
    td.dataset.field = label;
    tr.appendChild(td);
  }
}

async function get(path) {
  const response = await fetch(API + path, { cache: "no-store" });
  if (!response.ok) throw new Error((await response.json()).error || response.statusText);
  return response.json();
}

function windowParam() {
  return "window=" + encodeURIComponent(document.getElementById("window").value);
}

function showTopology(topology) {
  fill(document.getElementById("spouts"), SPOUT_COLUMNS, topology.spouts, true);
  fill(document.getElementById("bolts"), BOLT_COLUMNS, topology.bolts, true);
  const workers = topology.workers || [];
  document.getElementById("workers-section").hidden = workers.length === 0;
  fill(document.getElementById("workers"), WORKER_COLUMNS,
    workers.map((w) => ({ ...w, pid: String(w.pid), tasks: w.tasks.join(", ") })), false);
}

function showComponent(detail) {
  const spout = detail.componentType === "spout";
  document.getElementById(spout ? "bolts-section" : "spouts-section").hidden = true;
  fill(document.getElementById(spout ? "spouts" : "bolts"), spout ? SPOUT_COLUMNS : BOLT_COLUMNS, [detail], false);
  document.getElementById("tasks-section").hidden = false;
  fill(document.getElementById("tasks"), TASK_COLUMNS, detail.executorStats, false);
  const errors = detail.componentErrors.map((e) => ({ ...e, component: detail.id, time: clock(e.time) }));
  fill(document.getElementById("errors"), ERROR_COLUMNS, errors.reverse(), false);
}

function clock(topologySecs) {
  return topologySecs.toFixed(1) + " s";
}

function showSummary(summary) {
  status = summary.status;
  document.getElementById("title").textContent = component ? `${summary.name} / ${component}` : summary.name;
  document.title = `${component || summary.name} - sparkstorm`;
  const badge = document.getElementById("status");
  badge.textContent = summary.status;
  badge.className = "status " + summary.status;
  const checkpoint = summary.checkpoints;
  facts(document.getElementById("summary"), [
    ["Name", summary.name], ["Engine", summary.engine], ["Status", summary.status],
    ["Uptime", summary.uptime], ["Supersteps", summary.supersteps], ["In flight", summary.inFlight],
    ["Tasks", summary.tasksTotal], ["Spark master", summary.master],
    ["Spark UI", summary.sparkUi, summary.sparkUi],
    ...(checkpoint ? [["Checkpoint", `${checkpoint.committedTxid} committed, ${checkpoint.phase}; ` +
      `${checkpoint.commits} commits, ${checkpoint.rollbacks} rollbacks this run`]] : []),
  ]);
  document.getElementById("activate").disabled = status !== "INACTIVE";
  document.getElementById("deactivate").disabled = status !== "ACTIVE";
  document.getElementById("kill").disabled = status === "KILLED";
}

// One uPlot per figure; redrawn when its series change, else given new data.
function plot(id, series, time) {
  const element = document.getElementById(id);
  const labels = Object.keys(series);
  const data = [time, ...labels.map((label) => series[label])];
  const key = labels.join("\u0000");
  if (plots[id] && plots[id].key === key) {
    plots[id].chart.setData(data);
    return;
  }
  if (plots[id]) plots[id].chart.destroy();
  const options = {
    width: Math.max(320, element.clientWidth), height: 220,
    series: [{}, ...labels.map((label, i) => ({ label, stroke: COLORS[i % COLORS.length], width: 2, spanGaps: false }))],
    scales: { x: { time: true } },
  };
  plots[id] = { key, chart: new uPlot(options, data, element) };
}

function showSeries(series) {
  const rates = {};
  const latency = {};
  for (const [id, s] of Object.entries(series.components)) {
    if (component && id !== component) continue;
    if (!component && id.startsWith("__")) continue;
    if (s.kind === "spout") {
      rates[`${id} acked`] = s.acked;
      latency[`${id} p50`] = s.p50;
      latency[`${id} p99`] = s.p99;
    } else {
      rates[`${id} executed`] = s.executed;
    }
    if (component) rates[`${id} failed`] = s.failed;
  }
  const failures = component ? { failed: (series.components[component] || {}).failed || [] } : series.failReasons;
  plot("plot-rates", rates, series.time);
  plot("plot-latency", latency, series.time);
  plot("plot-failures", failures, series.time);
}

async function refresh() {
  try {
    const { topologies } = await get("/summary");
    name = topologies[0].name;
    showSummary(topologies[0]);
    if (component) {
      document.getElementById("api-link").href = `${API}/${name}/component/${encodeURIComponent(component)}`;
      showComponent(await get(`/${name}/component/${encodeURIComponent(component)}?${windowParam()}`));
    } else {
      document.getElementById("api-link").href = `${API}/${name}`;
      const topology = await get(`/${name}?${windowParam()}`);
      showTopology(topology);
      const errors = (await Promise.all(
        [...topology.spouts, ...topology.bolts].filter((c) => c.lastError).map((c) => get(`/${name}/component/${encodeURIComponent(c.spoutId || c.boltId)}`)),
      )).flatMap((c) => c.componentErrors.map((e) => ({ ...e, component: c.id, time: clock(e.time) })));
      fill(document.getElementById("errors"), ERROR_COLUMNS, errors.reverse().slice(0, 20), false);
    }
    showSeries(await get(`/${name}/timeseries?${windowParam()}`));
    document.getElementById("gone").hidden = true;
  } catch (error) {
    const gone = document.getElementById("gone");
    gone.textContent = killed || status === "KILLED"
      ? "The topology was killed: this driver has stopped."
      : `The driver does not answer (${error.message}); retrying.`;
    gone.hidden = false;
  }
}

// A control route; off loopback it needs the token, asked once and kept for the tab.
async function operate(action, suffix) {
  const path = `${API}/${name}/${action}${suffix || ""}`;
  for (;;) {
    const token = sessionStorage.getItem("sparkstorm-token");
    const headers = token ? { Authorization: "Bearer " + token } : {};
    const response = await fetch(path, { method: "POST", headers });
    if (response.status === 401) {
      const given = prompt("This topology's control routes need its token (printed at start):");
      if (!given) return;
      sessionStorage.setItem("sparkstorm-token", given);
      continue;
    }
    if (!response.ok) alert(`${action} failed: ${(await response.json()).error}`);
    killed = killed || (response.ok && action === "kill");
    break;
  }
  refresh();
}

document.getElementById("activate").addEventListener("click", () => {
  if (confirm(`Activate topology ${name}?`)) operate("activate");
});
document.getElementById("deactivate").addEventListener("click", () => {
  if (confirm(`Deactivate topology ${name}? Its spouts stop emitting; what is in flight completes.`)) operate("deactivate");
});
document.getElementById("kill").addEventListener("click", () => {
  const wait = prompt(`Kill topology ${name}? Seconds to let what is in flight complete:`, "30");
  if (wait !== null) operate("kill", "/" + encodeURIComponent(wait.trim() || "30"));
});
document.getElementById("window").addEventListener("change", refresh);

refresh();
setInterval(refresh, REFRESH_MS);
