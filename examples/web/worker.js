// The page's worker: runs tensorvm off the main thread, so each streamed step repaints.
// Messages in: {open: base}, {load: {text, weights, meta}}, {generate: {ids, args}}.
// Messages out: {ready: {build, variant, threads}}, {loaded}, {step: rows, ms}, {done: ids, ms, steps}, {error}.
'use strict';
importScripts('../../web/tensorvm.js');
let rt = null, prog = null;

onmessage = async (e) => {
  const m = e.data;
  try {
    if (m.open) {
      rt = await Tensorvm.open(m.open, m.build ? {build: m.build} : {});
      postMessage({ready: {build: rt.build, variant: rt.variant()}});
    } else if (m.load) {
      if (prog) prog.free();
      prog = rt.load(m.load.text, m.load.weights, m.load.meta);
      postMessage({loaded: true});
    } else if (m.generate) {
      const t0 = performance.now();
      let steps = 0;
      const ids = prog.generate(m.generate.ids, m.generate.args, (rows) => {
        ++steps;
        postMessage({step: rows, ms: performance.now() - t0});
        return true;
      });
      postMessage({done: ids, ms: performance.now() - t0, steps});
    }
  } catch (err) {
    postMessage({error: String(err && err.message || err)});
  }
};
