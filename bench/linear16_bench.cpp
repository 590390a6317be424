// linear's decode GEMV with f32, f16 and bf16 weights on Qwen2.5-0.5B's shapes: the MLP's
// gate/up ([4864, 896] weights) and down ([896, 4864]) products, `copies` of each called
// in turn (as the model's layers are) so that nothing is reused from cache, and the tied
// [151936, 896] output projection (2 copies: 545 MB in 16 bits). Every kernel variant this CPU runs, one after another.
//   tensorvm-bench-linear16 [threads=1] [reps=7] [rows=1] [copies=64]
// copies: enough that one pass is far past the last-level cache (64 x 8.7 MB in 16 bits).
// Prints the median ms per call and the GB/s of weight bytes read (f32: 4 bytes an
// element, f16/bf16: 2). Compare with bench/bandwidth.py's streaming read rate.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/half.h"
#include "core/thread_pool.h"
#include "ops/cpu.h"
#include "ops/registry.h"

namespace {

using vm::DType;
using vm::Tensor;
using vm::Value;

struct Shape2 {
  const char* name;
  int64_t out, in;
  int copies;
};

// `copies` weights of one shape in dtype dt, values in [-0.05, 0.05) from a cheap
// generator (hundreds of millions of them: mt19937 would take most of the run).
std::vector<Tensor> weights(DType dt, int64_t out, int64_t in, int copies, uint64_t& state) {
  std::vector<Tensor> ws;
  for (int c = 0; c < copies; ++c) {
    Tensor w = Tensor::empty(dt, {out, in});
    const int64_t n = out * in;
    for (int64_t i = 0; i < n; ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const float v = float(int32_t(state >> 32)) * (0.05f / 2147483648.0f);
      if (dt == DType::f32)
        w.data<float>()[i] = v;
      else
        static_cast<uint16_t*>(w.raw())[i] = dt == DType::f16 ? vm::f32_to_f16(v) : vm::f32_to_bf16(v);
    }
    ws.push_back(std::move(w));
  }
  return ws;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The median over reps of one pass over every copy, per call (ms).
double time_calls(const std::vector<Tensor>& ws, const Tensor& x, ops::OpContext& ctx, int reps) {
  const ops::OpDef* op = ops::Registry::get().find("linear");
  std::vector<double> ms;
  for (int r = 0; r < reps + 1; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (const Tensor& w : ws) ops::call(*op, {Value(x), Value(w)}, {}, ctx);
    const double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) ms.push_back(t / double(ws.size()));  // the first pass warms the pool
  }
  return median(ms);
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 7;
  const int64_t rows = argc > 3 ? std::atoll(argv[3]) : 1;
  const int copies = argc > 4 ? std::atoi(argv[4]) : 64;
  const Shape2 shapes[] = {{"gate/up [4864, 896]", 4864, 896, copies},
                           {"down [896, 4864]", 896, 4864, copies},
                           {"lm_head [151936, 896]", 151936, 896, 2}};
  vm::ThreadPool pool(threads);
  ops::OpContext ctx;
  ctx.threads = threads > 1 ? &pool : nullptr;  // one thread: no pool, as a Session with one thread
  ctx.num_threads = threads > 1 ? threads : 1;
  const ops::CpuInfo& cpu = ops::cpu_info();
  fmt::print("linear decode GEMV, Qwen2.5-0.5B shapes, {} row(s), {} thread(s), median of {}\n", rows, threads, reps);
  fmt::print("cpu: {}\n", cpu.model.empty() ? cpu.arch : cpu.model);
  fmt::print("{:<22} {:<12} {:>6} {:>10} {:>8}\n", "weight", "variant", "dtype", "ms/call", "GB/s");
  uint64_t state = 1;
  for (const Shape2& s : shapes) {
    std::mt19937 gx(7);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    Tensor x = Tensor::empty(DType::f32, {rows, s.in});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = d(gx);
    for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
      const std::vector<Tensor> ws = weights(dt, s.out, s.in, s.copies, state);
      const double bytes = double(s.out * s.in) * double(vm::dtype_size(dt));
      for (const std::string& variant : ops::supported_kernel_variants()) {
        ops::set_kernel_variant(variant);
        const double ms = time_calls(ws, x, ctx, reps);
        fmt::print("{:<22} {:<12} {:>6} {:>10.3f} {:>8.1f}\n", s.name, variant, vm::dtype_name(dt), ms, bytes / ms / 1e6);
      }
    }
  }
  ops::set_kernel_variant("auto");
  return 0;
}
