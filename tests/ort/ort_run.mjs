// ort_run.mjs MODEL.onnx OUTDIR [NAME=FILE.npy ...]
//
// Runs ONNX Runtime on one model and writes each output as OUTDIR/<name>.npy, with every character
// of the name outside [A-Za-z0-9._-] replaced by '_' (the same rule as `capgraph run`), so the
// tests can compare capgraph's outputs with ONNX Runtime's file by file.
//
// Reference settings: CPU execution provider, 1 thread, graphOptimizationLevel 'all' (the settings
// the zoo's reference outputs were made with). Tensors in and out: float32, int64, int32, uint8, int8,
// bool, float16 (.npy, little-endian, C order).
//
// onnxruntime-node is found in $ORT_DIR/node_modules (default <repo>/build/deps/ort, which
// scripts/fetch_test_deps.sh fills). Exits non-zero with a message on any error.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

function fail(message) {
  console.error(`ort_run: ${message}`);
  process.exit(1);
}

function ort_load() {
  const dir = path.resolve(process.env.ORT_DIR ?? path.join(repo, 'build', 'deps', 'ort'));
  try {
    return createRequire(path.join(dir, 'package.json'))('onnxruntime-node');
  } catch (e) {
    fail(`cannot load onnxruntime-node from ${dir}/node_modules (${e.code ?? e.message}); ` +
         `run scripts/fetch_test_deps.sh or set ORT_DIR to a folder with node_modules/onnxruntime-node`);
  }
}

// npy descr <-> ONNX Runtime tensor type and the typed array holding its elements. bool is one
// byte per element in both numpy and ONNX Runtime.
const npy_types = {
  '<f4': { type: 'float32', array: Float32Array },
  // float16 travels as its bits: onnxruntime-node takes and gives a Uint16Array for it.
  '<f2': { type: 'float16', array: Uint16Array },
  '<i8': { type: 'int64', array: BigInt64Array },
  '<i4': { type: 'int32', array: Int32Array },
  '|u1': { type: 'uint8', array: Uint8Array },
  '|i1': { type: 'int8', array: Int8Array },
  '|b1': { type: 'bool', array: Uint8Array },
};
const npy_descr_of = Object.fromEntries(Object.entries(npy_types).map(([descr, t]) => [t.type, descr]));

// Format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
function npy_read(file, ort) {
  let bytes;
  try { bytes = fs.readFileSync(file); } catch (e) { fail(`${file}: cannot read (${e.code})`); }
  if (bytes.length < 10 || bytes.toString('latin1', 0, 6) !== '\x93NUMPY') fail(`${file}: not a .npy file`);
  const major = bytes[6];
  const header_size = major === 1 ? bytes.readUInt16LE(8) : bytes.readUInt32LE(8);
  const header_start = major === 1 ? 10 : 12;
  if (header_start + header_size > bytes.length) fail(`${file}: truncated .npy header`);
  const header = bytes.toString('latin1', header_start, header_start + header_size);
  const descr = /'descr':\s*'([^']+)'/.exec(header)?.[1];
  const fortran = /'fortran_order':\s*(True|False)/.exec(header)?.[1];
  const shape_text = /'shape':\s*\(([^)]*)\)/.exec(header)?.[1];
  if (descr === undefined || fortran === undefined || shape_text === undefined) fail(`${file}: malformed .npy header`);
  if (fortran === 'True') fail(`${file}: Fortran-order arrays are not supported`);
  const t = npy_types[descr];
  if (!t) fail(`${file}: element type '${descr}' not supported (use one of ${Object.keys(npy_types).join(' ')})`);
  const shape = shape_text.split(',').map((s) => s.trim()).filter((s) => s !== '').map(Number);
  const count = shape.reduce((a, b) => a * b, 1);
  const data_start = header_start + header_size;
  const data_size = count * t.array.BYTES_PER_ELEMENT;
  if (bytes.length - data_start !== data_size)
    fail(`${file}: shape (${shape}) needs ${data_size} data bytes, the file has ${bytes.length - data_start}`);
  // Copy: a typed array must start at a multiple of its element size, the data in the file need not.
  const data = new t.array(bytes.buffer.slice(bytes.byteOffset + data_start, bytes.byteOffset + data_start + data_size));
  return new ort.Tensor(t.type, data, shape);
}

function npy_write(file, tensor) {
  const descr = npy_descr_of[tensor.type];
  if (!descr) fail(`output type '${tensor.type}' not supported (${Object.keys(npy_descr_of).join(' ')})`);
  const shape = tensor.dims.length === 1 ? `(${tensor.dims[0]},)` : `(${tensor.dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  // Version 1.0: the 10-byte preamble plus the header, ending in '\n', is a multiple of 64 bytes.
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n';
  const preamble = Buffer.alloc(10);
  preamble.write('\x93NUMPY', 0, 'latin1');
  preamble[6] = 1;
  preamble[7] = 0;
  preamble.writeUInt16LE(header.length, 8);
  const data = Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
  fs.writeFileSync(file, Buffer.concat([preamble, Buffer.from(header, 'latin1'), data]));
}

const file_name_of = (output_name) => output_name.replace(/[^A-Za-z0-9._-]/g, '_') + '.npy';

async function main() {
  const [model, out_dir, ...input_args] = process.argv.slice(2);
  if (!model || !out_dir) fail('usage: node ort_run.mjs MODEL.onnx OUTDIR [NAME=FILE.npy ...]');
  const ort = ort_load();

  let session;
  try {
    session = await ort.InferenceSession.create(model, {
      executionProviders: ['cpu'], intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all',
    });
  } catch (e) {
    fail(`${model}: ONNX Runtime rejects the model: ${e.message}`);
  }

  const feeds = {};
  for (const arg of input_args) {
    const eq = arg.indexOf('=');
    if (eq <= 0) fail(`input '${arg}' is not NAME=FILE.npy`);
    const name = arg.slice(0, eq);
    if (!session.inputNames.includes(name)) fail(`${model} has no input '${name}' (inputs: ${session.inputNames.join(', ')})`);
    feeds[name] = npy_read(arg.slice(eq + 1), ort);
  }
  const missing = session.inputNames.filter((name) => !(name in feeds));
  if (missing.length) fail(`missing inputs: ${missing.join(', ')} (give NAME=FILE.npy for each)`);

  let outputs;
  try {
    outputs = await session.run(feeds);
  } catch (e) {
    fail(`${model}: run failed: ${e.message}`);
  }
  fs.mkdirSync(out_dir, { recursive: true });
  for (const name of session.outputNames) {
    const file = path.join(out_dir, file_name_of(name));
    npy_write(file, outputs[name]);
    console.log(`${name}: ${outputs[name].type} [${outputs[name].dims.join(', ')}] -> ${file}`);
  }
}

await main();
