// The linear products of one opus-mt encoder pass (6 layers of q, k, v, o 512x512, fc1
// 2048x512, fc2 512x2048) over R rows (batch x source length), through the linear op,
// so that the GEMM backends can be compared on the shapes that matter:
//   tensorvm-bench-encoder [threads=2] [rows=256] [reps=5]
// TENSORVM_GEMM=own|onednn|auto picks the GEMM (ops/gemm_library.h), TENSORVM_ISA the
// kernel variant. Prints the median ms of the whole pass and the GFLOP/s.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "ops/cpu.h"
#include "ops/gemm_library.h"
#include "ops/registry.h"
#include "core/thread_pool.h"
#include "vm/vm.h"

namespace {

vm::Tensor random_f32(const vm::Shape& s, std::mt19937& g) {
  vm::Tensor t = vm::Tensor::empty(vm::DType::f32, s);
  std::uniform_real_distribution<float> d(-0.05f, 0.05f);
  for (int64_t i = 0; i < s.numel(); ++i) t.data<float>()[i] = d(g);
  return t;
}

struct Product {
  vm::Tensor w, b;
  int64_t in;
};

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int64_t rows = argc > 2 ? std::atoll(argv[2]) : 256;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 5;
  vm::ThreadPool pool(threads);
  ops::OpContext ctx;
  ctx.threads = &pool;
  ctx.num_threads = threads;
  const ops::OpDef* op = ops::Registry::get().find("linear");
  std::mt19937 g(1);
  std::vector<Product> prods;
  double macs = 0;
  for (int layer = 0; layer < 6; ++layer) {
    for (int i = 0; i < 4; ++i) prods.push_back({random_f32({512, 512}, g), random_f32({512}, g), 512});
    prods.push_back({random_f32({2048, 512}, g), random_f32({2048}, g), 512});
    prods.push_back({random_f32({512, 2048}, g), random_f32({512}, g), 2048});
  }
  for (const Product& p : prods) macs += double(rows) * double(p.in) * double(p.w.size(0));
  const vm::Tensor x512 = random_f32({rows, 512}, g), x2048 = random_f32({rows, 2048}, g);
  std::vector<double> times;
  for (int r = 0; r < reps + 1; ++r) {  // the first pass warms the pool
    const auto t0 = std::chrono::steady_clock::now();
    for (const Product& p : prods) ops::call(*op, {vm::Value(p.in == 512 ? x512 : x2048), vm::Value(p.w), vm::Value(p.b)}, {}, ctx);
    if (r > 0) times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  const double ms = times[times.size() / 2];
  fmt::print("cpu: {} | kernels: {} | gemm: {} | {} threads | {} rows: {:.1f} ms, {:.0f} GFLOP/s (median of {})\n",
             ops::cpu_info().model, ops::kernel_table().name,
             ops::library_gemm_active() ? ops::library_gemm_name() : std::string("own"), threads, rows, ms,
             2 * macs / ms / 1e6, reps);
  return 0;
}
