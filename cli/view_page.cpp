#include "cli/view_page.h"

#include "error.h"

namespace capgraph {

namespace {

// The page. Every string from the capture reaches the document through textContent or canvas
// fillText, never as HTML, and the Content-Security-Policy forbids any fetch: the page works
// from a file:// URL with no network. For tests, after drawing it sets on <body>: data-status
// "drawn" (or "error: ..."), data-timeline and data-memory (the canvases as "x,y,w,h" in CSS
// pixels), data-steps and data-buffers (boxes drawn), data-times ("estimated" or "measured"),
// data-highlighted (the planned buffers outlined for the selected kernel; URL #step=N selects one),
// and with a device profile (view --device) data-device and data-device-kernels (rows of counts).
const char kPage[] = R"PAGE(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<title>capgraph view</title>
<style>
  body { font: 13px/1.4 system-ui, sans-serif; margin: 12px 16px; color: #1d2330; background: #fff; }
  h1 { font-size: 18px; margin: 0 0 2px; }
  h2 { font-size: 14px; margin: 14px 0 4px; }
  .note { color: #5a6272; }
  canvas { display: block; width: 100%; border: 1px solid #d5d9e0; cursor: crosshair; }
  #timeline { height: 84px; }
  #memory { height: 380px; }
  #tip { position: fixed; display: none; max-width: 520px; padding: 6px 8px; background: #1d2330; color: #f4f6fa;
         border-radius: 4px; font-size: 12px; pointer-events: none; white-space: pre-wrap; z-index: 2; }
  #selection { min-height: 1.4em; }
  #legend span { display: inline-block; margin-right: 10px; }
  #legend i { display: inline-block; width: 10px; height: 10px; margin-right: 3px; vertical-align: -1px; }
  table { border-collapse: collapse; margin-top: 4px; }
  th, td { padding: 2px 8px; text-align: right; border-bottom: 1px solid #eceef2; white-space: nowrap; }
  th { background: #f3f4f7; position: sticky; top: 0; }
  td.text, th.text { text-align: left; white-space: normal; max-width: 420px; overflow-wrap: anywhere; }
  tr.kernel { cursor: pointer; }
  tr.kernel:hover { background: #f5f8ff; }
  tr.selected { background: #ffe9b8 !important; }
  button { font: inherit; }
  #error { color: #b00020; font-weight: bold; }
</style>
</head>
<body data-status="loading">
<h1 id="title">capgraph view</h1>
<div id="summary" class="note"></div>
<div id="error"></div>
<h2>Timeline <span class="note" id="times_note"></span></h2>
<div class="note">x axis: <button id="axis">time</button> &nbsp; click a kernel to see its buffers; hover for details</div>
<canvas id="timeline"></canvas>
<h2>Memory plan <span class="note">(buffers over time &times; arena offset; hatched: inputs and outputs, live for the whole replay)</span></h2>
<div id="legend" class="note"></div>
<canvas id="memory"></canvas>
<div id="selection" class="note"></div>
<h2>Kernels</h2>
<table id="kernels"></table>
<h2 id="device_title" hidden>Emulator counts per kernel <span class="note" id="device_note"></span></h2>
<table id="device_kernels"></table>
<h2>Weights</h2>
<table id="weights"></table>
<div id="tip"></div>
<script type="application/json" id="data">@CAPGRAPH_DATA@</script>
<script>
"use strict";
window.onerror = function (msg) {
  document.body.dataset.status = "error: " + msg;
  document.getElementById("error").textContent = "The page failed: " + msg;
};
const data = JSON.parse(document.getElementById("data").textContent);
const cap = data.capture, steps = cap.steps, buffers = cap.buffers, ms = data.times.ms;
const el = (id) => document.getElementById(id);
const state = { axis: "time", step: -1, buffer: -1 };

function bytes_text(b) {
  if (b >= 1048576) return (b / 1048576).toFixed(2) + " MiB";
  if (b >= 1024) return (b / 1024).toFixed(1) + " KiB";
  return b + " B";
}
function ms_text(t) { return t >= 1 ? t.toFixed(2) + " ms" : (t * 1000).toFixed(1) + " µs"; }
function step_name(i) { return steps[i].kind === "launch" ? steps[i].kernel : "copy"; }
function step_label(i) {
  const s = steps[i];
  return "step " + i + ": " + step_name(i) + (s.sources && s.sources.length ? " (ONNX " + s.sources.join(", ") + ")" : "");
}
// Kernels of one kind share a colour: the name without its fused epilogue ("conv1x1+Clip" and
// "conv1x1" are both "conv1x1").
function family(i) { return step_name(i).split("+")[0] || "kernel"; }
const families = [];
const family_colour = {};
for (let i = 0; i < steps.length; i++) {
  const f = family(i);
  if (!(f in family_colour)) {
    // Hues 137.5 degrees apart (the golden angle) stay distinct for the first dozen kinds.
    const k = families.length;
    family_colour[f] = "hsl(" + (210 + k * 137.5) % 360 + ", 62%, " + (54 + (k % 3) * 6) + "%)";
    families.push(f);
  }
}

// Time of each step (estimated or measured) laid end to end; the "step" axis gives every step
// the same width instead.
const starts = [];
let total_ms = 0;
for (let i = 0; i < steps.length; i++) { starts.push(total_ms); total_ms += ms[i]; }
function x_span(first, last, width) {  // pixels [x0, x1) of steps first..last
  if (steps.length === 0) return [0, width];
  if (state.axis === "step" || !(total_ms > 0)) return [first / steps.length * width, (last + 1) / steps.length * width];
  return [starts[first] / total_ms * width, (starts[last] + ms[last]) / total_ms * width];
}

// Which planned buffers each step writes and reads, and the role of each buffer.
const step_writes = steps.map(() => []), step_reads = steps.map(() => []);
buffers.forEach((b, j) => {
  b.writers.forEach((s) => step_writes[s] && step_writes[s].push(j));
  b.readers.forEach((s) => step_reads[s] && step_reads[s].push(j));
  b.role = "intermediate";
  for (const p of cap.inputs) if (p.offset === b.offset && p.name === b.name) b.role = "input";
  for (const p of cap.outputs) if (p.offset === b.offset && p.name === b.name) b.role = "output";
});

function canvas_setup(c) {
  const r = window.devicePixelRatio || 1, w = c.clientWidth, h = c.clientHeight;
  c.width = Math.round(w * r);
  c.height = Math.round(h * r);
  const g = c.getContext("2d");
  g.setTransform(r, 0, 0, r, 0, 0);
  return { g, w, h };
}

const MARGIN = 64;  // left margin for axis labels
let timeline_boxes = [], memory_boxes = [];

function timeline_draw() {
  const { g, w, h } = canvas_setup(el("timeline"));
  g.fillStyle = "#fbfbfd";
  g.fillRect(0, 0, w, h);
  const width = w - MARGIN - 8, top = 8, bh = h - 36;
  timeline_boxes = [];
  g.font = "11px system-ui, sans-serif";
  g.fillStyle = "#5a6272";
  g.fillText(data.times.kind, 6, top + bh / 2 + 4);
  for (let i = 0; i < steps.length; i++) {
    const [x0, x1] = x_span(i, i, width);
    const x = MARGIN + x0, bw = Math.max(1, x1 - x0 - (x1 - x0 > 3 ? 1 : 0));
    const related = state.buffer >= 0 && (buffers[state.buffer].writers.includes(i) || buffers[state.buffer].readers.includes(i));
    g.globalAlpha = (state.step >= 0 && state.step !== i) || (state.buffer >= 0 && !related) ? 0.35 : 1;
    g.fillStyle = family_colour[family(i)];
    g.fillRect(x, top, bw, bh);
    g.globalAlpha = 1;
    if (state.step === i || related) {
      g.strokeStyle = "#111";
      g.lineWidth = 2;
      g.strokeRect(x, top, bw, bh);
    }
    if (bw > 46) {
      g.save();
      g.beginPath();
      g.rect(x, top, bw, bh);
      g.clip();
      g.fillStyle = "#111";
      g.fillText(step_name(i), x + 3, top + 14);
      g.fillText(ms_text(ms[i]), x + 3, top + 28);
      g.restore();
    }
    timeline_boxes.push({ x, y: top, w: bw, h: bh, step: i });
  }
  // Axis: time in ms, or step numbers.
  g.fillStyle = "#5a6272";
  g.strokeStyle = "#c2c7d0";
  g.lineWidth = 1;
  const ticks = 8;
  for (let k = 0; k <= ticks; k++) {
    const x = MARGIN + k / ticks * width;
    g.beginPath(); g.moveTo(x, top + bh + 2); g.lineTo(x, top + bh + 7); g.stroke();
    const label = state.axis === "step" ? String(Math.round(k / ticks * steps.length)) : (k / ticks * total_ms).toFixed(total_ms < 1 ? 3 : 2) + " ms";
    g.fillText(label, Math.min(x - 10, w - 60), top + bh + 20);
  }
}

function hatch(g) {
  const p = document.createElement("canvas");
  p.width = p.height = 8;
  const q = p.getContext("2d");
  q.strokeStyle = "rgba(0,0,0,0.45)";
  q.beginPath(); q.moveTo(0, 8); q.lineTo(8, 0); q.stroke();
  return g.createPattern(p, "repeat");
}

function memory_draw() {
  const { g, w, h } = canvas_setup(el("memory"));
  g.fillStyle = "#fbfbfd";
  g.fillRect(0, 0, w, h);
  const width = w - MARGIN - 8, top = 6, height = h - 12;
  const arena = Math.max(1, cap.arena_bytes);
  memory_boxes = [];
  const pattern = hatch(g);
  buffers.forEach((b, j) => {
    const pinned = b.role !== "intermediate";
    const [x0, x1] = pinned ? [0, width] : x_span(Math.min(b.first_step, b.last_step), b.last_step, width);
    const y = top + b.offset / arena * height, bh = Math.max(1, b.bytes / arena * height);
    const x = MARGIN + x0, bw = Math.max(1, x1 - x0);
    const writer = b.writers.length ? b.writers[0] : -1;
    const related = state.step >= 0 && (b.writers.includes(state.step) || b.readers.includes(state.step));
    g.globalAlpha = (state.step >= 0 && !related) || (state.buffer >= 0 && state.buffer !== j) ? 0.22 : 0.92;
    g.fillStyle = writer >= 0 ? family_colour[family(writer)] : "#9aa3b2";
    g.fillRect(x, y, bw, bh);
    if (pinned) { g.fillStyle = pattern; g.fillRect(x, y, bw, bh); }
    g.globalAlpha = 1;
    if (related || state.buffer === j) {
      g.strokeStyle = state.step >= 0 && b.writers.includes(state.step) ? "#c0182a" : "#1450c8";
      g.lineWidth = 2;
      g.strokeRect(x, y, bw, Math.max(bh, 2));
    }
    memory_boxes.push({ x, y, w: bw, h: bh, buffer: j });
  });
  // Axis: arena offset.
  g.fillStyle = "#5a6272";
  g.font = "11px system-ui, sans-serif";
  for (let k = 0; k <= 4; k++) {
    const y = top + k / 4 * height;
    g.fillText(bytes_text(Math.round(k / 4 * cap.arena_bytes)), 4, Math.min(Math.max(y + 4, 12), h - 2));
  }
}

function tip_show(ev, lines) {
  const t = el("tip");
  t.textContent = lines.join("\n");
  t.style.display = "block";
  t.style.left = Math.min(ev.clientX + 14, window.innerWidth - 540) + "px";
  t.style.top = ev.clientY + 14 + "px";
}
function tip_hide() { el("tip").style.display = "none"; }
function hit(boxes, ev, canvas) {
  const r = canvas.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
  for (let k = boxes.length - 1; k >= 0; k--) {
    const b = boxes[k];
    if (x >= b.x - 1 && x <= b.x + b.w + 1 && y >= b.y - 1 && y <= b.y + b.h + 1) return b;
  }
  return null;
}

function step_lines(i) {
  const s = steps[i], lines = [step_label(i), ms_text(ms[i]) + " (" + data.times.kind + ")"];
  if (s.kind === "launch") {
    lines.push((s.flops / 1e6).toFixed(2) + " MFLOP" + (ms[i] > 0 ? ", " + (s.flops / (ms[i] * 1e6)).toFixed(2) + " GFLOP/s" : "") +
               "; read " + bytes_text(s.bytes_read) + ", written " + bytes_text(s.bytes_written) + "; work " + s.work);
    const wts = s.bindings.filter((b) => b.space === "weight").map((b) => cap.weight_blobs[b.index] ? cap.weight_blobs[b.index].name : "#" + b.index);
    if (wts.length) lines.push("weights: " + wts.join(", "));
  } else {
    lines.push("copy of " + bytes_text(s.bytes));
  }
  const dk = device_kernel(i);
  if (dk) {
    lines.push(data.device.device + " counted, over its " + dk.dispatches + " dispatch(es): " +
               Object.entries(dk.counts).filter(([, v]) => v).map(([k, v]) => k + " " + v).join(", "));
    lines.push("kernel estimated " + dk.estimated_us.toFixed(1) + " µs in all (" + dk.bound + " bound), an estimate for " + data.device.hardware);
  }
  lines.push("writes: " + (step_writes[i].map((j) => buffers[j].name).join(", ") || "-"));
  lines.push("reads: " + (step_reads[i].map((j) => buffers[j].name).join(", ") || "-"));
  return lines;
}
// The device profile's kernel a step launched (view --device), or null.
function device_kernel(i) {
  if (!data.device) return null;
  const k = data.device.step_kernel[i];
  return k >= 0 ? data.device.kernels[k] : null;
}
function buffer_lines(j) {
  const b = buffers[j];
  const made_by = b.writers.flatMap((s) => steps[s].sources || []);
  return [
    "buffer " + b.name + (b.role !== "intermediate" ? " (model " + b.role + ")" : ""),
    "arena offset " + b.offset + ", " + bytes_text(b.bytes) + "; live steps " + b.first_step + "–" + b.last_step,
    "ONNX value " + b.name + (made_by.length ? ", made by ONNX node " + made_by.join(", ") : ""),
    "written by: " + (b.writers.map(step_label).join("; ") || (b.role === "input" ? "the caller (model input)" : "-")),
    "read by: " + (b.readers.map(step_label).join("; ") || (b.role === "output" ? "the caller (model output)" : "-")),
  ];
}

function select(step, buffer) {
  state.step = step;
  state.buffer = buffer;
  document.querySelectorAll("tr.selected").forEach((r) => r.classList.remove("selected"));
  if (step >= 0) {
    const row = el("kernels").rows[step + 1];
    if (row) row.classList.add("selected");
    el("selection").textContent = step_lines(step).join(" · ");
  } else if (buffer >= 0) {
    el("selection").textContent = buffer_lines(buffer).join(" · ");
  } else {
    el("selection").textContent = "";
  }
  draw();
  // What the memory chart outlines now, for tests (the page's #step=N selects step N on load).
  const lit = buffers.map((b, j) => j).filter((j) => buffers[j].writers.includes(step) || buffers[j].readers.includes(step) || j === buffer);
  document.body.dataset.highlighted = lit.join(",");
}

function row(table, cells, head) {
  const r = table.insertRow();
  for (const [text, cls] of cells) {
    const c = document.createElement(head ? "th" : "td");
    c.textContent = text;
    if (cls) c.className = cls;
    r.appendChild(c);
  }
  return r;
}

function tables_fill() {
  const t = el("kernels");
  row(t, [["step"], ["kernel", "text"], ["ONNX nodes", "text"], [data.times.kind === "measured" ? "ms (median)" : "ms (estimated)"], ["share"],
          ["MFLOP"], ["GFLOP/s"], ["read"], ["written"], ["writes / reads", "text"]], true);
  steps.forEach((s, i) => {
    const r = row(t, [[String(i)], [step_name(i), "text"], [(s.sources || []).join(", "), "text"], [ms[i].toFixed(4)],
                      [total_ms > 0 ? (100 * ms[i] / total_ms).toFixed(1) + "%" : "-"],
                      [s.kind === "launch" ? (s.flops / 1e6).toFixed(2) : "-"],
                      [s.kind === "launch" && ms[i] > 0 ? (s.flops / (ms[i] * 1e6)).toFixed(2) : "-"],
                      [bytes_text(s.kind === "launch" ? s.bytes_read : s.bytes)], [bytes_text(s.kind === "launch" ? s.bytes_written : s.bytes)],
                      [step_writes[i].map((j) => buffers[j].name).join(", ") + " / " + step_reads[i].map((j) => buffers[j].name).join(", "), "text"]]);
    r.className = "kernel";
    r.addEventListener("click", () => select(state.step === i ? -1 : i, -1));
  });
  if (data.device) {
    // What the emulator counted per kernel, beside its estimated time (view --device).
    const dt = el("device_kernels"), dev = data.device;
    el("device_title").hidden = false;
    el("device_note").textContent = "(" + dev.device + "; est. µs: ESTIMATED " + dev.hardware + " time, not a measurement; total " +
      (dev.estimated_total_us / 1000).toFixed(3) + " ms estimated)";
    const names = dev.kernels.length ? Object.keys(dev.kernels[0].counts) : [];
    row(dt, [["kernel", "text"], ["dispatches"], ["est. µs"], ["share"], ["bound", "text"]].concat(names.map((n) => [n])), true);
    for (const k of dev.kernels)
      row(dt, [[k.name, "text"], [String(k.dispatches)], [k.estimated_us.toFixed(1)],
               [dev.estimated_total_us > 0 ? (100 * k.estimated_us / dev.estimated_total_us).toFixed(1) + "%" : "-"], [k.bound, "text"]]
               .concat(names.map((n) => [String(k.counts[n])])));
    document.body.dataset.device = dev.device;
    document.body.dataset.deviceKernels = String(dev.kernels.length);
  }
  const wt = el("weights");
  row(wt, [["#"], ["name", "text"], ["size"], ["read by steps", "text"]], true);
  cap.weight_blobs.forEach((w, i) => row(wt, [[String(i)], [w.name, "text"], [bytes_text(w.bytes)], [w.readers.join(", "), "text"]]));
}

function draw() { timeline_draw(); memory_draw(); }

function page_build() {
  const name = cap.file.split("/").pop() + (data.model !== cap.file ? " (from " + data.model + ")" : "");
  el("title").textContent = "capgraph view: " + name;
  document.title = "capgraph view: " + name;
  const flops = cap.flops;
  el("summary").textContent = cap.file + " · target " + cap.target + ", " + cap.threads + " thread(s) · " + cap.launches + " launches of " +
    cap.kernels + " kernels, " + cap.copies + " copies, " + (flops / 1e9).toFixed(3) + " GFLOP · arena " + bytes_text(cap.arena_bytes) +
    " (without reuse " + bytes_text(cap.arena_naive_bytes) + ") in " + buffers.length + " planned buffers · weights " +
    bytes_text(cap.weight_bytes) + " in " + cap.weights + " blobs · total " + ms_text(total_ms) + " " + data.times.kind;
  el("times_note").textContent = "(" + data.times.note + ")";
  for (const f of families) {
    const s = document.createElement("span"), i = document.createElement("i");
    i.style.background = family_colour[f];
    s.appendChild(i);
    s.appendChild(document.createTextNode(f));
    el("legend").appendChild(s);
  }
  tables_fill();
  draw();
  el("axis").addEventListener("click", () => {
    state.axis = state.axis === "time" ? "step" : "time";
    el("axis").textContent = state.axis;
    draw();
  });
  el("timeline").addEventListener("mousemove", (ev) => {
    const b = hit(timeline_boxes, ev, el("timeline"));
    if (b) tip_show(ev, step_lines(b.step)); else tip_hide();
  });
  el("timeline").addEventListener("click", (ev) => {
    const b = hit(timeline_boxes, ev, el("timeline"));
    select(b && state.step !== b.step ? b.step : -1, -1);
  });
  el("memory").addEventListener("mousemove", (ev) => {
    const b = hit(memory_boxes, ev, el("memory"));
    if (b) tip_show(ev, buffer_lines(b.buffer)); else tip_hide();
  });
  el("memory").addEventListener("click", (ev) => {
    const b = hit(memory_boxes, ev, el("memory"));
    select(-1, b && state.buffer !== b.buffer ? b.buffer : -1);
  });
  el("timeline").addEventListener("mouseleave", tip_hide);
  el("memory").addEventListener("mouseleave", tip_hide);
  window.addEventListener("resize", draw);
  const rect = (c) => { const r = c.getBoundingClientRect(); return [r.left, r.top, r.width, r.height].map(Math.round).join(","); };
  document.body.dataset.timeline = rect(el("timeline"));
  document.body.dataset.memory = rect(el("memory"));
  document.body.dataset.steps = String(timeline_boxes.length);
  document.body.dataset.buffers = String(memory_boxes.length);
  document.body.dataset.times = data.times.kind;
  const pick = /^#step=(\d+)$/.exec(location.hash);
  if (pick) select(Number(pick[1]), -1);
  document.body.dataset.status = "drawn";
}
page_build();
</script>
</body>
</html>
)PAGE";

}  // namespace

std::string view_page_html(const std::string &data_json) {
  if (data_json.find('<') != std::string::npos)
    throw Error("internal: the view's data holds an unescaped '<'");
  std::string page = kPage;
  const std::string mark = "@CAPGRAPH_DATA@";
  page.replace(page.find(mark), mark.size(), data_json);
  return page;
}

}  // namespace capgraph
