// The C API under Node (.ci/wasm-generate.py drives it): runs generate on a program loaded
// from bytes for each case of CASES (a JSON list of {ids, args}) and prints one JSON line of
// results, then feeds hostile bytes to tvm_load / tvm_generate and checks each gives an error
// string rather than an abort.
// Text cases ({text, args}, .ci/wasm-text.py drives them): the program directory is loaded
// through the module's file system (loadFiles) with its tokenizer, each text translated with
// its pieces streamed (their concatenation must be the result), then hostile text (none,
// empty, invalid UTF-8, huge, a program without tokenizer) must give errors.
//   node web/test_node.js BASE PROGRAM_DIR CASES_JSON [simd|scalar|simd-mt] [ISA]
// The threaded build (simd-mt) runs every call on runtime.threads (one a core, up to its pool).
'use strict';
const fs = require('fs');
const path = require('path');
const Tensorvm = require('./tensorvm.js');

async function main() {
  const [base, dir, casesJson, build, isa] = process.argv.slice(2);
  const rt = await Tensorvm.open(base, build ? {build} : {});
  if (isa) rt.setVariant(isa);
  const cases = JSON.parse(casesJson);
  if (cases.length && (cases[0].text !== undefined || cases[0].pcm !== undefined)) return textMain(rt, dir, cases);
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
  console.log(JSON.stringify({variant: rt.variant(), build: rt.build, threads: rt.threads, results, hostile}));
}

// Every file under `dir` as {relative path: bytes}, as a page's directory picker gives them.
function readTree(dir, prefix, out) {
  out = out || {};
  for (const e of fs.readdirSync(path.join(dir, prefix || ''), {withFileTypes: true})) {
    const rel = (prefix ? prefix + '/' : '') + e.name;
    if (e.isDirectory()) readTree(dir, rel, out);
    else if (e.isFile()) out[rel] = fs.readFileSync(path.join(dir, rel));
  }
  return out;
}

function textMain(rt, dir, cases) {
  const files = readTree(dir);
  const prog = rt.loadFiles(files);
  const results = [];
  const hostile = [];
  // {pcm: FILE of little-endian f32 samples}: Whisper's transcribe; else translate.
  const run = (c, args, cb) => (c.pcm !== undefined
    ? prog.transcribe(new Float32Array(new Uint8Array(fs.readFileSync(c.pcm)).buffer), args, cb)
    : prog.translate(c.text, args, cb));
  for (const c of cases) {
    let steps = 0, streamed = '', last = '';
    const t0 = process.hrtime.bigint();
    const text = run(c, c.args, (piece, soFar) => {
      ++steps;
      streamed = piece ? streamed + piece : soFar;  // "" piece: the text was rewritten
      last = soFar;
      return true;
    });
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (streamed !== text || last !== text) hostile.push(`streamed text ${JSON.stringify(streamed)} != result ${JSON.stringify(text)}`);
    results.push({text, steps, ms});
  }
  const expectError = (what, f, want) => {
    try {
      f();
      hostile.push(what + ': no error');
    } catch (e) {
      if (!e.message) hostile.push(what + ': empty message');
      else if (want && !e.message.includes(want)) hostile.push(`${what}: message '${e.message}' lacks '${want}'`);
    }
  };
  if (cases[0].pcm !== undefined) {  // Whisper: hostile samples, then the same transcript again
    expectError('no samples', () => prog.transcribe(new Float32Array(0)), 'no samples');
    expectError('unknown language', () => prog.transcribe(new Float32Array(1600), {language: 'xx'}));
    expectError('unknown task', () => prog.transcribe(new Float32Array(1600), {task: 'summarise'}));
    expectError('translate on Whisper', () => prog.translate('hello'));
    const again = run(cases[0], cases[0].args);
    if (again !== results[0].text) hostile.push('rerun after errors differs');
    prog.free();
    console.log(JSON.stringify({variant: rt.variant(), build: rt.build, threads: rt.threads, results, hostile}));
    return;
  }
  expectError('no text', () => prog.translate(''), 'no text');
  expectError('invalid UTF-8', () => prog.translate(new Uint8Array([0x49, 0x20, 0xff, 0xfe, 0x21])), 'not valid UTF-8');
  expectError('overlong UTF-8', () => prog.translate(new Uint8Array([0x41, 0xc0, 0xaf])), 'not valid UTF-8');
  expectError('cut UTF-8', () => prog.translate(new Uint8Array([0x41, 0xe2, 0x82])), 'not valid UTF-8');
  // 2 MB of words: far past the model's positions, an error from the runtime (not an abort,
  // not a 2-million-square attention allocation).
  expectError('huge text', () => prog.translate('I have twenty-one cats. '.repeat(90000)));
  expectError('bad args', () => prog.translate('I have two cats.', {max_new_tokens: 'lots'}));
  expectError('unknown arg', () => prog.translate('I have two cats.', {nope: 1}), 'nope');
  expectError('unknown tgt_lang', () => prog.translate('I have two cats.', {tgt_lang: 'xx'}));
  expectError('complete on a translator', () => prog.complete('I have two cats.'), 'complete');
  const noTok = Object.assign({}, files);
  for (const k of Object.keys(noTok)) if (k.startsWith('tokenizer/')) delete noTok[k];
  expectError('tokenizer files missing', () => rt.loadFiles(noTok).translate('I have two cats.'));
  const fromBytes = rt.load(files['program.py'].toString('utf8'), files['weights.safetensors'], files['meta.json'].toString('utf8'));
  expectError('program from bytes', () => fromBytes.translate('I have two cats.'), 'tvm_load_dir');
  fromBytes.free();
  expectError('file name escaping', () => rt.loadFiles({'../x': 'y'}), 'bad file name');
  // Still translates, the same, after all of that.
  expectError('transcribe on a translator', () => prog.transcribe(new Float32Array(1600)), 'transcribe');
  const again = run(cases[0], cases[0].args);
  if (again !== results[0].text) hostile.push('rerun after errors differs');
  prog.free();
  console.log(JSON.stringify({variant: rt.variant(), build: rt.build, threads: rt.threads, results, hostile}));
}

// exit() rather than returning: the threaded build's pthread workers would keep Node alive.
main().then(() => process.exit(0), (e) => {
  console.error('test_node: ' + (e && e.stack || e));
  process.exit(1);
});
