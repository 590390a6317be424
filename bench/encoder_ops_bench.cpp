// The Whisper encoder's two slow ops on their own: self-attention over 1500 positions
// (whisper-tiny: 6 heads of 64; base: 8 heads) and exact gelu on the FFN's [1500, 4 x d]
// activations, plus a decode step's attention (1 query row against a 1500-key cross
// cache) so that a change to the long path can be seen not to cost the short one.
//   tensorvm-bench-encoder-ops [threads=1] [reps=7]   (built in the build directory)
// TENSORVM_ISA=scalar|avx2|avx512|avx512_vnni picks the kernel variant (ops/cpu.h).
// Attention runs twice per shape in the same run, through its blocked many-query path
// and through the streamed path (ops::set_attention_blocked(false)), with the outputs
// checked close; a shape below the blocked path's threshold runs streamed both times.
// Prints the median wall and CPU ms, the GFLOP/s of attention's two products (4 * Tq *
// Tk * D per head, over CPU time: the machine these run on is often shared), the
// streamed / blocked CPU-time ratio, and the median ns per gelu element.
#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ops/attention.h"
#include "ops/cpu.h"
#include "ops/registry.h"
#include "core/thread_pool.h"

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
  fmt::print("{:<34} {:>9} {:>9} {:>8} | {:>9} {:>9} {:>8} | {:>7}\n", "attention [H, Tq, Tk, D]", "blocked", "cpu ms",
             "GFLOP/s", "streamed", "cpu ms", "GFLOP/s", "ratio");
  std::mt19937 g(3);
  struct Attn {
    const char* what;
    int64_t H, Tq, Tk, D;
  };
  for (const Attn a : {Attn{"whisper-tiny self 6x1500x1500x64", 6, 1500, 1500, 64},
                       Attn{"whisper-base self 8x1500x1500x64", 8, 1500, 1500, 64},
                       Attn{"odd 6x1499x1499x80", 6, 1499, 1499, 80}, Attn{"odd 6x1499x1499x40", 6, 1499, 1499, 40},
                       Attn{"prefill 8x64x64x64", 8, 64, 64, 64}, Attn{"prefill 8x32x300x64", 8, 32, 300, 64},
                       Attn{"prefill 8x16x300x64 (streamed)", 8, 16, 300, 64},
                       Attn{"decode 6x1x1500x64 (streamed)", 6, 1, 1500, 64},
                       Attn{"decode 6x4x1500x64 (streamed)", 6, 4, 1500, 64}}) {
    const Tensor q = randn({1, a.H, a.Tq, a.D}, g, 1.0f), k = randn({1, a.H, a.Tk, a.D}, g, 1.0f),
                 v = randn({1, a.H, a.Tk, a.D}, g, 1.0f);
    const std::vector<Value> args{Value(q), Value(k), Value(v)};
    const Timing tb = time_op("attention", args, {}, ctx, reps);
    const Tensor ob = ops::call(*ops::Registry::get().find("attention"), args, {}, ctx)[0].as_tensor();
    ops::set_attention_blocked(false);
    const Timing ts = time_op("attention", args, {}, ctx, reps);
    const Tensor os = ops::call(*ops::Registry::get().find("attention"), args, {}, ctx)[0].as_tensor();
    ops::set_attention_blocked(true);
    double diff = 0;
    for (int64_t i = 0; i < ob.numel(); ++i)
      diff = std::max(diff, double(std::fabs(ob.data<float>()[i] - os.data<float>()[i])));
    if (diff > 1e-4) {
      fmt::print("{}: the blocked and streamed paths differ by {}\n", a.what, diff);
      return 1;
    }
    const double gflop = 4.0 * double(a.H * a.Tq * a.Tk * a.D) / 1e6;
    fmt::print("{:<34} {:>9.3f} {:>9.3f} {:>8.1f} | {:>9.3f} {:>9.3f} {:>8.1f} | {:>7.2f}\n", a.what, tb.wall_ms,
               tb.cpu_ms, gflop / tb.cpu_ms, ts.wall_ms, ts.cpu_ms, gflop / ts.cpu_ms, ts.cpu_ms / tb.cpu_ms);
  }
  fmt::print("{:<34} {:>9} {:>9}\n", "gelu exact", "wall ms", "cpu ms");
  for (const int64_t ffn : {int64_t(1536), int64_t(2048)}) {
    const Tensor x = randn({1, 1500, ffn}, g, 2.0f);
    const std::vector<std::pair<std::string, Value>> kw{{"approximate", Value::from_str("none")}};
    const Timing t = time_op("gelu", {Value(x)}, kw, ctx, reps);
    fmt::print("{:<34} {:>9.3f} {:>9.3f} {:>8.2f} ns/element\n", fmt::format("[1500, {}]", ffn), t.wall_ms, t.cpu_ms,
               t.cpu_ms * 1e6 / double(x.numel()));
  }
  return 0;
}
