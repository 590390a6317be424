// Prepended to the Node tensorvm-run.js (--pre-js): Emscripten's getenv() reads its own
// ENV object, not process.env, so the TENSORVM_* settings (TENSORVM_ISA, ...) are copied in
// before main runs, and the WebAssembly command line honours them like the native one.
Module['preRun'] = Module['preRun'] || [];
Module['preRun'].push(function () {
  for (const key of Object.keys(process.env)) {
    if (key.startsWith('TENSORVM_')) ENV[key] = process.env[key];
  }
});
