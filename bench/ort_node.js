// ONNX Runtime from Node (npm's onnxruntime-node, the official binding): the independent peer of
// bench/model_engine.sh. One intra-op thread, sequential execution, every graph optimization, as
// sonic's sessions; random inputs of each model's config shapes (variable dimensions as 32).
//
//   NODE_PATH=DIR/node_modules node bench/ort_node.js REPOSITORY NAME:BATCH...
//
// Prints one JSON line per model and batch: the median of Run's time, in microseconds.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const PARTICLES = 32;

// [{name, type, dims}] of a config.pbtxt's inputs (the generated configs' layout).
function configInputs(text) {
  const inputs = [];
  const block = text.slice(text.indexOf('input ['), text.indexOf('output ['));
  const entry = /name: "([^"]+)"\s*data_type: (TYPE_\w+)\s*dims: \[([^\]]*)\]/g;
  for (let m; (m = entry.exec(block));) {
    inputs.push({name: m[1], type: m[2], dims: m[3].split(',').map((d) => parseInt(d, 10))});
  }
  return inputs;
}

function randomTensor(input, batch) {
  const shape = [batch, ...input.dims.map((d) => (d < 0 ? PARTICLES : d))];
  const count = shape.reduce((a, b) => a * b, 1);
  if (input.type === 'TYPE_INT64') {
    const values = new BigInt64Array(count).map(() => BigInt(Math.floor(Math.random() * 8)));
    return new ort.Tensor('int64', values, shape);
  }
  // Box-Muller normals.
  const values = new Float32Array(count).map(
      () => Math.sqrt(-2 * Math.log(1 - Math.random())) * Math.cos(2 * Math.PI * Math.random()));
  return new ort.Tensor('float32', values, shape);
}

async function medianUs(run, seconds = 0.4) {
  await run();
  await run();
  const us = [];
  const start = process.hrtime.bigint();
  while (us.length < 5 || Number(process.hrtime.bigint() - start) < seconds * 1e9) {
    const t0 = process.hrtime.bigint();
    await run();
    us.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  us.sort((a, b) => a - b);
  return us[Math.floor(us.length / 2)];
}

async function main() {
  const [repository, ...jobs] = process.argv.slice(2);
  for (const job of jobs) {
    const [model, batchText] = job.split(':');
    const batch = parseInt(batchText, 10);
    const directory = path.join(repository, model);
    const inputs = configInputs(fs.readFileSync(path.join(directory, 'config.pbtxt'), 'utf8'));
    const session = await ort.InferenceSession.create(path.join(directory, '1', 'model.onnx'), {
      intraOpNumThreads: 1,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'all',
    });
    const feeds = {};
    for (const input of inputs) feeds[input.name] = randomTensor(input, batch);
    const us = await medianUs(() => session.run(feeds));
    console.log(JSON.stringify({model, batch, path: 'ort_node', us: Math.round(us * 10) / 10}));
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
