// The page of a running topology: reads the REST API every 2 s and draws what it says.
// "/" shows the topology, "/component/ID" one component and its tasks.
"use strict";

const API = "/api/v1/topology";
const REFRESH_MS = 2000;
const GRAPH_MIN_SCALE = 0.85;  // 12 px names drawn at 10 px at the least
const COLORS = ["#2f6fd0", "#2e9d5b", "#c98a12", "#8b4fc4", "#b23b3b", "#1a9aa0", "#6d7686"];
const component = decodeURIComponent((location.pathname.match(/^\/component\/(.+)$/) || [])[1] || "");
// The window and "Show system stats" live in the address, so a link or a reload keeps them.
const params = new URLSearchParams(location.search);
const plots = {};
let name = null;
let status = null;
let killed = false;
let ended = "";  // why the run ended, as the driver last said
let final = false;  // the driver said its last: the figures shown are the run's final ones
const ENDS = ["KILLED", "HALTED"];  // a run in one of these is over: nothing to control
// every button that acts on the run; all off once it is over, or its driver is gone
const CONTROLS = ["activate", "deactivate", "rebalance", "debug", "kill", "dump-stacks", "cpu-profile", "worker-log", "set-log-level"];
let lastAnswer = null;  // when the driver last answered
let failures = 0;  // polls in a row the driver did not answer: the next waits longer
let slots = null;

const SPOUT_COLUMNS = [
  ["spoutId", "Id"], ["tasks", "Tasks"], ["emitted", "Emitted"], ["transferred", "Transferred"],
  ["pending", "Pending"], ["completeLatency", "Complete ms"], ["completeLatencyP50", "p50 ms"],
  ["completeLatencyP99", "p99 ms"], ["completeLatencyMax", "max ms"], ["acked", "Acked"], ["failed", "Failed"], ["lastError", "Last error"],
];
const BOLT_COLUMNS = [
  ["boltId", "Id"], ["tasks", "Tasks"], ["executed", "Executed"], ["executeLatency", "Execute ms"],
  ["processLatency", "Process ms"], ["capacity", "Capacity"], ["emitted", "Emitted"],
  ["transferred", "Transferred"], ["acked", "Acked"], ["failed", "Failed"], ["prepares", "Prepares"],
  ["lastError", "Last error"],
];
const TASK_COLUMNS = [
  ["id", "Task"], ["uptime", "Uptime"], ["host", "Host"], ["worker", "Worker"], ["emitted", "Emitted"],
  ["transferred", "Transferred"], ["executed", "Executed"], ["executeLatency", "Execute ms"],
  ["processLatency", "Process ms"], ["capacity", "Capacity"], ["acked", "Acked"], ["failed", "Failed"],
  ["prepares", "Prepares"], ["stateBytes", "State bytes"],
];
// Storm UI's spout executors: what a spout task emitted and how its trees ended.
const SPOUT_TASK_COLUMNS = [
  ["id", "Task"], ["uptime", "Uptime"], ["host", "Host"], ["worker", "Worker"], ["emitted", "Emitted"],
  ["transferred", "Transferred"], ["pending", "Pending"], ["completeLatency", "Complete ms"],
  ["acked", "Acked"], ["failed", "Failed"],
];
// Storm UI's topology stats and a component's stats: one row per window, side by side.
const TOPOLOGY_STATS_COLUMNS = [
  ["windowPretty", "Window"], ["emitted", "Emitted"], ["transferred", "Transferred"],
  ["completeLatency", "Complete ms"], ["acked", "Acked"], ["failed", "Failed"],
];
const BOLT_STATS_COLUMNS = [
  ["windowPretty", "Window"], ["emitted", "Emitted"], ["transferred", "Transferred"],
  ["executed", "Executed"], ["executeLatency", "Execute ms"], ["processLatency", "Process ms"],
  ["acked", "Acked"], ["failed", "Failed"],
];
// Storm UI's per-stream tables of a component's page.
const INPUT_COLUMNS = [
  ["component", "Component"], ["stream", "Stream"], ["executed", "Executed"],
  ["executeLatency", "Execute ms"], ["processLatency", "Process ms"], ["acked", "Acked"],
  ["failed", "Failed"],
];
const OUTPUT_COLUMNS = [["stream", "Stream"], ["emitted", "Emitted"], ["transferred", "Transferred"]];
const SPOUT_OUTPUT_COLUMNS = [...OUTPUT_COLUMNS, ["acked", "Acked"], ["failed", "Failed"]];
// The continuous mode's workers: where each runs, what it holds, what waits in it.
const WORKER_COLUMNS = [
  ["worker", "Worker"], ["host", "Host"], ["pid", "Process"], ["tasks", "Tasks"],
  ["backlog", "Queued"], ["sent", "Sent"], ["received", "Received"], ["dropped", "Dropped"],
  ["turns", "Turns"], ["uptime", "Uptime"], ["memoryMb", "Memory MB"], ["cpuPercent", "CPU %"],
];
// Lost workers (continuous mode) or supersteps, and the restarts they led to.
const RESTART_COLUMNS = [["when", "Time"], ["worker", "Worker"], ["host", "Host"], ["delaySecs", "Waited s"], ["reason", "Why"]];
const EVENT_COLUMNS = [["n", "#"], ["time", "Time"], ["line", "Event"]];
const ERROR_COLUMNS = [
  ["time", "Time"], ["component", "Component"], ["task", "Task"], ["worker", "Worker"], ["host", "Host"],
  ["count", "Count"], ["error", "Error"],
];

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
  for (const [, label] of columns) head.appendChild(Object.assign(cell("th", label), { title: MEANING[label] || "" }));
  for (const row of rows) {
    const tr = table.insertRow();
    tr.dataset.id = row[columns[0][0]];
    for (const [field] of columns) {
      const td = cell("td", text(row[field]), typeof row[field] === "string" ? "text" : "");
      td.dataset.field = field;
      if (field === "error" && (row.traceback || String(row.error).includes("\n"))) {
        // the first line, and the whole message and traceback on demand
        const details = document.createElement("details");
        details.appendChild(cell("summary", String(row.error).split("\n")[0]));
        details.appendChild(cell("pre", [row.error, row.traceback].filter(Boolean).join("\n\n")));
        td.replaceChildren(details);
      }
      if (link && field === columns[0][0]) {
        td.replaceChildren(Object.assign(document.createElement("a"), {
          href: "/component/" + encodeURIComponent(row[field]) + location.search, textContent: row[field],
        }));
      }
      tr.appendChild(td);
    }
  }
}

// What each figure counts, shown when the pointer rests on its label.
const MEANING = {
  "Trident batches": "the last txid committed; of the batches so far, those the spouts filled and those they left empty (committed at once); batches being processed or committed now",
  "Batch size": "tuples the spouts emitted a batch (median of the last 100)",
  "Rows/batch in": "an Arrow bolt's mean rows per record batch executed (Executed counts rows: each is a message)",
  "Rows/batch out": "an Arrow component's mean rows per record batch emitted (Emitted counts rows)",
  "Batch latency": "from a batch's emit until every task finished it, and its commit (last 100 batches)",
  "Replays": "batches emitted again after a failure or a timeout (each later one in flight counts)",
  "In flight": "tuples waiting to run or moving between tasks now",
  "Pending": "tracked spout messages whose tuple tree has not completed yet",
  "Supersteps": "Spark jobs run (superstep mode), or the workers' loop turns (continuous mode)",
  "Capacity": "share of the time the busiest task of the component spent executing",
  "Complete ms": "from a spout's emit to its whole tuple tree acked (mean; above the p99 when under 1% of trees took far longer, as the max shows)",
  "Worker turns": "the loops the continuous workers made, each taking what arrived, running it and sending what it emitted",
  "Workers": "processes running the topology's tasks (continuous mode: one per Spark barrier task; superstep mode: Spark's Python workers that ran supersteps; local engine: this driver)",
  "Memory": "resident memory of the driver and of the workers' processes",
  "Errors": "errors reported by tasks since the start, repeats counted (the console throttles repeats; the page lists every record)",
  "CPU %": "share of one core the worker's process used over the last few seconds",
  "Batch": "tuples each spout task is asked for per superstep, as the sizer set it",
};

function facts(table, pairs) {
  table.replaceChildren();
  for (const [label, value, href] of pairs) {
    const tr = table.insertRow();
    tr.appendChild(Object.assign(cell("th", label), { title: MEANING[label] || "" }));
    const td = cell("td", text(value));
    if (href) td.replaceChildren(Object.assign(document.createElement("a"), { href, textContent: value }));
    td.dataset.field = label;
    tr.appendChild(td);
  }
}

async function get(path) {
  const response = await fetch(API + path, { cache: "no-store" });
  if (!response.ok) {
    const error = new Error((await response.json()).error || response.statusText);
    error.status = response.status;  // the driver answered: not a lost connection
    throw error;
  }
  return response.json();
}

function windowParam() {
  return "window=" + encodeURIComponent(document.getElementById("window").value) +
    (document.getElementById("system").checked ? "&sys=true" : "");
}

// The window and the system stats switch from the address, and back into it when changed.
function restoreView() {
  const windowSelect = document.getElementById("window");
  if ([...windowSelect.options].some((o) => o.value === params.get("window"))) windowSelect.value = params.get("window");
  document.getElementById("system").checked = params.get("sys") === "true";
}

function keepView() {
  const windowValue = document.getElementById("window").value;
  if (windowValue === ":all-time") params.delete("window"); else params.set("window", windowValue);
  if (document.getElementById("system").checked) params.set("sys", "true"); else params.delete("sys");
  const query = params.toString();
  history.replaceState(null, "", location.pathname + (query ? "?" + query : ""));
  refresh();
}

// The topology as Storm UI draws it: components in columns by depth from the spouts,
// each with its rate (tuples/s over the last sample) and, for bolts, its capacity.
const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attributes, text) {
  const element = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
  if (text !== undefined) element.textContent = text;
  return element;
}

function capacityColor(capacity) {
  if (capacity >= 0.8) return "#f4c7c3";
  if (capacity >= 0.5) return "#fbe3b4";
  return "#d4edda";
}

let lastGraph = null;  // what drawGraph drew last: drawn again when the window changes size

function drawGraph(graph, rows, rates) {
  const element = document.getElementById("graph");
  document.getElementById("graph-section").hidden = !graph.components || !graph.components.length;
  if (!graph.components) return;
  lastGraph = [graph, rows, rates];
  const depth = {};
  for (const c of graph.components) depth[c.id] = c.kind === "spout" ? 0 : 1;
  for (let round = 0; round < graph.components.length; round++) {
    for (const e of graph.edges) {
      if (e.from !== e.to && depth[e.to] <= depth[e.from]) depth[e.to] = depth[e.from] + 1;
    }
  }
  const levels = {};
  for (const c of graph.components) (levels[depth[c.id]] ||= []).push(c);
  // boxes as wide as the longest name needs (about 7 px a character), within bounds;
  // gaps wide enough for the edges' labels (what flows on them), within bounds
  const longest = Math.max(...graph.components.map((c) => `${c.id} (${c.tasks})`.length));
  const labelled = graph.edges.map((e) => (e.from === e.to ? "" : e.label || "").length);
  const W = Math.min(Math.max(20 + 7 * longest, 170), 260), H = 58, GAPY = 26, PAD = 12;
  const GAPX = Math.min(Math.max(16 + 6 * Math.max(0, ...labelled), 90), 200);
  const across = Object.values(levels);
  const room = element.parentElement.clientWidth || Infinity;
  // left to right, levels as columns (Storm UI's way), wrapped into bands of as many
  // columns as fit at GRAPH_MIN_SCALE; a window too narrow for two columns gets levels
  // as rows, each wrapped to the width there is
  const perBand = Math.max(1, Math.floor((room / GRAPH_MIN_SCALE - PAD * 2 + GAPX) / (W + GAPX)));
  const downward = perBand < Math.min(2, across.length);
  const DOWN_GAPX = 20, DOWN_GAPY = labelled.some((n) => n) ? 44 : 30;
  const perRow = Math.max(1, Math.floor((room - PAD * 2 + DOWN_GAPX) / (W + DOWN_GAPX)));
  const place = {};
  let width = PAD * 2 + Math.min(perBand, across.length) * (W + GAPX) - GAPX, height = 0;
  // an edge that skips a column of its band would pass behind the boxes between: it
  // runs in a corridor of its own above them; one into a later band goes round, below
  const bandOf = (id) => Math.floor(depth[id] / perBand);
  const skipping = downward ? [] : graph.edges.filter((e) => e.from !== e.to && bandOf(e.from) === bandOf(e.to) && depth[e.to] - depth[e.from] > 1);
  const wrapping = downward ? [] : graph.edges.filter((e) => e.from !== e.to && bandOf(e.to) !== bandOf(e.from));
  const CORRIDOR = 18, WRAP = 12;
  const corridorY = {}, bandBottom = {};
  if (downward) {
    width = PAD * 2 + Math.min(perRow, Math.max(...across.map((m) => m.length))) * (W + DOWN_GAPX) - DOWN_GAPX;
    let y = PAD;
    const rows = [];
    for (const members of across) {
      for (let i = 0; i < members.length; i += perRow) rows.push(members.slice(i, i + perRow));
    }
    const into = {};
    for (const e of graph.edges) if (e.label && e.from !== e.to) into[e.to] = (into[e.to] || 0) + 1;
    rows.forEach((members, r) => {
      if (r) y += Math.max(DOWN_GAPY, ...members.map((c) => 16 + 16 * (into[c.id] || 0)));
      members.forEach((c, i) => { place[c.id] = { x: PAD + i * (W + DOWN_GAPX), y }; });
      y += H;
    });
    height = y + PAD;
    width = Math.max(width, Math.min(room, width + 220));  // room for the edges' labels
  } else {
    let y = PAD;
    for (let band = 0; band * perBand < across.length; band++) {
      const columns = across.slice(band * perBand, (band + 1) * perBand);
      const corridors = skipping.filter((e) => bandOf(e.from) === band);
      corridors.forEach((e, i) => { corridorY[graph.edges.indexOf(e)] = y + 16 + CORRIDOR * i; });
      const top = y + (corridors.length ? 24 + CORRIDOR * corridors.length : 0);
      let bottom = top;
      columns.forEach((members, col) => {
        members.forEach((c, i) => { place[c.id] = { x: PAD + col * (W + GAPX), y: top + i * (H + GAPY) }; });
        bottom = Math.max(bottom, top + members.length * (H + GAPY) - GAPY);
      });
      bandBottom[band] = bottom;
      const leaving = wrapping.filter((e) => bandOf(e.from) === band).length;
      if (leaving) width = Math.max(width, PAD + columns.length * (W + GAPX) - GAPX + 14 + 6 * leaving + 4);
      y = bottom + (leaving ? 30 + WRAP * leaving : 40);
    }
    height = Math.max(...Object.values(bandBottom)) + PAD;
  }
  element.replaceChildren();
  const defs = svg("defs", {});
  const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "10", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto" });
  marker.appendChild(svg("path", { d: "M0,0 L10,5 L0,10 z", fill: "#6d7686" }));
  defs.appendChild(marker);
  element.appendChild(defs);
  element.setAttribute("viewBox", `0 0 ${width} ${height}`);
  let lanes = 0;
  const entries = {};  // lanes drawn into each box so far
  const drawn = [];  // [edge, its path], for the labels once every box is placed
  for (const e of graph.edges) {
    const a = place[e.from], b = place[e.to];
    if (!a || !b) continue;
    let path, late = false;  // late: its label is best near its box (a lane's, say)
    if (e.from === e.to) {
      path = `M${a.x + W - 30},${a.y} C${a.x + W},${a.y - 30} ${a.x + W + 30},${a.y} ${a.x + W},${a.y + 12}`;
    } else if (downward) {
      const x2 = b.x + W / 2, y2 = b.y;
      if (b.y > a.y && a.x === b.x && !Object.values(place).some((p) => p.x === a.x && p.y > a.y && p.y < b.y)) {
        const x1 = a.x + W / 2, y1 = a.y + H;  // straight down to the next box
        path = `M${x1},${y1} C${x1},${(y1 + y2) / 2} ${x2},${(y1 + y2) / 2} ${x2},${y2}`;
      } else {  // past the boxes between: down a lane of its own beside them
        const lane = Math.max(a.x, b.x) + W + 8 + 6 * (lanes++ % 4);
        late = true;
        const y1 = a.y + H / 2;
        // each lane into a box comes in at a height of its own: its label, on that last
        // stretch, is on its own line
        const entry = y2 - 8 - 16 * (entries[e.to] = (entries[e.to] ?? -1) + 1);
        path = `M${a.x + W},${y1} L${lane},${y1} L${lane},${entry} L${x2 + 4},${entry} L${x2},${y2}`;
      }
    } else if (skipping.includes(e)) {
      const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2;
      const y = corridorY[graph.edges.indexOf(e)], bend = Math.min(GAPX / 2, 36);  // steep: the gaps keep room for labels
      path = `M${x1},${y1} C${x1 + bend},${y1} ${x1 + bend / 2},${y} ${x1 + bend},${y} L${x2 - bend},${y} C${x2 - bend / 2},${y} ${x2 - bend},${y2} ${x2},${y2}`;
    } else if (wrapping.includes(e)) {  // round to a later band: right, down, back, in
      const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2;
      const lane = wrapping.filter((w) => bandOf(w.from) === bandOf(e.from)).indexOf(e);
      const y = bandBottom[bandOf(e.from)] + 18 + WRAP * lane, out = x1 + 14 + 6 * lane, back = Math.max(4, x2 - 14 - 6 * lane);
      path = `M${x1},${y1} L${out},${y1} L${out},${y} L${back},${y} L${back},${y2} L${x2},${y2}`;
    } else {
      const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2;
      path = `M${x1},${y1} C${x1 + GAPX / 2},${y1} ${x2 - GAPX / 2},${y2} ${x2},${y2}`;
    }
    const edge = svg("path", { class: "edge", d: path, "data-from": e.from, "data-to": e.to });
    const about = `${e.from} -> ${e.to}: ` + (e.label ? `${e.label} (stream ${e.stream})` : `stream ${e.stream}, ${e.grouping} grouping` + (e.fields ? ` on ${e.fields.join(", ")}` : ""));
    edge.appendChild(svg("title", {}, about));
    element.appendChild(edge);
    if (e.label && e.from !== e.to) drawn.push([e, edge, late]);
  }
  const boxes = [];
  for (const c of graph.components) {
    const p = place[c.id];
    const row = rows[c.id] || {};
    const group = svg("g", { class: "node", "data-id": c.id, transform: `translate(${p.x},${p.y})` });
    const fill = c.kind === "spout" ? "#dbe7fb" : capacityColor(row.capacity || 0);
    group.appendChild(svg("rect", { width: W, height: H, fill }));
    const name = svg("a", { href: "/component/" + encodeURIComponent(c.id) + location.search });
    const label = svg("text", { class: "name", x: 10, y: 18 }, `${c.id} (${c.tasks})`);
    name.appendChild(label);
    group.appendChild(svg("title", {}, `${c.id} (${c.tasks} task${c.tasks === 1 ? "" : "s"})`));
    group.appendChild(name);
    const rate = rates[c.id];
    group.appendChild(svg("text", { class: "rate", x: 10, y: 36 }, rate === undefined ? "- /s" : `${text(Math.round(rate))} /s`));
    if (c.kind !== "spout") group.appendChild(svg("text", { class: "capacity", x: 10, y: 51 }, `capacity ${text(row.capacity || 0)}`));
    else group.appendChild(svg("text", { x: 10, y: 51 }, `pending ${text(row.pending || 0)}`));
    element.appendChild(group);
    fitLabel(label, c.id, ` (${c.tasks})`, W - 16);
    boxes.push({ x: p.x - 2, y: p.y - 2, width: W + 4, height: H + 4 });
  }
  width = placeLabels(element, drawn, boxes, width, room);
  element.setAttribute("viewBox", `0 0 ${width} ${height}`);
  // as wide as its section, but never shrunk below GRAPH_MIN_SCALE (where its names stay
  // readable) nor grown: a narrower window scrolls the graph's section instead
  element.style.width = `clamp(${Math.round(Math.min(width * GRAPH_MIN_SCALE, room))}px, 100%, ${width}px)`;
}

// Every edge's label (what flows on it) beside its own line, never over a box or
// another label, and where it can be, clear of every line: the first such spot along its
// edge from the middle outwards. Labels are drawn last, with a halo, so a line that must
// pass under one does not cross its letters.
const SPOTS = [[0, -5, "middle"], [0, 14, "middle"], [6, 4, "start"], [-6, 4, "end"],
  [0, -16, "middle"], [0, 26, "middle"], [12, -6, "start"], [-12, -6, "end"], [12, 16, "start"], [-12, 16, "end"]];
function placeLabels(element, drawn, boxes, width, room) {
  const taken = [...boxes];
  const points = [];  // the lines, as points every 3 px
  for (const edge of drawn.length ? element.querySelectorAll(".edge") : []) {
    const length = edge.getTotalLength();
    for (let at = 0; at <= length; at += 3) points.push(edge.getPointAtLength(at));
  }
  const overlaps = (r, t) => r.x < t.x + t.width && t.x < r.x + r.width && r.y < t.y + t.height && t.y < r.y + r.height;
  const crossed = (r) => points.some((q) => q.x > r.x && q.x < r.x + r.width && q.y > r.y && q.y < r.y + r.height);
  let right = width;
  // a lane's label has one good spot, on its own last stretch: those go first
  for (const [e, edge, late] of [...drawn.filter((d) => d[2]), ...drawn.filter((d) => !d[2])]) {
    const label = svg("text", { class: "edge-label" }, e.label);
    element.appendChild(label);
    const length = edge.getTotalLength();
    let best = null, fallback = null;
    for (const along of late ? [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3] : [0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8, 0.12, 0.88]) {
      const at = edge.getPointAtLength(length * along);
      for (const [dx, dy, anchor] of SPOTS) {
        label.setAttribute("x", at.x + dx);
        label.setAttribute("y", at.y + dy);
        label.setAttribute("text-anchor", anchor);
        const box = label.getBBox();
        const r = { x: box.x - 1, y: box.y, width: box.width + 2, height: box.height, anchor, at: [at.x + dx, at.y + dy] };
        if (r.x < 0 || r.y < 0 || r.x + r.width > Math.max(width, room)) continue;
        if (taken.some((t) => overlaps(r, t))) continue;
        if (!crossed(r)) { best = r; break; }
        fallback ||= r;
      }
      if (best) break;
    }
    best ||= fallback;
    if (!best) {  // nowhere free along it: its middle, and the page's test says so
      const at = edge.getPointAtLength(length / 2);
      best = { x: at.x, y: at.y - 16, width: 0, height: 0, anchor: "middle", at: [at.x, at.y - 5] };
    }
    label.setAttribute("x", best.at[0]);
    label.setAttribute("y", best.at[1]);
    label.setAttribute("text-anchor", best.anchor);
    taken.push(best);
    right = Math.max(right, best.x + best.width + 4);
  }
  return Math.ceil(right);
}

// A name longer than its box is cut, with an ellipsis, keeping its task count (the whole
// name is the node's tooltip).
function fitLabel(label, id, suffix, room) {
  for (let keep = id.length - 1; label.getComputedTextLength() > room && keep > 3; keep--) {
    label.textContent = `${id.slice(0, keep)}\u2026${suffix}`;
  }
}

// Storm UI's Debug: the button says what a click does; the event log shows the lines.
let debugOn = false;
function showDebug(answer) {
  debugOn = answer.debug;
  const button = document.getElementById("debug");
  button.textContent = debugOn ? `Stop debug (${text(answer.samplingPct)}%)` : "Debug";
  const events = answer.debugEvents || [];
  document.getElementById("events-section").hidden = events.length === 0;
  fill(document.getElementById("events"), EVENT_COLUMNS,
    events.slice().reverse().map((e, i) => ({ n: String(events.length - i), time: clock({ at: e.at }), line: e.line })), false);
}

async function debug() {
  const scope = component ? `component/${encodeURIComponent(component)}/` : "";
  const what = component ? `component ${component}` : `topology ${name}`;
  if (debugOn) {
    if (confirm(`Stop debugging ${what}?`)) operate(`${scope}debug/disable`, "/100");
    return;
  }
  const percent = prompt(`Debug ${what}: the percentage of its emits, acks and fails to sample into the event log:`, "10");
  if (percent !== null) operate(`${scope}debug/enable`, "/" + encodeURIComponent(percent.trim() || "10"));
}

function spoutColumns(mode) {
  return mode === "superstep" ? [...SPOUT_COLUMNS.slice(0, 5), ["spoutBatch", "Batch"], ...SPOUT_COLUMNS.slice(5)] : SPOUT_COLUMNS;
}

// Arrow components: their record batches beside the rows (every count stays rows), as a
// column after what they count, shown only where a component moved batches.
function withBatches(columns, rows) {
  const out = [...columns];
  for (const [field, label, after] of [["rowsPerBatchExecuted", "Rows/batch in", "executed"], ["rowsPerBatchEmitted", "Rows/batch out", "emitted"]]) {
    const at = out.findIndex(([f]) => f === after);
    if (at >= 0 && rows.some((row) => row[field] !== null && row[field] !== undefined)) out.splice(at + 1, 0, [field, label]);
  }
  return out;
}

function showTopology(topology) {
  document.getElementById("topology-stats-section").hidden = false;
  fill(document.getElementById("topology-stats"), TOPOLOGY_STATS_COLUMNS, topology.topologyStats, false);
  showDebug(topology);
  fill(document.getElementById("spouts"), withBatches(spoutColumns(topology.mode), topology.spouts), topology.spouts, true);
  fill(document.getElementById("bolts"), withBatches(BOLT_COLUMNS, topology.bolts), topology.bolts, true);
  const workers = topology.workers || [];
  document.getElementById("workers-section").hidden = workers.length === 0;
  stackTargets(topology.mode === "continuous" ? workers : []);
  slots = topology.slots;
  document.getElementById("rebalance").hidden = slots === null || slots === undefined;
  fill(document.getElementById("workers"), WORKER_COLUMNS,
    workers.map((w) => ({ ...w, pid: String(w.pid), tasks: w.tasks.join(", "), uptime: duration(w.uptimeSeconds) })), false);
  const restarts = topology.restarts || [];
  document.getElementById("restarts-section").hidden = restarts.length === 0;
  document.getElementById("restart-count").textContent = `(${text(topology.restartCount)} in all, the latest first)`;
  fill(document.getElementById("restarts"), RESTART_COLUMNS,
    restarts.slice().reverse().map((r) => ({ ...r, when: clock({ at: r.time }), worker: r.worker === null ? "-" : String(r.worker) })), false);
  const rows = {};
  for (const r of [...topology.spouts, ...topology.bolts]) rows[r.spoutId || r.boltId] = r;
  drawGraph(topology.graph || {}, rows, latestRates);
  const configuration = Object.entries(topology.configuration || {});
  document.getElementById("configuration-section").hidden = configuration.length === 0;
  facts(document.getElementById("configuration"),
    configuration.map(([key, value]) => [key, typeof value === "object" && value !== null ? JSON.stringify(value) : value]));
}

function showComponent(detail, mode) {
  const spout = detail.componentType === "spout";
  document.getElementById("profiling-section").hidden = true;  // the topology's page has it
  document.getElementById(spout ? "bolts-section" : "spouts-section").hidden = true;
  fill(document.getElementById(spout ? "spouts" : "bolts"), withBatches(spout ? spoutColumns(mode) : BOLT_COLUMNS, [detail]), [detail], false);
  document.getElementById("topology-stats-section").hidden = false;
  document.getElementById("stats-title").textContent = spout ? "Spout stats" : "Bolt stats";
  fill(document.getElementById("topology-stats"), spout ? TOPOLOGY_STATS_COLUMNS : BOLT_STATS_COLUMNS, detail.windows, false);
  // an acker's or a spout's streams: a table only where there are rows to show
  document.getElementById("inputs-section").hidden = spout || !(detail.inputStats || []).length;
  fill(document.getElementById("inputs"), INPUT_COLUMNS, detail.inputStats || [], false);
  document.getElementById("outputs-section").hidden = !(detail.outputStats || []).length;
  fill(document.getElementById("outputs"), spout ? SPOUT_OUTPUT_COLUMNS : OUTPUT_COLUMNS,
    detail.outputStats || [], false);
  document.getElementById("tasks-section").hidden = false;
  fill(document.getElementById("tasks"), spout ? SPOUT_TASK_COLUMNS : TASK_COLUMNS, detail.executorStats, false);
  showErrors(detail.componentErrors, detail.errorsTotal);
  showDebug(detail);
}

// The latest errors first, each with the worker and host it came from.
function showErrors(errors, total) {
  document.getElementById("error-count").textContent = `(${text(total)} in all${errors.length < total ? `; the latest ${errors.length} records` : ""})`;
  fill(document.getElementById("errors"), ERROR_COLUMNS,
    errors.map((e) => ({ ...e, time: clock(e), worker: e.worker === null ? null : String(e.worker) })).reverse(), false);
}

function duration(secs) {
  if (secs === null || secs === undefined) return null;
  const s = Math.floor(secs);
  const [d, h, m] = [Math.floor(s / 86400), Math.floor(s / 3600) % 24, Math.floor(s / 60) % 60];
  return (d ? `${d}d ` : "") + `${h}h ${m}m ${s % 60}s`;
}

// An error's time on the wall clock, as the plots' axes show time.
function clock(error) {
  return error.at ? new Date(error.at * 1000).toLocaleTimeString([], { hour12: false }) : error.time.toFixed(1) + " s";
}

function showSummary(summary) {
  status = summary.status;
  ended = summary.ended || "";
  final = Boolean(summary.final);
  document.getElementById("title").textContent = component ? `${summary.name} / ${component}` : summary.name;
  document.title = `${component || summary.name} - sparkstorm`;
  const badge = document.getElementById("status");
  badge.textContent = summary.status;
  badge.className = "status " + summary.status;
  const checkpoint = summary.checkpoints;
  const workers = summary.workersTotal === null ? "in Spark's executors (see the Spark UI)" : summary.workersTotal;
  facts(document.getElementById("summary"), [
    ["Name", summary.name], ["Engine", summary.engine === summary.mode ? summary.engine : `${summary.engine} (${summary.mode} mode)`], ["Status", summary.status],
    ["Uptime", summary.uptime], [summary.mode === "continuous" ? "Worker turns" : "Supersteps", summary.supersteps],
    ["In flight", summary.inFlight], ["Workers", workers], ["Executors", summary.executorsTotal],
    ["Memory", summary.memoryMb === null ? null : `${text(summary.memoryMb)} MB`],
    ["Errors", summary.errorsTotal],
    ["Version", `sparkstorm ${summary.version}` + (summary.sparkVersion ? `, Spark ${summary.sparkVersion}` : "") + `, Python ${summary.pythonVersion}`],
    ["Spark master", summary.master],
    ["Spark UI", summary.sparkUi, summary.sparkUi],
    ...(checkpoint ? [["Checkpoint", `${checkpoint.committedTxid} committed, ${checkpoint.phase}; ` +
      `${checkpoint.commits} commits, ${checkpoint.rollbacks} rollbacks this run`]] : []),
    ...tridentFacts(summary.trident),
  ]);
  setControls(false);
}

// Which buttons may act now: none once the run is over or its driver gone.
function setControls(gone) {
  const off = gone || ENDS.includes(status);
  const offNow = { activate: status !== "INACTIVE", deactivate: status !== "ACTIVE", rebalance: status !== "ACTIVE" };
  for (const id of CONTROLS) document.getElementById(id).disabled = off || Boolean(offNow[id]);
}

// What the banner says of a run that is over (or stopping), from what its driver said.
function endText() {
  if (status === "HALTED") return `The run halted: ${ended}`;
  if (status !== "KILLED") return "";
  return final ? `The run was stopped (${ended}). What this page shows are its final figures.`
    : `The run is stopping (${ended}): it drains its pending trees.`;
}

// A Trident topology's batches (its coordinator's metric "trident").
function tridentFacts(b) {
  if (!b) return [];
  return [
    ["Trident batches", `txid ${b.committedTxid.toLocaleString("en-US")} committed (${b.committedBatches.toLocaleString("en-US")} ` +
      `with tuples, ${b.emptyBatches.toLocaleString("en-US")} empty), ${b.inFlight} in flight` +
      (b.maxAttempt ? ` (attempt ${b.maxAttempt + 1})` : "")],
    ["Batch size", `${compact(b.batchTuples)} tuples`],
    ["Batch latency", `processing p50 ${b.processingMsP50} ms, p99 ${b.processingMsP99}; commit p50 ${b.commitMsP50} ms`],
    ["Replays", `${b.replays}` + (b.drpcRequests ? `; ${b.drpcRequests} DRPC requests` : "")],
    ...(b.halted ? [["Halted", b.halted]] : []),
  ];
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
    width: element.clientWidth || 320, height: 220,
    series: [{}, ...labels.map((label, i) => ({ label, stroke: COLORS[i % COLORS.length], width: 2, spanGaps: false }))],
    scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(1, max || 0) * 1.05] } },
    axes: [
      { space: 90, size: 40, values: (u, ticks) => ticks.map((t) => new Date(t * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false })) },
      { values: (u, ticks) => ticks.map(compact), size: 56 },
    ],
  };
  plots[id] = { key, chart: new uPlot(options, data, element), element };
}

// An axis label that fits: 10000 -> 10k, 2500000 -> 2.5M.
function compact(value) {
  return Intl.NumberFormat("en-US", { notation: "compact", maximumFractionDigits: 1 }).format(value);
}

let latestRates = {};

function showSeries(series) {
  latestRates = {};
  for (const [id, s] of Object.entries(series.components)) {
    const values = s.kind === "spout" ? s.acked : s.executed;
    const last = values && values.filter((v) => v !== null).pop();
    if (last !== undefined) latestRates[id] = last;
  }
  const kind = component && (series.components[component] || {}).kind;
  document.getElementById("plot-latency").closest("figure").hidden = Boolean(component) && kind !== "spout";
  const rates = {};
  const latency = {};
  for (const [id, s] of Object.entries(series.components)) {
    if (component && id !== component) continue;
    if (!component && id.startsWith("__") && !document.getElementById("system").checked) continue;
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
      showComponent(await get(`/${name}/component/${encodeURIComponent(component)}?${windowParam()}`), topologies[0].mode);
    } else {
      document.getElementById("api-link").href = `${API}/${name}`;
      const topology = await get(`/${name}?${windowParam()}`);
      showTopology(topology);
      showErrors(topology.errors, topology.errorsTotal);
    }
    showSeries(await get(`/${name}/timeseries?${windowParam()}`));
    lastAnswer = new Date();
    failures = 0;
    const gone = document.getElementById("gone");
    gone.textContent = endText();
    gone.hidden = !gone.textContent;
  } catch (error) {
    failures += error.status ? 0 : 1;
    const gone = document.getElementById("gone");
    gone.textContent = error.status === 404
      ? `${error.message}. Back to the topology: ${location.origin}/`
      : error.status
        ? `The driver answered: ${error.message}`
        : goneText(error);
    gone.hidden = false;
    if (!error.status && status !== null) {
      if (!ENDS.includes(status)) {  // a run that ended keeps saying how; another is GONE
        const badge = document.getElementById("status");
        badge.textContent = "GONE";
        badge.className = "status GONE";
      }
      setControls(true);
    }
  }
}

// The page's loop: one refresh, then the next when nextPoll says.
async function poll() {
  await refresh();
  setTimeout(poll, nextPoll());
}

// What the page knows of a driver that no longer answers: how the run last stood, and since when.
function goneText(error) {
  const since = lastAnswer ? ` since ${lastAnswer.toLocaleTimeString([], { hour12: false })}` : "";
  const shown = final ? " What this page shows are its final figures." : " What this page shows is as of then.";
  const last = status === "HALTED" ? `It halted: ${ended}.${shown}`
    : status === "KILLED" ? `It was stopped (${ended || (killed ? "killed from this page" : "stopped")}).${shown}`
      : killed ? "It was killed from this page."
      : `The last it said: ${status || "nothing yet"}; what this page shows is as of then.`;
  return `The run is gone: its driver has not answered${since} (${error.message}). ${last} ` +
    `Asking again in ${Math.round(nextPoll() / 1000)} s.`;
}

// Every 2 s while the driver answers; a driver that does not is asked less and less often, up to every 60 s.
function nextPoll() {
  return Math.min(REFRESH_MS * 2 ** failures, 60000);
}

// A control route; off loopback it needs the token, asked once and kept for the tab.
// The answer, or null when the operator gave no token.
async function post(path, body) {
  for (;;) {
    const token = sessionStorage.getItem("sparkstorm-token");
    const headers = token ? { Authorization: "Bearer " + token } : {};
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const response = await fetch(`${API}/${name}/${path}`, { method: "POST", headers, body });
    if (response.status !== 401) return response;
    const given = prompt("This topology's control routes need its token (the 'token:' line where the run started, or the run's file on the driver's machine):");
    if (!given) return null;
    sessionStorage.setItem("sparkstorm-token", given);
  }
}

async function operate(action, suffix, body) {
  const response = await post(action + (suffix || ""), body);
  if (response === null) return;
  if (!response.ok) alert(`${action} failed: ${(await response.json()).error}`);
  killed = killed || (response.ok && action === "kill");
  refresh();
}

// Storm's jstack and profiler: the threads of the driver's or a worker's process, or a CPU
// profile of its loop for some seconds, shown and downloadable.
async function profiling(kind) {
  const target = document.getElementById("stack-target").value;
  const secs = document.getElementById("profile-secs").value.trim() || "10";
  const path = kind === "stacks" ? `profiling/dumpstack/${encodeURIComponent(target)}`
    : `profiling/cpu/${encodeURIComponent(target)}/${encodeURIComponent(secs)}`;
  const button = document.getElementById(kind === "stacks" ? "dump-stacks" : "cpu-profile");
  button.disabled = true;  // a profile takes its seconds
  try {
    const response = await post(path);
    if (response === null) return;
    const answer = await response.json();
    if (!response.ok) {
      alert(`${kind === "stacks" ? "stack dump" : "CPU profile"} failed: ${answer.error}`);
      return;
    }
    const where = answer.worker === "driver" ? "the driver" : `worker ${answer.worker}`;
    const what = kind === "stacks" ? "Stack dump" : `CPU profile (${answer.secs} s)`;
    const body = kind === "stacks" ? answer.stacks : answer.profile;
    document.getElementById("stacks-title").textContent = `${what} of ${where} (${answer.host}, process ${answer.pid})`;
    document.getElementById("stacks").textContent = body;
    const link = document.getElementById("stacks-download");
    URL.revokeObjectURL(link.href);
    link.href = URL.createObjectURL(new Blob([body], { type: "text/plain" }));
    link.download = `${name}-${kind}-${answer.worker}.txt`;
    document.getElementById("stacks-result").hidden = false;
  } finally {
    button.disabled = ENDS.includes(status);
  }
}

// Storm's logviewer for a continuous worker: its latest Python log records.
async function showWorkerLog() {
  const target = document.getElementById("stack-target").value;
  if (target === "driver") {
    alert("The driver's log is the terminal (or file) the run writes to; choose a worker.");
    return;
  }
  try {
    const answer = await get(`/${name}/workers/${encodeURIComponent(target)}/log`);
    const body = answer.lines.map((l) => l.line).join("\n") || "(no record yet at the levels set)";
    document.getElementById("stacks-title").textContent = `Log of worker ${answer.worker} (${answer.host}, process ${answer.pid}), the latest ${answer.lines.length} records`;
    document.getElementById("stacks").textContent = body;
    const link = document.getElementById("stacks-download");
    URL.revokeObjectURL(link.href);
    link.href = URL.createObjectURL(new Blob([body], { type: "text/plain" }));
    link.download = `${name}-log-${answer.worker}.txt`;
    document.getElementById("stacks-result").hidden = false;
  } catch (error) {
    alert(`worker log: ${error.message}`);
  }
}

// Storm UI's "Change log level": a logger, in the driver and every worker, for a while.
async function setLogLevel() {
  const logger = document.getElementById("logger").value.trim() || "ROOT";
  const level = document.getElementById("log-level").value;
  const secs = Number(document.getElementById("log-secs").value || "60");
  const body = JSON.stringify({ namedLoggerLevels: { [logger]: { target_level: level, timeout: secs } } });
  const response = await post("logconfig", body);
  if (response === null) return;
  const answer = await response.json();
  document.getElementById("log-level-said").textContent = response.ok
    ? `${logger} at ${level} for ${secs} s` : `failed: ${answer.error}`;
}

// The processes a stack dump can be taken of: the driver, and each continuous worker.
function stackTargets(workers) {
  const select = document.getElementById("stack-target");
  const wanted = ["driver", ...workers.map((w) => String(w.worker))];
  if ([...select.options].map((o) => o.value).join() === wanted.join()) return;
  const chosen = select.value;
  select.replaceChildren(...wanted.map((value) => Object.assign(document.createElement("option"), {
    value, textContent: value === "driver" ? "the driver" : `worker ${value}`,
  })));
  if (wanted.includes(chosen)) select.value = chosen;
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
document.getElementById("dump-stacks").addEventListener("click", () => profiling("stacks"));
document.getElementById("cpu-profile").addEventListener("click", () => profiling("cpu"));
document.getElementById("worker-log").addEventListener("click", showWorkerLog);
document.getElementById("set-log-level").addEventListener("click", setLogLevel);
document.getElementById("debug").addEventListener("click", debug);
// Storm's rebalance (continuous mode): drain, then start again over N workers.
document.getElementById("rebalance").addEventListener("click", () => {
  const workers = prompt(`Rebalance topology ${name} over how many workers (1 to ${slots}, one per task slot)? What is in flight drains for up to 30 s first.`, String(slots));
  if (workers === null) return;
  operate("rebalance", "/30", JSON.stringify({ rebalanceOptions: { numWorkers: Number(workers.trim()) } }));
});
document.getElementById("window").addEventListener("change", keepView);
document.getElementById("system").addEventListener("change", keepView);

restoreView();
poll();
// plots follow their boxes when the window changes size (a phone turned, a window dragged)
window.addEventListener("resize", () => {
  for (const { chart, element } of Object.values(plots)) chart.setSize({ width: element.clientWidth || 320, height: 220 });
  if (lastGraph) drawGraph(...lastGraph);
});
