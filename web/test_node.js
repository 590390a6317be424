// The C API under Node (.ci/wasm-generate.py drives it): runs generate on a program loaded
// from bytes for each case of CASES (a JSON list of {ids, args}) and prints one JSON line of
// results, then feeds hostile bytes to tvm_load / tvm_generate and checks each gives an error
// string rather than an abort.
//   node web/test_node.js BASE PROGRAM_DIR CASES_JSON [simd|scalar] [ISA]
'use strict';
const fs = require('fs');
const path = require('path');
const Tensorvm = require('./tensorvm.js');

async function main() {
  const [base, dir, casesJson, build, isa] = process.argv.slice(2);
  const rt = await Tensorvm.open(base, build ? {build} : {});
  if (isa) rt.setVariant(isa);
  const read = (name) => fs.existsSync(path.join(dir, name)) ? fs.readFileSync(path.join(dir, name)) : null;
  const text = read('program.py').toString('utf8'), weights = read('weights.safetensors'), meta = read('meta.json');
  const prog = rt.load(text, weights, meta ? meta.toString('utf8') : '');
  const results = [];
  for (const c of JSON.parse(casesJson)) {
    let steps = 0;
    const t0 = process.hrtime.bigint();
    const ids = prog.generate(c.ids, c.args, () => { ++steps; return true; });
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    results.push({ids, steps, ms});
  }
  // Hostile input: each must throw an Error carrying the runtime's message.
  const hostile = [];
  const expectError = (what, f) => {
    try {
      f();
      hostile.push(what + ': no error');
    } catch (e) {
      if (!e.message) hostile.push(what + ': empty message');
    }
  };
  const bytes = new Uint8Array(weights);
  expectError('truncated weights', () => rt.load(text, bytes.subarray(0, bytes.length >> 1), ''));
  expectError('garbage weights', () => rt.load(text, bytes.map((b, i) => (i < 64 ? (b * 7 + i) & 255 : b)), ''));
  expectError('garbage header length', () => { const w = new Uint8Array(bytes); w[7] = 0x7f; return rt.load(text, w, ''); });
  expectError('program text cut', () => rt.load(text.slice(0, text.length >> 1), weights, ''));
  expectError('program not IR', () => rt.load('import os\n' + text, weights, ''));
  expectError('deep nesting', () => {
    let t = '# tensorvm ir 1\ndef f0(x: int) -> int:\n    return x\n';
    for (let i = 1; i < 5000; ++i) t += `def f${i}(x: int) -> int:\n    y = f${i - 1}(x)\n    return y\n`;
    return rt.load(t, null, '');
  });
  expectError('bad meta', () => rt.load(text, weights, '{"format": "x"'));
  expectError('token id out of range', () => prog.generate('5 99999 0', {max_new_tokens: 4}));
  expectError('negative id', () => prog.generate('5 -3 0', {max_new_tokens: 4}));
  expectError('no ids', () => prog.generate('', {max_new_tokens: 4}));
  expectError('bad args', () => prog.generate('5 0', {max_new_tokens: 'lots'}));
  expectError('huge max_new_tokens', () => prog.generate('5 0', {max_new_tokens: '1152921504606846976'}));
  expectError('unknown function', () => prog.generate('5 0', {}, null, {function: 'nope'}));
  expectError('unknown variant', () => rt.setVariant('avx512'));
  // The program still runs after all of that.
  const again = prog.generate(JSON.parse(casesJson)[0].ids, JSON.parse(casesJson)[0].args);
  if (JSON.stringify(again) !== JSON.stringify(results[0].ids)) hostile.push('rerun after errors differs');
  prog.free();
  console.log(JSON.stringify({variant: rt.variant(), build: rt.build, results, hostile}));
}

main().catch((e) => {
  console.error('test_node: ' + (e && e.stack || e));
  process.exit(1);
});
