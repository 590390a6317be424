// The page's worker: runs tensorvm off the main thread, so each streamed step repaints.
// Messages in: {open: base, build}, {load: {files}} (a program directory as {path: bytes}),
// {generate: {ids, args}} (token ids), {translate: {text, args}} (text, with the tokenizer).
// Messages out: {ready: {build, variant, threads}}, {loaded: {text: bool}}, {step: rows, ms},
// {piece, text, ms}, {done: ids | text, ms, steps}, {error}.
'use strict';
importScripts('../../web/tensorvm.js');
let rt = null, prog = null;

onmessage = async (e) => {
  const m = e.data;
  try {
    if (m.open) {
      rt = await Tensorvm.open(m.open, m.build ? {build: m.build} : {});
      postMessage({ready: {build: rt.build, variant: rt.variant(), threads: rt.threads}});
    } else if (m.load) {
      if (prog) prog.free();
      prog = null;
      const meta = m.load.files['meta.json'] ? JSON.parse(new TextDecoder().decode(m.load.files['meta.json'])) : {};
      prog = rt.loadFiles(m.load.files);
      postMessage({loaded: {text: !!meta.tokenizer}});
    } else if (m.generate) {
      const t0 = performance.now();
      let steps = 0;
      const ids = prog.generate(m.generate.ids, m.generate.args, (rows) => {
        ++steps;
        postMessage({step: rows, ms: performance.now() - t0});
        return true;
      });
      postMessage({done: ids, ms: performance.now() - t0, steps});
    } else if (m.translate) {
      const t0 = performance.now();
      let steps = 0;
      const text = prog.translate(m.translate.text, m.translate.args, (piece, soFar) => {
        ++steps;
        postMessage({piece, text: soFar, ms: performance.now() - t0});
        return true;
      });
      postMessage({done: text, ms: performance.now() - t0, steps});
    }
  } catch (err) {
    postMessage({error: String(err && err.message || err)});
  }
};
