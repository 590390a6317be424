#include "cli/verify.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/half.h"
#include "io/array_file.h"
#include "ops/cpu.h"
#include "ops/kernels/kernels.h"
#include "cli/run_io.h"

namespace cli {

namespace {

// An output or an expected array as numbers: integers (and bools) kept exact, floats widened.
struct Numbers {
  std::string dtype;
  std::vector<int64_t> shape;
  bool integral = false;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  size_t size() const { return integral ? ints.size() : floats.size(); }
};

Numbers from_value(const vm::Value& v, const std::string& what) {
  Numbers n;
  if (v.is_int() || v.is_bool()) {
    n.dtype = v.is_int() ? "I64" : "BOOL";
    n.integral = true;
    n.ints = {v.is_int() ? v.as_int() : int64_t(v.as_bool())};
    return n;
  }
  if (v.is_float()) {
    n.dtype = "F64";
    n.floats = {v.as_float()};
    return n;
  }
  if (!v.is_tensor()) vm::fail("{} is {}, which verify cannot compare", what, v.describe());
  const vm::Tensor t = v.as_tensor().contiguous();
  n.dtype = safetensors_dtype(t.dtype());
  n.shape.assign(t.shape().begin(), t.shape().end());
  const int64_t count = t.numel();
  n.integral = t.dtype() != vm::DType::f32 && t.dtype() != vm::DType::f16 && t.dtype() != vm::DType::bf16;
  for (int64_t i = 0; i < count; ++i) {
    switch (t.dtype()) {
      case vm::DType::f32: n.floats.push_back(t.data<float>()[i]); break;
      case vm::DType::i64: n.ints.push_back(t.data<int64_t>()[i]); break;
      case vm::DType::i32: n.ints.push_back(t.data<int32_t>()[i]); break;
      case vm::DType::i8: n.ints.push_back(static_cast<const int8_t*>(t.raw())[i]); break;
      case vm::DType::boolean: n.ints.push_back(static_cast<const uint8_t*>(t.raw())[i] != 0); break;
      case vm::DType::f16: n.floats.push_back(vm::f16_to_f32(t.data<vm::half>()[i].bits)); break;
      case vm::DType::bf16: n.floats.push_back(vm::bf16_to_f32(t.data<vm::bfloat16>()[i].bits)); break;
    }
  }
  return n;
}

Numbers from_array(const io::ArrayData& a, const std::string& what) {
  Numbers n;
  n.dtype = a.dtype;
  n.shape = a.shape;
  const int64_t count = vm::Shape(a.shape.begin(), a.shape.end()).numel();  // checked: [2^32, 2^32, 0] is 0
  const size_t width = a.dtype == "F64" || a.dtype == "I64" ? 8 : a.dtype == "F32" || a.dtype == "I32" ? 4
                       : a.dtype == "F16" || a.dtype == "BF16"                                    ? 2
                       : a.dtype == "I8" || a.dtype == "BOOL"                                      ? 1
                                                                                                   : 0;
  if (width == 0) vm::fail("{}: dtype {} cannot be compared", what, a.dtype);
  if (a.data.size() != size_t(count) * width) vm::fail("{}: {} bytes for {} values of {}", what, a.data.size(), count, a.dtype);
  n.integral = a.dtype != "F32" && a.dtype != "F64" && a.dtype != "F16" && a.dtype != "BF16";
  const unsigned char* p = a.data.data();
  for (int64_t i = 0; i < count; ++i, p += width) {
    if (a.dtype == "F32") {
      float f;
      std::memcpy(&f, p, 4);
      n.floats.push_back(f);
    } else if (a.dtype == "F64") {
      double d;
      std::memcpy(&d, p, 8);
      n.floats.push_back(d);
    } else if (a.dtype == "I64") {
      int64_t x;
      std::memcpy(&x, p, 8);
      n.ints.push_back(x);
    } else if (a.dtype == "I32") {
      int32_t x;
      std::memcpy(&x, p, 4);
      n.ints.push_back(x);
    } else if (a.dtype == "F16" || a.dtype == "BF16") {
      const uint16_t h = uint16_t(p[0] | p[1] << 8);
      n.floats.push_back(a.dtype == "F16" ? vm::f16_to_f32(h) : vm::bf16_to_f32(h));
    } else if (a.dtype == "I8") {
      n.ints.push_back(int8_t(*p));
    } else {
      n.ints.push_back(*p != 0);
    }
  }
  return n;
}

nlohmann::json parse_manifest(const std::string& text, const std::string& path) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) vm::fail("verify: {} is not valid JSON", path);
  if (j.value("format", "") != "tensorvm-bundle" || !j.contains("version") || j["version"] != 1)
    vm::fail("verify: {} is not a tensorvm-bundle version 1 manifest", path);
  if (!j.contains("cases") || !j["cases"].is_array() || j["cases"].empty())
    vm::fail("verify: {} holds no cases", path);
  return j;
}

// "ok" or what is wrong with one output.
struct Verdict {
  bool pass = true;
  std::string text;
};

Verdict compare(const Numbers& got, const Numbers& want, const nlohmann::json& spec) {
  if (got.integral != want.integral || got.shape != want.shape)
    return {false, fmt::format("got {} [{}], expected {} [{}]", got.dtype, fmt::join(got.shape, ", "), want.dtype,
                               fmt::join(want.shape, ", "))};
  const std::string how = spec.value("compare", want.integral ? "exact" : "close");
  if (want.integral || how == "exact") {
    size_t differ = 0, first = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      const bool same = want.integral ? got.ints[i] == want.ints[i]
                                      : (got.floats[i] == want.floats[i] ||
                                         (std::isnan(got.floats[i]) && std::isnan(want.floats[i])));
      if (!same && differ++ == 0) first = i;
    }
    if (differ == 0) return {true, "exact, equal"};
    auto shown = [&](const Numbers& n) {
      return n.integral ? fmt::format("{}", n.ints[first]) : fmt::format("{:.9g}", n.floats[first]);
    };
    return {false, fmt::format("exact: {} of {} values differ (first at flat index {}: got {}, expected {})", differ,
                               want.size(), first, shown(got), shown(want))};
  }
  const double atol = spec.value("atol", 1e-4), rtol = spec.value("rtol", 1e-4);
  double worst = 0;
  size_t over = 0, first = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = got.floats[i], w = want.floats[i];
    if (std::isnan(g) || std::isnan(w) || std::isinf(g) || std::isinf(w)) {
      if (g == w || (std::isnan(g) && std::isnan(w))) continue;
      worst = INFINITY;
      if (over++ == 0) first = i;
      continue;
    }
    const double err = std::fabs(g - w);
    worst = std::max(worst, err);
    if (err > atol + rtol * std::fabs(w) && over++ == 0) first = i;
  }
  const std::string head = fmt::format("max error {:.3g} (atol {:g} + rtol {:g} * |expected|)", worst, atol, rtol);
  if (over == 0) return {true, head};
  return {false, fmt::format("{}: {} of {} values past tolerance (first at flat index {}: got {:.9g}, expected {:.9g})",
                             head, over, want.size(), first, got.floats[first], want.floats[first])};
}

int verify_cases(const std::string& manifest_text, const std::string& manifest_path, const BundleArrays& read_arrays,
                 const std::shared_ptr<const vm::Program>& program, const vm::SessionOptions& options, vm::Hook* hook) {
  const nlohmann::json manifest = parse_manifest(manifest_text, manifest_path);
  int outputs = 0, failed = 0;
  for (size_t c = 0; c < manifest["cases"].size(); ++c) {
    const nlohmann::json& kase = manifest["cases"][c];
    const std::string what = fmt::format("{} case {}", manifest_path, c);
    if (!kase.is_object() || !kase.contains("function") || !kase["function"].is_string() || !kase.contains("arrays") ||
        !kase["arrays"].is_string() || !kase.contains("outputs") || !kase["outputs"].is_array())
      vm::fail("verify: {}: needs function, arrays and outputs", what);
    const std::string file = kase["arrays"].get<std::string>();
    if (file.empty() || file.find('/') != std::string::npos || file[0] == '.')
      vm::fail("verify: {}: arrays '{}' must name a file in the program directory", what, file);
    const vm::Function& fn = program->function(kase["function"].get<std::string>());
    std::map<std::string, io::ArrayData> arrays;
    for (io::ArrayData& a : read_arrays(file)) arrays.emplace(a.name, std::move(a));

    std::vector<vm::Value> inputs;
    for (size_t p = 0; p < fn.param_names.size(); ++p) {
      const std::string& name = fn.param_names[p];
      const std::string& type = fn.param_types[p];
      auto it = arrays.find("input." + name);
      if (it != arrays.end())
        inputs.push_back(value_from_array(it->second, type, fmt::format("{}: input '{}' of {}", what, name, fn.name)));
      else if (type == "None" || type == "Any")
        inputs.push_back(vm::Value::none());
      else
        vm::fail("verify: {}: no input.{} for {}", what, name, fn.name);
    }
    vm::Session session(program, options);
    if (hook) session.set_hook(hook);
    const std::vector<vm::Value> outs = vm::run(session, fn.name, std::move(inputs));
    for (const nlohmann::json& spec : kase["outputs"]) {
      if (!spec.is_object() || !spec.contains("index") || !spec["index"].is_number_unsigned())
        vm::fail("verify: {}: an output without an index", what);
      const size_t k = spec["index"].get<size_t>();
      const std::string label = fmt::format("case {} {} output {}", c, fn.name, k);
      Verdict v;
      if (k >= outs.size()) {
        v = {false, fmt::format("{} returned {} outputs", fn.name, outs.size())};
      } else if (spec.value("none", false)) {
        v = outs[k].is_none() ? Verdict{true, "None, as expected"} : Verdict{false, "expected None, got " + outs[k].describe()};
      } else {
        auto want = arrays.find(fmt::format("expected.{}", k));
        if (want == arrays.end()) vm::fail("verify: {}: no expected.{} array", what, k);
        const Numbers w = from_array(want->second, label);
        v = outs[k].is_none() ? Verdict{false, "got None"} : compare(from_value(outs[k], label), w, spec);
        v.text = fmt::format("{} [{}]: {}", w.dtype, fmt::join(w.shape, ", "), v.text);
      }
      fmt::print("verify: {}: {}{}\n", label, v.text, v.pass ? "" : "  FAIL");
      ++outputs;
      failed += !v.pass;
    }
  }
  if (failed) {
    fmt::print("verify: FAILED: {} of {} outputs past tolerance (kernel variant {}, {})\n", failed, outputs,
               ops::kernel_table().name, ops::cpu_info().arch);
    return 1;
  }
  fmt::print("verify: passed: {} outputs of {} cases (kernel variant {}, {})\n", outputs, manifest["cases"].size(),
             ops::kernel_table().name, ops::cpu_info().arch);
  return 0;
}

}  // namespace

int verify_bundle(const std::string& manifest_text, const std::string& manifest_path, const BundleArrays& read_arrays,
                  const std::shared_ptr<const vm::Program>& program, const vm::SessionOptions& options,
                  vm::Hook* hook) {
  // A field of the wrong type ("compare": 5, "atol": "x") makes nlohmann's value() and
  // get() throw: that is a bad manifest, reported as one.
  try {
    return verify_cases(manifest_text, manifest_path, read_arrays, program, options, hook);
  } catch (const nlohmann::json::exception& e) {
    vm::fail("verify: {}: {}", manifest_path, e.what());
  }
}

int run_verify(const std::string& dir, const std::shared_ptr<const vm::Program>& program,
               const vm::SessionOptions& options) {
  const std::string manifest_path = dir + "/bundle.json";
  std::ifstream f(manifest_path, std::ios::binary);
  if (!f)
    vm::fail("verify: {} not found: bundle example inputs with `tensorvm bundle PROGRAM FUNCTION ...` first",
             manifest_path);
  std::stringstream text;
  text << f.rdbuf();
  const BundleArrays arrays = [&dir](const std::string& file) { return io::read_arrays(dir + "/" + file); };
  return verify_bundle(text.str(), manifest_path, arrays, program, options);
}

}  // namespace cli
