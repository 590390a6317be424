// The linear kernels on one decode step's weights: Marian opus-mt shapes (6 decoder
// layers of 8 products + the 512 x 59514 output projection, 210 MB in f32), called in
// decode order so that nothing is reused from cache between steps, as in generate.
//   tensorvm-bench-linear [threads=2] [reps=15] [rows=1,2,4,8,16,32]
// TENSORVM_ISA picks the kernel variant (ops/cpu.h). Prints, per row count, the median ms per step and the GB/s of weights read, for
// linear (f32), linear_int8 (weight-only) and linear_w8a8 (int8 x int8), split into the
// layer products and the projection.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ops/cpu.h"
#include "ops/registry.h"
#include "core/thread_pool.h"
#include "vm/vm.h"

namespace {

using vm::DType;
using vm::Shape;
using vm::Tensor;
using vm::Value;

struct Product {
  Tensor w, scale, q, packed, bias;  // f32 weight; int8 weight + scale; q packed for linear_w8a8; bias
  int64_t in, out;
};

// pycompiler/quantize.py pack_w8a8: [ceil(out/16), ceil(in/4), 16, 4], zero-padded.
Tensor pack_w8a8(const Tensor& q, int64_t out, int64_t in) {
  const int64_t nb = (out + 15) / 16, kb = (in + 3) / 4;
  Tensor p = Tensor::zeros(DType::i8, {nb, kb, 64});
  int8_t* d = p.data<int8_t>();
  const int8_t* s = q.data<int8_t>();
  for (int64_t j = 0; j < out; ++j)
    for (int64_t k = 0; k < in; ++k) d[((j / 16) * kb + k / 4) * 64 + (j % 16) * 4 + k % 4] = s[j * in + k];
  return p;
}

Tensor random_f32(const Shape& s, std::mt19937& g) {
  Tensor t = Tensor::empty(DType::f32, s);
  std::uniform_real_distribution<float> d(-0.05f, 0.05f);
  float* p = t.data<float>();
  for (int64_t i = 0; i < s.numel(); ++i) p[i] = d(g);
  return t;
}

Product make_product(int64_t out, int64_t in, std::mt19937& g) {
  Product p{random_f32({out, in}, g), Tensor::empty(DType::f32, {out}), Tensor::empty(DType::i8, {out, in}),
            Tensor(), random_f32({out}, g), in, out};
  std::uniform_int_distribution<int> d(-127, 127);
  int8_t* q = p.q.data<int8_t>();
  for (int64_t i = 0; i < out * in; ++i) q[i] = int8_t(d(g));
  p.packed = pack_w8a8(p.q, out, in);
  std::fill_n(p.scale.data<float>(), out, 1e-3f);
  return p;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Timing {
  double layers_ms, head_ms;
};

Timing time_step(const std::vector<Product>& prods, int64_t rows, const char* op_name, ops::OpContext& ctx, int reps) {
  const ops::OpDef* op = ops::Registry::get().find(op_name);
  const bool int8 = op_name != std::string("linear");
  std::mt19937 g(7);
  std::vector<double> layers, head;
  std::vector<Tensor> xs;
  for (int64_t in : {int64_t(512), int64_t(2048)}) xs.push_back(random_f32({rows, in}, g));
  for (int r = 0; r < reps + 1; ++r) {
    double t_layers = 0, t_head = 0;
    for (size_t i = 0; i < prods.size(); ++i) {
      const Product& p = prods[i];
      std::vector<Value> args{Value(p.in == 512 ? xs[0] : xs[1])};
      if (int8) {
        args.push_back(Value(op_name == std::string("linear_w8a8") ? p.packed : p.q));
        args.push_back(Value(p.scale));
      } else {
        args.push_back(Value(p.w));
      }
      args.push_back(Value(p.bias));
      const auto t0 = std::chrono::steady_clock::now();
      ops::call(*op, args, {}, ctx);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      (i + 1 == prods.size() ? t_head : t_layers) += ms;
    }
    if (r > 0) {  // the first pass warms the pool
      layers.push_back(t_layers);
      head.push_back(t_head);
    }
  }
  return {median(layers), median(head)};
}

std::vector<int64_t> parse_rows(const char* s) {
  std::vector<int64_t> out;
  std::string str(s);
  size_t pos = 0;
  while (pos < str.size()) {
    size_t next = str.find(',', pos);
    if (next == std::string::npos) next = str.size();
    out.push_back(std::stoll(str.substr(pos, next - pos)));
    pos = next + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 15;
  const std::vector<int64_t> rows = parse_rows(argc > 3 ? argv[3] : "1,2,4,8,16,32");
  std::mt19937 g(1);
  std::vector<Product> prods;
  for (int layer = 0; layer < 6; ++layer) {
    for (int i = 0; i < 6; ++i) prods.push_back(make_product(512, 512, g));  // self q,k,v,o; cross q,o
    prods.push_back(make_product(2048, 512, g));
    prods.push_back(make_product(512, 2048, g));
  }
  prods.push_back(make_product(59514, 512, g));
  double layer_bytes = 0;
  for (size_t i = 0; i + 1 < prods.size(); ++i) layer_bytes += double(prods[i].in * prods[i].out);
  const double head_bytes = double(prods.back().in * prods.back().out);

  vm::ThreadPool pool(threads);
  ops::OpContext ctx;
  ctx.threads = &pool;
  ctx.num_threads = threads;
  fmt::print("linear on one decode step's weights (opus-mt shapes), {} threads, median of {}\n", threads, reps);
  const ops::CpuInfo& cpu = ops::cpu_info();
  fmt::print("cpu: {} | kernels: {} (w8a8 {}; TENSORVM_ISA=scalar|avx2|avx512|avx512_vnni|neon forces one)\n",
             cpu.model.empty() ? cpu.arch : cpu.model, ops::kernel_table().name, ops::kernel_table().w8a8_name);
  fmt::print("{:>5} {:>6} {:>11} {:>9} {:>11} {:>9} {:>10}\n", "rows", "dtype", "layers ms", "GB/s", "head ms", "GB/s",
             "step ms");
  for (int64_t r : rows) {
    for (const char* name : {"linear", "linear_int8", "linear_w8a8"}) {
      const Timing t = time_step(prods, r, name, ctx, reps);
      const bool f32 = name == std::string("linear");
      const double bpe = f32 ? 4.0 : 1.0;  // bytes per weight element (scales are 0.2%)
      fmt::print("{:>5} {:>6} {:>11.3f} {:>9.1f} {:>11.3f} {:>9.1f} {:>10.3f}\n", r, f32 ? "f32" : name + 7,
                 t.layers_ms, layer_bytes * bpe / t.layers_ms / 1e6, t.head_ms, head_bytes * bpe / t.head_ms / 1e6,
                 t.layers_ms + t.head_ms);
    }
  }
  return 0;
}
