// The 4-bit linears against int8 and f32 on LLM shapes: Qwen2.5-0.5B's 896 x 896 (q, o),
// 4864 x 896 (gate, up), 896 x 4864 (down) and 151936 x 896 (the tied output projection),
// TinyLlama-1.1B's 5632 x 2048 and 2048 x 5632 ([out, in]).
//   tensorvm-bench-int4 [threads=1,2] [rows=1,64] [variants=all] [ops=linear,linear_int8,linear_int4,linear_w4a8]
// Decode (rows <= 8) is bound by reading the weight: each timed pass calls the op on
// copies of the weight that together exceed 512 MiB (more than the caches), so every
// call reads from memory, and prints the GB/s of weight bytes read (weight + scales), to
// compare with `python3 bench/bandwidth.py`'s streaming read. More rows are bound by
// arithmetic: one copy, GFLOP/s (2 * rows * out * in per call). Medians of 5 (3) passes.
// TENSORVM_BENCH_HOT=1: one copy for decode too (the weight stays in cache when it fits:
// the kernel's arithmetic rate, which must exceed the streaming bandwidth by a margin).
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/thread_pool.h"
#include "ops/cpu.h"
#include "ops/registry.h"
#include "vm/vm.h"

namespace {

using vm::DType;
using vm::Tensor;
using vm::Value;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t next = s.find(',', pos);
    if (next == std::string::npos) next = s.size();
    if (next > pos) out.push_back(s.substr(pos, next - pos));
    pos = next + 1;
  }
  return out;
}

// Cheap pseudo-random bytes (the values do not matter to the speed, only that they vary).
void fill(void* p, size_t n, uint32_t seed) {
  auto* b = static_cast<uint8_t*>(p);
  uint32_t s = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    b[i] = uint8_t(s >> 24);
  }
}

Tensor f32_tensor(const vm::Shape& s, uint32_t seed, float scale) {
  Tensor t = Tensor::empty(DType::f32, s);
  fill(t.data<float>(), size_t(t.numel()) * 4, seed);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {  // a bounded value from the random bits
    uint32_t u;
    std::memcpy(&u, p + i, 4);
    p[i] = (float(u >> 8) / float(1 << 24) - 0.5f) * scale;
  }
  return t;
}

// One copy of an op's weight arguments (everything but x).
std::vector<Value> weight_args(const std::string& op, int64_t out, int64_t in, uint32_t seed, double& bytes) {
  if (op == "linear") {
    bytes = double(out) * in * 4;
    return {Value(f32_tensor({out, in}, seed, 0.1f))};
  }
  if (op == "linear_int8") {
    Tensor q = Tensor::empty(DType::i8, {out, in});
    fill(q.data<int8_t>(), size_t(q.numel()), seed);
    bytes = double(out) * in + 4.0 * out;
    return {Value(q), Value(f32_tensor({out}, seed + 1, 1e-3f))};
  }
  const int64_t in_p = (in + 31) / 32 * 32;  // G = 32
  Tensor q = Tensor::empty(DType::i8, {out, in_p / 2});
  fill(q.data<int8_t>(), size_t(q.numel()), seed);
  bytes = double(out) * in_p / 2 + 4.0 * out * (in_p / 32);
  return {Value(q), Value(f32_tensor({out, in_p / 32}, seed + 1, 1e-2f))};
}

// CPU time of the calling thread (ms): with 1 thread the op runs on it, so this leaves
// out the time other processes had the core (the machine is shared).
double thread_cpu_ms() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> threads_list = split(argc > 1 ? argv[1] : "1,2");
  const std::vector<std::string> rows_list = split(argc > 2 ? argv[2] : "1,64");
  std::vector<std::string> variants = split(argc > 3 && std::string(argv[3]) != "all" ? argv[3] : "");
  const std::vector<std::string> supported = ops::supported_kernel_variants();
  if (variants.empty()) variants = supported;
  variants.erase(std::remove_if(variants.begin(), variants.end(),  // those this CPU lacks are left out
                                [&](const std::string& v) {
                                  return std::find(supported.begin(), supported.end(), v) == supported.end();
                                }),
                 variants.end());
  const std::vector<std::string> op_list = split(argc > 4 ? argv[4] : "linear,linear_int8,linear_int4,linear_w4a8");
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{896, 896},   {4864, 896},  {896, 4864},
                                                           {151936, 896}, {5632, 2048}, {2048, 5632}};
  const bool hot = std::getenv("TENSORVM_BENCH_HOT") != nullptr;
  const ops::CpuInfo& cpu = ops::cpu_info();
  fmt::print("cpu: {} | decode: GB/s of weight bytes over > 512 MiB of weights; prefill: GFLOP/s\n",
             cpu.model.empty() ? cpu.arch : cpu.model);
  // cpu: the same rate over the thread's CPU time (1 thread only; 0 otherwise)
  fmt::print("{:>12} {:>8} {:>12} {:>4} {:>7} {:>10} {:>10} {:>10}\n", "variant", "threads", "op", "rows", "shape",
             "ms/call", "GB/s|GF/s", "cpu");
  for (const std::string& op_name : op_list) {
    const ops::OpDef* op = ops::Registry::get().find(op_name);
    if (!op) {
      fmt::print("no op {}\n", op_name);
      return 1;
    }
    for (const auto& [out, in] : shapes) {
      for (const std::string& rs : rows_list) {
        const int64_t rows = std::stoll(rs);
        const bool decode = rows <= 8;
        double bytes = 0;
        std::vector<std::vector<Value>> copies;
        double total = 0;
        do {
          copies.push_back(weight_args(op_name, out, in, uint32_t(copies.size() + 1), bytes));
          total += bytes;
        } while (decode && !hot && total < 512.0 * (1 << 20));
        const Tensor x = f32_tensor({rows, in}, 99, 2.0f);
        for (const std::string& variant : variants) {
          ops::set_kernel_variant(variant);
          for (const std::string& ts : threads_list) {
            const int threads = std::stoi(ts);
            vm::ThreadPool pool(threads);
            ops::OpContext ctx;
            if (threads > 1) {
              ctx.threads = &pool;
              ctx.num_threads = threads;
            }
            std::vector<double> per_call, cpu_per_call;
            const int passes = decode ? 6 : 4, calls = decode && hot ? 200 : 1;
            for (int pass = 0; pass < passes; ++pass) {
              const auto t0 = std::chrono::steady_clock::now();
              const double c0 = thread_cpu_ms();
              for (int c = 0; c < calls; ++c)
                for (const auto& w : copies) {
                  std::vector<Value> args{Value(x)};
                  args.insert(args.end(), w.begin(), w.end());
                  ops::call(*op, args, {}, ctx);
                }
              const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
              const double cpu_ms = thread_cpu_ms() - c0;
              if (pass > 0) {  // the first pass warms up
                per_call.push_back(ms / double(calls * copies.size()));
                cpu_per_call.push_back(cpu_ms / double(calls * copies.size()));
              }
            }
            const double ms = median(per_call), cpu_ms = median(cpu_per_call);
            const double work = decode ? bytes : 2.0 * rows * out * in;
            fmt::print("{:>12} {:>8} {:>12} {:>4} {:>7} {:>10.4f} {:>10.1f} {:>10.1f}\n", variant, threads, op_name, rows,
                       fmt::format("{}x{}", out, in), ms, work / ms / 1e6,
                       threads == 1 ? work / cpu_ms / 1e6 : 0.0);
            std::fflush(stdout);
          }
        }
      }
    }
  }
  return 0;
}
