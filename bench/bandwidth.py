"""The memory-bandwidth limit of batch-1 decoding.

1. Bytes of weights read per decode step, from the checkpoint's own tensor sizes
   (read from the safetensors headers, no framework needed):

       bytes/step = sum over decoder layers l of
                        |self_attn.{q,k,v,out}_proj (W,b)|
                      + |encoder_attn.{q,out}_proj (W,b)|
                      + |fc1 (W,b)| + |fc2 (W,b)|
                      + |self_attn_layer_norm, encoder_attn_layer_norm, final_layer_norm|
                  + |output projection W| (vocab x d_model; the tied embedding)
                  + |final_logits_bias|
                  (x 4 bytes in float32)

   Cross-attention k/v projections are left out: they are applied to the
   encoder output once per call (prefill), not per step; their size is printed
   beside. The embedding *row* lookups, the positions and the KV caches
   (activations, not weights) are not counted. For int8 the matrices count
   1 byte per element + one float32 scale per output row (CTranslate2's layout),
   vectors stay float32; for int4 half a byte per element + one f16 scale per group of 32
   (issue 29's default group).

2. The machine's streaming bandwidth, measured with simple kernels on a buffer
   much larger than the caches: "read" (sum of a 512 MiB array) and "copy"
   (512 MiB -> 512 MiB, counted as read + write), with 1 thread and with
   ``threads`` threads. Two implementations: a tiny C/OpenMP kernel (compiled
   with the system C compiler if there is one) and numpy (threads via a thread
   pool; numpy releases the GIL in these loops). Medians of several
   repetitions; the best median read rate is reported as the bandwidth.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

DTYPE_BYTES = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8, "I64": 8, "I32": 4, "I8": 1, "U8": 1, "BOOL": 1}


def safetensors_shapes(checkpoint_dir: Path) -> dict[str, tuple[str, tuple[int, ...]]]:
    out = {}
    for f in sorted(Path(checkpoint_dir).glob("*.safetensors")):
        with open(f, "rb") as fh:
            (n,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(n))
        for k, v in header.items():
            if k != "__metadata__":
                out[k] = (v["dtype"], tuple(v["shape"]))
    return out


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def decode_step_weights(checkpoint_dir: Path) -> dict:
    """Parameter counts and bytes read per decode step (see module docstring)."""
    shapes = safetensors_shapes(checkpoint_dir)
    per_step_mats, per_step_vecs, cross_kv, out_proj = 0, 0, 0, 0
    out_rows = 0
    mat_rows = 0
    for k, (_, shape) in shapes.items():
        if not k.startswith("model.decoder.layers."):
            continue
        n = _numel(shape)
        if ".encoder_attn.k_proj." in k or ".encoder_attn.v_proj." in k:
            cross_kv += n
        elif len(shape) == 2:
            per_step_mats += n
            mat_rows += shape[0]
        else:
            per_step_vecs += n
    if "lm_head.weight" in shapes:
        head = shapes["lm_head.weight"][1]
    else:
        head = next(shapes[k][1] for k in ("model.shared.weight", "model.decoder.embed_tokens.weight") if k in shapes)
    out_proj = _numel(head)
    out_rows = head[0]
    flb = _numel(shapes["final_logits_bias"][1]) if "final_logits_bias" in shapes else 0
    params = per_step_mats + per_step_vecs + out_proj + flb
    f32 = 4 * params
    int8 = (per_step_mats + out_proj) + 4 * (mat_rows + out_rows) + 4 * (per_step_vecs + flb)
    # 4-bit, group-wise (issue 29's int4 / w4a8): half a byte per element + one f16 scale per 32
    int4 = (per_step_mats + out_proj) // 2 + 2 * ((per_step_mats + out_proj) // 32) + 4 * (per_step_vecs + flb)
    return {
        "decoder_layer_params_per_step": per_step_mats + per_step_vecs,
        "output_projection_params": out_proj,
        "final_logits_bias_params": flb,
        "cross_kv_projection_params_prefill_only": cross_kv,
        "params_per_step": params,
        "bytes_per_step_float32": f32,
        "bytes_per_step_int8": int8,
        "bytes_per_step_int4": int4,
        "output_projection_share": out_proj / params if params else 0.0,
        "formula": (
            "bytes/step = 4 * ( sum_layers[ self_attn q,k,v,o (W+b) + cross_attn q,o (W+b) + fc1,fc2 (W+b) "
            "+ 3 LayerNorms ] + vocab*d_model (output projection) + vocab (final_logits_bias) ); "
            "cross-attn k,v projections excluded (once per call, at prefill)"
        ),
    }


_C_KERNEL = r"""
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>
int main(int argc, char **argv) {
  size_t mib = (size_t)atol(argv[1]); int reps = atoi(argv[2]); int threads = atoi(argv[3]);
  omp_set_num_threads(threads);
  size_t n = mib * 1024 * 1024 / sizeof(float); /* a multiple of 64 */
  float *a = aligned_alloc(64, n * sizeof(float)), *b = aligned_alloc(64, n * sizeof(float));
  #pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++) { a[i] = 1.0f; b[i] = 0.0f; }
  printf("{\"read\": [");
  volatile float sink = 0;
  for (int r = 0; r < reps; r++) {
    double t0 = omp_get_wtime(); float s = 0;
    /* 64 independent partial sums per thread: the loop is bound by loads, not by add latency */
    #pragma omp parallel reduction(+:s)
    {
      float acc[64] = {0};
      #pragma omp for schedule(static)
      for (size_t i = 0; i < n; i += 64)
        for (int j = 0; j < 64; j++) acc[j] += a[i + j];
      for (int j = 0; j < 64; j++) s += acc[j];
    }
    double t1 = omp_get_wtime(); sink += s;
    printf("%s%.4f", r ? ", " : "", n * sizeof(float) / (t1 - t0) / 1e9);
  }
  printf("], \"copy\": [");
  for (int r = 0; r < reps; r++) {
    double t0 = omp_get_wtime();
    #pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) b[i] = a[i];
    double t1 = omp_get_wtime();
    printf("%s%.4f", r ? ", " : "", 2.0 * n * sizeof(float) / (t1 - t0) / 1e9);
  }
  printf("], \"sink\": %g}\n", (double)sink + b[n / 2]);
  return 0;
}
"""


def _c_bandwidth(threads: int, mib: int, reps: int, build_dir: Path) -> dict | None:
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        return None
    build_dir.mkdir(parents=True, exist_ok=True)
    exe = build_dir / "stream_bw"
    src = build_dir / "stream_bw.c"
    stale = not exe.exists() or not src.exists() or src.read_text() != _C_KERNEL
    if stale:
        src.write_text(_C_KERNEL)
        r = subprocess.run(
            [cc, "-O3", "-march=native", "-fopenmp", str(src), "-o", str(exe)], capture_output=True, text=True
        )
        if r.returncode != 0:
            return {"kernel": "C/OpenMP", "error": f"compile failed: {r.stderr.strip()[:300]}"}
    r = subprocess.run([str(exe), str(mib), str(reps), str(threads)], capture_output=True, text=True)
    if r.returncode != 0:
        return {"kernel": "C/OpenMP", "error": r.stderr.strip()[:300]}
    d = json.loads(r.stdout)
    return {
        "kernel": "C/OpenMP, -O3 -march=native",
        "read_GBps": float(np.median(d["read"][1:] or d["read"])),
        "copy_GBps": float(np.median(d["copy"][1:] or d["copy"])),
        "read_all": d["read"],
        "copy_all": d["copy"],
    }


def _numpy_bandwidth(threads: int, mib: int, reps: int) -> dict:
    n = mib * 1024 * 1024 // 8
    a = np.ones(n, dtype=np.int64)  # integer sum: a plain vectorised loop (float sum is pairwise)
    b = np.empty_like(a)
    step = (n + threads - 1) // threads
    parts = [slice(i * step, min(n, (i + 1) * step)) for i in range(threads)]

    def timed(fn):
        ts = []
        with ThreadPoolExecutor(threads) as ex:
            list(ex.map(fn, parts))  # warm-up
            for _ in range(reps):
                t0 = time.perf_counter()
                list(ex.map(fn, parts))
                ts.append(time.perf_counter() - t0)
        return ts

    read = [a.nbytes / t / 1e9 for t in timed(lambda s: np.add.reduce(a[s]))]
    copy = [2 * a.nbytes / t / 1e9 for t in timed(lambda s: np.copyto(b[s], a[s]))]
    return {
        "kernel": "numpy (int64 add.reduce / copyto, one slice per thread)",
        "read_GBps": float(np.median(read)),
        "copy_GBps": float(np.median(copy)),
        "read_all": [round(x, 3) for x in read],
        "copy_all": [round(x, 3) for x in copy],
    }


def measure(threads: int, mib: int = 512, reps: int = 7, build_dir: Path | None = None) -> dict:
    """Streaming bandwidth in GB/s (1e9 bytes/s), with 1 thread and with ``threads`` threads.

    ``streaming_GBps`` is the best median read rate over kernels and thread counts: the
    machine's limit for a weight-streaming decode, whatever thread count reaches it."""
    out = {"threads": threads, "buffer_MiB": mib, "reps": reps, "runs": []}
    build_dir = build_dir or Path(tempfile.gettempdir()) / "tensorvm_bench_bw"
    for t in sorted({1, threads}):
        out["runs"].append({"threads": t, **_numpy_bandwidth(t, mib, reps)})
        c = _c_bandwidth(t, mib, reps + 1, build_dir)
        if c is not None:
            out["runs"].append({"threads": t, **c})
    ok = [r for r in out["runs"] if "read_GBps" in r]
    best = max(ok, key=lambda r: r["read_GBps"])
    out["streaming_GBps"] = best["read_GBps"]
    out["best"] = {k: best[k] for k in ("kernel", "threads", "read_GBps", "copy_GBps")}
    return out


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--mib", type=int, default=512)
    args = ap.parse_args()
    if args.checkpoint:
        print(json.dumps(decode_step_weights(Path(args.checkpoint)), indent=2))
    print(json.dumps(measure(args.threads, args.mib), indent=2))
