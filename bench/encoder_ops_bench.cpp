// The Whisper encoder's two slow ops on their own: self-attention over 1500 positions
// (whisper-tiny: 6 heads of 64; base: 8 heads) and exact gelu on the FFN's [1500, 4 x d]
// activations, plus a decode step's attention (1 query row against a 1500-key cross
// cache) so that a change to the long path can be seen not to cost the short one.
//   tensorvm-bench-encoder-ops [threads=1] [reps=7]
// TENSORVM_ISA=scalar|avx2|avx512|avx512_vnni picks the kernel variant (ops/cpu.h).
// Prints the median ms, the GFLOP/s of attention's two products (4 * Tq * Tk * D per
// head) and the median ns per gelu element. CPU time per call is printed too, since the
// machine these run on is often shared.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ops/cpu.h"
#include "ops/registry.h"
#include "vm/thread_pool.h"

namespace {

using vm::DType;
using vm::Shape;
using vm::Tensor;
using vm::Value;

Tensor randn(const Shape& s, std::mt19937& g, float sd) {
  Tensor t = Tensor::empty(DType::f32, s);
  std::normal_distribution<float> d(0.0f, sd);
  float* p = t.data<float>();
  for (int64_t i = 0; i < s.numel(); ++i) p[i] = d(g);
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double cpu_ms() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

struct Timing {
  double wall_ms, cpu_ms;
};

// Median wall and CPU ms of `reps` calls of op(args) after one warm-up call.
Timing time_op(const char* name, const std::vector<Value>& args, const std::vector<std::pair<std::string, Value>>& kw,
               ops::OpContext& ctx, int reps) {
  const ops::OpDef* op = ops::Registry::get().find(name);
  ops::call(*op, args, kw, ctx);
  std::vector<double> wall, cpu;
  for (int r = 0; r < reps; ++r) {
    const double c0 = cpu_ms();
    const auto t0 = std::chrono::steady_clock::now();
    ops::call(*op, args, kw, ctx);
    wall.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    cpu.push_back(cpu_ms() - c0);
  }
  return {median(wall), median(cpu)};
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 7;
  vm::ThreadPool pool(threads);
  ops::OpContext ctx;
  if (threads > 1) {
    ctx.threads = &pool;
    ctx.num_threads = threads;
  }
  const ops::CpuInfo& cpu = ops::cpu_info();
  fmt::print("Whisper encoder ops, {} thread(s), median of {}\n", threads, reps);
  fmt::print("cpu: {} | kernels: {} (TENSORVM_ISA=scalar|avx2|avx512|avx512_vnni|neon forces one)\n",
             cpu.model.empty() ? cpu.arch : cpu.model, ops::kernel_table().name);
  fmt::print("{:<40} {:>10} {:>10} {:>10}\n", "op", "wall ms", "cpu ms", "GFLOP/s");
  std::mt19937 g(3);
  struct Attn {
    const char* what;
    int64_t H, Tq, Tk, D;
  };
  for (const Attn a : {Attn{"attention tiny 6x64, 1500x1500", 6, 1500, 1500, 64},
                       Attn{"attention base 8x64, 1500x1500", 8, 1500, 1500, 64},
                       Attn{"attention 6x80, 1499x1499", 6, 1499, 1499, 80},
                       Attn{"attention 8x64, 64x64 (prefill)", 8, 64, 64, 64},
                       Attn{"attention decode 6x64, 1x1500", 6, 1, 1500, 64},
                       Attn{"attention decode 6x64, 4x1500", 6, 4, 1500, 64}}) {
    const Tensor q = randn({1, a.H, a.Tq, a.D}, g, 1.0f), k = randn({1, a.H, a.Tk, a.D}, g, 1.0f),
                 v = randn({1, a.H, a.Tk, a.D}, g, 1.0f);
    const Timing t = time_op("attention", {Value(q), Value(k), Value(v)}, {}, ctx, reps);
    const double flop = 4.0 * double(a.H * a.Tq * a.Tk * a.D);
    fmt::print("{:<40} {:>10.3f} {:>10.3f} {:>10.1f}\n", a.what, t.wall_ms, t.cpu_ms, flop / t.cpu_ms / 1e6);
  }
  for (const int64_t ffn : {int64_t(1536), int64_t(2048)}) {
    const Tensor x = randn({1, 1500, ffn}, g, 2.0f);
    const std::vector<std::pair<std::string, Value>> kw{{"approximate", Value::from_str("none")}};
    const Timing t = time_op("gelu", {Value(x)}, kw, ctx, reps);
    fmt::print("{:<40} {:>10.3f} {:>10.3f} {:>7.2f} ns/elem\n", fmt::format("gelu exact [1500, {}]", ffn), t.wall_ms,
               t.cpu_ms, t.cpu_ms * 1e6 / double(x.numel()));
  }
  return 0;
}
