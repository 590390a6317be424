// tensorvm in JavaScript: picks the WebAssembly build this engine can run and wraps the C API
// of web/tensorvm_web.h (docs/web.md). Works in a page (a classic script: `Tensorvm.open`) and
// in Node (`require('./tensorvm.js').open`).
//
// A module is validated whole before it runs, so SIMD128 is tested here with a 1-instruction
// module and the SIMD build (kernel variants scalar + simd128) is loaded only where it
// validates; elsewhere the scalar build (scalar only). Threads need SharedArrayBuffer, which a
// page has only when cross-origin isolated (served with COOP/COEP headers: examples/web/serve.py):
// there the threaded SIMD build (Emscripten pthreads) is loaded, if it was built. Each build
// holds one .js + .wasm pair (the threaded one also its pthread worker, tensorvm-web.worker.js):
//   simd/tensorvm-web.js, scalar/tensorvm-web.js, simd-mt/tensorvm-web.js   (under `base`)
(function (root) {
  'use strict';

  // (module (func (result v128) (v128.const i32x4 0 0 0 0)))
  const SIMD_PROBE = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 22, 1, 20,
                                     0, 253, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 11]);

  function hasSimd128() {
    try {
      return WebAssembly.validate(SIMD_PROBE);
    } catch (e) {
      return false;
    }
  }

  function loadScript(url) {  // a page or a worker: Emscripten's factory as a global
    if (typeof importScripts === 'function') {
      importScripts(url);
      return Promise.resolve(root.createTensorvm);
    }
    return new Promise((resolve, reject) => {
      const s = document.createElement('script');
      s.src = url;
      s.onload = () => resolve(root.createTensorvm);
      s.onerror = () => reject(new Error('cannot load ' + url));
      document.head.appendChild(s);
    });
  }

  // A page may share memory between workers (pthreads) only when cross-origin isolated.
  function canThread() {
    return typeof SharedArrayBuffer === 'function' && root.crossOriginIsolated === true;
  }

  function isNode() {
    return typeof process === 'object' && !!(process.versions && process.versions.node) &&
           typeof window === 'undefined' && typeof importScripts !== 'function';
  }

  // Opens the runtime: {build: 'simd'|'scalar'|'simd-mt'} forces a build; default by feature
  // test (in Node: simd or scalar; pass simd-mt for threads). A page's automatic pick of
  // simd-mt falls back to simd when that build is missing (`WASM_QUICK=1 bash .ci/wasm` does
  // not build it). runtime.threads: the threads each call uses unless told (options.threads).
  async function open(base, options) {
    options = options || {};
    if (options.build) return openBuild(base, options.build);
    const simd = hasSimd128();
    if (simd && canThread() && !isNode()) {
      try {
        return await openBuild(base, 'simd-mt');
      } catch (e) {
        // not built: one thread
      }
    }
    return openBuild(base, simd ? 'simd' : 'scalar');
  }

  async function openBuild(base, build) {
    const dir = base.replace(/\/?$/, '/') + build + '/';
    const node = isNode();
    let factory;
    if (node) {
      factory = require(require('path').resolve(dir + 'tensorvm-web.js'));
    } else {
      factory = await loadScript(dir + 'tensorvm-web.js');
    }
    // Node: the .wasm handed over as bytes (Emscripten 3.1.6 would fetch() a file path).
    // A page: the threaded build's pthread workers load the main script again, by this URL
    // (a script loaded with importScripts does not know its own).
    const M = await factory(node
      ? {wasmBinary: require('fs').readFileSync(dir + 'tensorvm-web.wasm')}
      : {locateFile: (p) => dir + p, mainScriptUrlOrBlob: new URL(dir + 'tensorvm-web.js', root.location.href).href});
    return new Runtime(M, build);
  }

  function cores() {
    if (isNode()) return require('os').cpus().length;
    return (root.navigator && root.navigator.hardwareConcurrency) || 1;
  }

  class Runtime {
    constructor(M, build) {
      this.M = M;
      this.build = build;
      this.loaded = 0;
      // 1 without pthreads; else one a core, at most the workers started before main + 1.
      this.maxThreads = M._tvm_max_threads ? M._tvm_max_threads() : 1;  // a build from before it: 1
      this.threads = Math.max(1, Math.min(cores(), this.maxThreads));
    }
    // The heap as an Int32Array / Uint8Array. With pthreads, a worker may have grown the
    // memory: this thread's views then still show the old, shorter buffer until renewed.
    // Emscripten keeps its memory object to itself, but its own heap readers renew the views
    // first (GROWABLE_HEAP_U8 in a pthreads build with memory growth): reading a string does.
    heap32() { return this.renewed().HEAP32; }
    heapU8() { return this.renewed().HEAPU8; }
    renewed() {
      if (this.maxThreads > 1) this.M.UTF8ToString(this.M._tvm_last_error());
      return this.M;
    }
    error() { return this.M.UTF8ToString(this.M._tvm_last_error()); }
    variant() { return this.M.UTF8ToString(this.M._tvm_kernel_variant()); }
    setVariant(name) {
      if (!this.M.ccall('tvm_set_kernel_variant', 'number', ['string'], [name])) throw new Error(this.error());
    }
    bytes(data) {  // copies into the module's heap: [pointer, length]
      const u8 = typeof data === 'string' ? new TextEncoder().encode(data) : new Uint8Array(data);
      const p = this.M._malloc(Math.max(1, u8.length));
      this.heapU8().set(u8, p);
      return [p, u8.length];
    }
    // program.py text, weights.safetensors bytes, meta.json text (optional) -> a Program.
    load(programText, weights, metaText) {
      const parts = [this.bytes(programText), this.bytes(weights || new Uint8Array(0)), this.bytes(metaText || '')];
      try {
        const h = this.M._tvm_load(parts[0][0], parts[0][1], parts[1][0], parts[1][1], parts[2][0], parts[2][1]);
        if (!h) throw new Error(this.error());
        return new Program(this, h);
      } finally {
        for (const [p] of parts) this.M._free(p);
      }
    }
    // A program directory as {relative path: bytes or text} (program.py, weights.safetensors,
    // meta.json, tokenizer/...): written into the module's memory file system, loaded with
    // tvm_load_dir (weights copied, so their file is removed again), the rest kept for the
    // text calls, which read the tokenizer's files from there.
    loadFiles(files) {
      const FS = this.M.FS;
      const dir = '/programs/' + (++this.loaded);
      const made = new Set();
      const mkdirs = (path) => {
        let at = '';
        for (const part of path.split('/').filter(Boolean)) {
          at += '/' + part;
          if (!made.has(at) && !FS.analyzePath(at).exists) FS.mkdir(at);
          made.add(at);
        }
      };
      mkdirs(dir);
      for (const [name, data] of Object.entries(files)) {
        if (name.split('/').some((p) => p === '..' || p === '')) throw new Error('loadFiles: bad file name ' + name);
        const slash = name.lastIndexOf('/');
        if (slash > 0) mkdirs(dir + '/' + name.slice(0, slash));
        FS.writeFile(dir + '/' + name, typeof data === 'string' ? data : new Uint8Array(data));
      }
      const h = this.M.ccall('tvm_load_dir', 'number', ['string'], [dir]);
      if (FS.analyzePath(dir + '/weights.safetensors').exists) FS.unlink(dir + '/weights.safetensors');
      if (!h) throw new Error(this.error());
      return new Program(this, h);
    }
  }

  class Program {
    constructor(rt, handle) {
      this.rt = rt;
      this.handle = handle;
    }
    free() {
      if (this.handle) this.rt.M._tvm_free(this.handle);
      this.handle = 0;
    }
    // ids: "5 17 9 0; 30 8 0"; args: {num_beams: 4, ...}; onTokens(rows): each step's new
    // ids, one array per row; return false to stop. Returns the output ids as arrays.
    generate(ids, args, onTokens, options) {
      options = options || {};
      const M = this.rt.M;
      let cb = 0;
      if (onTokens) {
        cb = M.addFunction((user, ids, offsets, counts, rows) => {
          const out = [], heap = this.rt.heap32();
          for (let r = 0; r < rows; ++r) {
            const off = heap[(offsets >> 2) + r], n = heap[(counts >> 2) + r];
            const row = [];
            for (let j = 0; j < n; ++j) row.push(heap[(ids >> 2) + 2 * (off + j)]);  // low words of int64
            out.push(row);
          }
          return onTokens(out) === false ? 0 : 1;
        }, 'iiiiii');
      }
      try {
        const res = M.ccall('tvm_generate', 'number', ['number', 'string', 'string', 'string', 'number', 'number', 'number'],
                            [this.handle, options.function || 'generate', ids, argText(args), options.threads || this.rt.threads, cb, 0]);
        if (!res) throw new Error(this.rt.error());
        return M.UTF8ToString(res).split(';').map((r) => r.trim().split(/\s+/).map(Number));
      } finally {
        if (cb) M.removeFunction(cb);
      }
    }
    // Text in, text out (a program from loadFiles with its tokenizer): args as generate's,
    // plus src_lang / tgt_lang; text a string or UTF-8 bytes; onText(piece, textSoFar) after
    // each step, false stops.
    // Returns the output text, a line per input line, each ending in '\n'.
    translate(text, args, onText, options) { return this.text('tvm_translate', text, args, onText, options); }
    complete(text, args, onText, options) { return this.text('tvm_complete', text, args, onText, options); }
    // Whisper: the transcript of 16 kHz mono samples (a Float32Array, one 30-s window at
    // most); args as generate's, plus language / task; onText as translate's.
    transcribe(samples, args, onText, options) {
      options = options || {};
      const M = this.rt.M;
      const f32 = samples instanceof Float32Array ? samples : new Float32Array(samples);
      const [p, n] = this.rt.bytes(new Uint8Array(f32.buffer, f32.byteOffset, f32.byteLength));
      const cb = onText ? this.textCallback(onText) : 0;
      try {
        const res = M.ccall('tvm_transcribe', 'number', ['number', 'number', 'number', 'string', 'number', 'number', 'number'],
                            [this.handle, p, n / 4, argText(args), options.threads || this.rt.threads, cb, 0]);
        if (!res) throw new Error(this.rt.error());
        return M.UTF8ToString(res);
      } finally {
        M._free(p);
        if (cb) M.removeFunction(cb);
      }
    }
    textCallback(onText) {
      const M = this.rt.M;
      return M.addFunction((user, piece, soFar) => (onText(M.UTF8ToString(piece), M.UTF8ToString(soFar)) === false ? 0 : 1),
                           'iiii');
    }
    text(fn, text, args, onText, options) {
      options = options || {};
      const M = this.rt.M;
      const cb = onText ? this.textCallback(onText) : 0;
      // A string goes in as UTF-8; bytes (a Uint8Array) as they are, so that invalid UTF-8 can
      // reach the tokenizer's check (a string cannot hold it). NUL-terminated.
      const raw = typeof text === 'string' ? new TextEncoder().encode(text) : new Uint8Array(text);
      const z = new Uint8Array(raw.length + 1);
      z.set(raw);
      const [p] = this.rt.bytes(z);
      try {
        const res = M.ccall(fn, 'number', ['number', 'number', 'string', 'number', 'number', 'number'],
                            [this.handle, p, argText(args), options.threads || this.rt.threads, cb, 0]);
        if (!res) throw new Error(this.rt.error());
        return M.UTF8ToString(res);
      } finally {
        M._free(p);
        if (cb) M.removeFunction(cb);
      }
    }
  }

  function argText(args) {
    return Object.entries(args || {}).map(([k, v]) => k + '=' + (v === true ? 1 : v === false ? 0 : v)).join(';');
  }

  const api = {open, hasSimd128};
  if (typeof module === 'object' && module.exports) module.exports = api;
  else root.Tensorvm = api;
})(typeof self !== 'undefined' ? self : this);
