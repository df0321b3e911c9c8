// ort_bench.mjs MODEL.onnx THREADS RUNS [NAME=FILE.npy ...]
// Times ONNX Runtime (CPU EP, graphOptimizationLevel 'all', THREADS intra-op threads) on one
// model: 5 warm-up runs, then RUNS timed runs. Prints one JSON line
// {"ort_median_ms", "ort_min_ms", "threads", "ort_peak_rss_kib", "node_rss_kib"}: the peak
// resident memory of this process (node + ONNX Runtime + the model), and node's own before ONNX
// Runtime is loaded. Every input must be given (NAME=FILE.npy).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const node_rss_kib = process.resourceUsage().maxRSS;  // KiB, before onnxruntime is loaded
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = path.resolve(process.env.ORT_DIR ?? path.join(repo, 'build', 'deps', 'ort'));
const ort = createRequire(path.join(dir, 'package.json'))('onnxruntime-node');
const [model, threadsArg, runsArg, ...inputs] = process.argv.slice(2);
if (!model || !threadsArg || !runsArg) {
  console.error('usage: ort_bench.mjs MODEL.onnx THREADS RUNS [NAME=FILE.npy ...]');
  process.exit(2);
}
const DT = { '<f4': ['float32', Float32Array], '<i8': ['int64', BigInt64Array], '|u1': ['uint8', Uint8Array] };
function npy_read(file) {
  const b = fs.readFileSync(file);
  const hl = b.readUInt16LE(8), h = b.toString('latin1', 10, 10 + hl);
  const descr = /'descr':\s*'([^']+)'/.exec(h)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(h)[1].split(',').map(s => s.trim()).filter(s => s).map(Number);
  const [type, Arr] = DT[descr] ?? (() => { throw new Error(`${file}: dtype ${descr} not handled`); })();
  const raw = b.subarray(10 + hl);
  return new ort.Tensor(type, new Arr(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength)), shape);
}
const threads = +threadsArg, runs = +runsArg;
const sess = await ort.InferenceSession.create(model, { executionProviders: ['cpu'], intraOpNumThreads: threads,
  interOpNumThreads: 1, graphOptimizationLevel: 'all' });
const feeds = {};
for (const a of inputs) { const eq = a.indexOf('='); feeds[a.slice(0, eq)] = npy_read(a.slice(eq + 1)); }
for (const name of sess.inputNames) if (!feeds[name]) { console.error(`ort_bench: input ${name} not given`); process.exit(2); }
for (let i = 0; i < 5; i++) await sess.run(feeds);
const ts = [];
for (let i = 0; i < runs; i++) { const s = process.hrtime.bigint(); await sess.run(feeds); ts.push(Number(process.hrtime.bigint() - s) / 1e6); }
ts.sort((a, b) => a - b);
console.log(JSON.stringify({ ort_median_ms: ts[ts.length >> 1], ort_min_ms: ts[0], threads,
  ort_peak_rss_kib: process.resourceUsage().maxRSS, node_rss_kib }));
