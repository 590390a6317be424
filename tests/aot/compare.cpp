// Runs the same calls on the interpreter (vm::Program::load) and on the same program
// compiled to C++ (`tensorvm compile ... --name compiled`), in one process, and checks
// that every output is bit-identical: for an encoder-decoder program encode and the step
// functions (init_cache, decode_step step by step); for every program generate with
// several option sets. Then what a session counts and shows: the same instruction count
// (max_instructions: the smallest budget the first generate fits in, and the error one
// less gives), and a profiler sees the same ops and calls, with the same counts (not
// with --bench).
//   compare PROGRAM_DIR --ids "5 6 7 0; 8 9 0" [--threads N] [--steps N]
//           [--generate "num_beams=1,do_sample=True,seed=7"]...   (default: beam, greedy, sampling)
//           [--bench REPEAT]   (also time load and decode_step per token, interpreter vs compiled)
// Exit status 0 when everything matched; the first difference is printed and exits 1.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>

#include <time.h>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "compiled.h"
#include "cli/run_io.h"
#include "vm/vm.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// CPU time of the calling thread: with one thread all the work, and less disturbed than
// wall time by other processes on a shared machine.
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e3 + double(ts.tv_nsec) * 1e-6;
}

void check_same(const std::string& what, const vm::Value& a, const vm::Value& b) {
  if (a.kind() != b.kind()) vm::fail("{}: interpreter gave {}, compiled {}", what, a.describe(), b.describe());
  if (a.is_tensor()) {
    const vm::Tensor x = a.as_tensor().contiguous(), y = b.as_tensor().contiguous();
    if (x.dtype() != y.dtype() || x.shape() != y.shape())
      vm::fail("{}: interpreter gave {}, compiled {}", what, a.describe(), b.describe());
    if (std::memcmp(x.raw(), y.raw(), x.nbytes()) != 0) vm::fail("{}: the tensors {} differ in their bits", what, a.describe());
  } else if (a.is_float()) {
    const double x = a.as_float(), y = b.as_float();
    if (std::memcmp(&x, &y, sizeof x) != 0) vm::fail("{}: {} vs {}", what, x, y);
  } else if (a.is_int() || a.is_bool()) {
    if (a.describe() != b.describe()) vm::fail("{}: {} vs {}", what, a.describe(), b.describe());
  } else if (a.is_tuple()) {
    if (a.as_tuple().size() != b.as_tuple().size()) vm::fail("{}: tuples of different lengths", what);
    for (size_t i = 0; i < a.as_tuple().size(); ++i) check_same(fmt::format("{}[{}]", what, i), a.as_tuple()[i], b.as_tuple()[i]);
  } else if (a.is_object()) {
    if (a.as_object()->type_name() != b.as_object()->type_name()) vm::fail("{}: {} vs {}", what, a.describe(), b.describe());
  }
}

void check_all(const std::string& what, const std::vector<vm::Value>& a, const std::vector<vm::Value>& b) {
  if (a.size() != b.size()) vm::fail("{}: {} outputs vs {}", what, a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) check_same(fmt::format("{} output {}", what, i), a[i], b[i]);
}

// "num_beams=1,do_sample=True" -> named options, typed as generate declares them.
std::vector<std::pair<std::string, vm::Value>> options(const std::string& text) {
  std::vector<std::pair<std::string, vm::Value>> out;
  const auto& sigs = compiled::signatures();
  const auto& gen = sigs[vm::aot::find(sigs, "generate", "compiled")];
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string kv = text.substr(start, end - start);
    start = end + 1;
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) vm::fail("--generate: '{}' is not NAME=VALUE", kv);
    const std::string name = kv.substr(0, eq);
    const auto it = std::find(gen.param_names.begin(), gen.param_names.end(), name);
    if (it == gen.param_names.end()) vm::fail("--generate: generate has no option {}", name);
    out.emplace_back(name, cli::parse_scalar(gen.param_types[size_t(it - gen.param_names.begin())], kv.substr(eq + 1), name));
  }
  return out;
}

// The error `f` throws ("" for none), with the directory the interpreter names its
// program.py by taken out (compiled code names program.py alone).
std::string error_of(const std::function<void()>& f, const std::string& dir) {
  try {
    f();
  } catch (const std::exception& e) {
    std::string m = e.what();
    for (size_t at; (at = m.find(dir + "/program.py")) != std::string::npos;) m.erase(at, dir.size() + 1);
    return m;
  }
  return "";
}

// Both engines count instructions alike: the smallest max_instructions that `named`
// fits in is the same, and one less fails with the same error.
void check_budget(const std::string& dir, const std::shared_ptr<const vm::Program>& ip,
                  const std::shared_ptr<const compiled::Program>& cp, const std::vector<std::pair<std::string, vm::Value>>& named,
                  int threads) {
  auto interp_error = [&](uint64_t budget) {
    vm::SessionOptions o{threads};
    o.max_instructions = budget;
    vm::Session s(ip, o);
    return error_of([&] { s.run_named("generate", named); }, dir);
  };
  auto compiled_error = [&](uint64_t budget) {
    vm::SessionOptions o{threads};
    o.max_instructions = budget;
    compiled::Session s(cp, o);
    return error_of([&] { s.run_named("generate", named); }, dir);
  };
  uint64_t lo = 1, hi = 1;  // lo fails, hi passes
  while (!interp_error(hi).empty()) hi *= 2;
  if (hi == 1) vm::fail("max_instructions: generate ran in a budget of 1 instruction");
  lo = hi / 2;
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    (interp_error(mid).empty() ? hi : lo) = mid;
  }
  const std::string want = interp_error(lo), got = compiled_error(lo);
  if (want != got) vm::fail("max_instructions {}: the interpreter says\n{}\nthe compiled program\n{}", lo, want, got);
  const std::string passed = compiled_error(hi);
  if (!passed.empty()) vm::fail("max_instructions {}: the interpreter's run fits, the compiled one fails:\n{}", hi, passed);
  fmt::print("max_instructions: both fit in {} and fail identically at {}\n", hi, lo);
}

// A profiler on each engine sees the same ops and calls (count, multiply-adds, bytes).
void check_profiles(const vm::Profiler& a, const vm::Profiler& b) {
  auto same = [](const char* what, const std::map<std::string, vm::OpStats>& x, const std::map<std::string, vm::OpStats>& y) {
    for (const auto& [name, s] : x) {
      auto it = y.find(name);
      if (it == y.end()) vm::fail("profile: the interpreter's {} {} is missing from the compiled program's", what, name);
      const vm::OpStats& t = it->second;
      if (s.count != t.count || s.macs != t.macs || s.bytes_in != t.bytes_in || s.bytes_out != t.bytes_out)
        vm::fail("profile: {} {}: interpreter {} calls, {} MACs, {}+{} bytes; compiled {}, {}, {}+{}", what, name, s.count,
                 s.macs, s.bytes_in, s.bytes_out, t.count, t.macs, t.bytes_in, t.bytes_out);
    }
    if (x.size() != y.size()) vm::fail("profile: the compiled program shows {} {}s, the interpreter {}", y.size(), what, x.size());
  };
  same("op", a.ops(), b.ops());
  same("call", a.calls(), b.calls());
  fmt::print("profile: {} ops and {} calls, the same counts, MACs and bytes\n", a.ops().size(), a.calls().size());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

int run(int argc, char** argv) {
  std::string dir, ids = "5 6 7 0; 8 9 0";
  int threads = 1, steps = 6, bench = 0;
  std::vector<std::string> generate;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) vm::fail("{} needs a value", a);
      return argv[++i];
    };
    if (a == "--ids") ids = next();
    else if (a == "--threads") threads = int(cli::parse_count(a, next(), 1, 64));
    else if (a == "--steps") steps = int(cli::parse_count(a, next(), 1, 4096));
    else if (a == "--bench") bench = int(cli::parse_count(a, next(), 1, 1000));
    else if (a == "--generate") generate.push_back(next());
    else dir = a;
  }
  if (dir.empty()) vm::fail("usage: compare PROGRAM_DIR [--ids ...] [--threads N] [--steps N] [--generate OPTS]... [--bench N]");
  if (generate.empty()) generate = {"", "num_beams=1", "num_beams=1,do_sample=True,seed=7,temperature=2.0,top_k=0",
                                    "num_beams=3,output_scores=True,num_return_sequences=2"};

  auto t0 = Clock::now();
  auto interp_program = vm::Program::load(dir);
  vm::Session interp(interp_program, vm::SessionOptions{threads});
  const double interp_load_ms = ms_since(t0);
  t0 = Clock::now();
  auto compiled_program = compiled::Program::load(dir);
  compiled::Session aot(compiled_program, vm::SessionOptions{threads});
  const double compiled_load_ms = ms_since(t0);

  // The prompt as tensorvm-run builds it from --ids (left-padded for a decoder-only program).
  cli::RunRequest req;
  req.ids_text = ids;
  const std::vector<vm::Value> enc_in = cli::build_inputs("generate", {"input_ids", "attention_mask"}, {"Tensor", "Tensor"},
                                                              interp_program->meta_json(), req);
  const bool encoder_decoder = interp_program->find("encode") && interp_program->find("decode_step") &&
                               interp_program->find("init_cache") && interp_program->find("source_mask");
  // What the step functions share (declared here: decode_both, used by --bench, refers to them).
  std::vector<vm::Value> states, mask;
  int64_t start = 0, rows = 0;
  std::function<void(bool)> decode_both = [](bool) {};
  if (encoder_decoder) {
    states = interp.run("encode", enc_in);
    check_all("encode", states, aot.run("encode", enc_in));
    mask = interp.run("source_mask", {enc_in[1]});
    check_all("source_mask", mask, aot.run("source_mask", {enc_in[1]}));
    fmt::print("encode: identical ({})\n", states[0].describe());

    const nlohmann::json meta = nlohmann::json::parse(interp_program->meta_json());
    start = meta.value("decoder_start_token_id", int64_t{0});
    rows = enc_in[0].as_tensor().size(0);
    // decode_step one token at a time, each engine with its own cache; the next token is
    // the interpreter's argmax, fed to both.
    auto decode = [&](auto& session, std::vector<vm::Value>* logits_out) {
      vm::Value cache = session.run("init_cache", {states[0], vm::Value::from_int(rows), vm::Value::from_int(steps + 1)})[0];
      vm::Tensor tokens = vm::Tensor::empty(vm::DType::i64, {rows, 1});
      std::fill(tokens.template data<int64_t>(), tokens.template data<int64_t>() + rows, start);
      for (int s = 0; s < steps; ++s) {
        vm::Value logits = session.run("decode_step", {cache, vm::Value(tokens), mask[0], vm::Value::from_int(s)})[0];
        if (logits_out) logits_out->push_back(logits);
        const vm::Tensor l = logits.as_tensor().contiguous();
        const int64_t vocab = l.size(-1);
        vm::Tensor next = vm::Tensor::empty(vm::DType::i64, {rows, 1});
        for (int64_t r = 0; r < rows; ++r) {
          const float* row = l.data<float>() + (l.numel() / rows) * (r + 1) - vocab;
          next.data<int64_t>()[r] = std::max_element(row, row + vocab) - row;
        }
        tokens = next;
      }
    };
    std::vector<vm::Value> li, lc;
    decode(interp, &li);
    decode(aot, &lc);
    check_all("decode_step logits", li, lc);
    fmt::print("decode_step: {} steps identical ({})\n", steps, li[0].describe());
    decode_both = [&, decode](bool compiled) {
      if (compiled) decode(aot, nullptr);
      else decode(interp, nullptr);
    };
  }

  for (const std::string& g : generate) {
    auto named = options(g);
    named.emplace_back("input_ids", enc_in[0]);
    named.emplace_back("attention_mask", enc_in[1]);
    const auto a = interp.run_named("generate", named);
    check_all("generate(" + g + ")", a, aot.run_named("generate", named));
    fmt::print("generate({}): identical ({})\n", g, a[0].describe());
  }
  if (interp.instructions_executed() != aot.instructions_executed())
    vm::fail("instructions executed: interpreter {}, compiled {}", interp.instructions_executed(), aot.instructions_executed());
  fmt::print("instructions executed: {} in both\n", interp.instructions_executed());

  if (bench == 0) {  // (a benchmark has its outputs checked; these would cost it minutes on a real model)
    auto named = options(generate[0]);
    named.emplace_back("input_ids", enc_in[0]);
    named.emplace_back("attention_mask", enc_in[1]);
    check_budget(dir, interp_program, compiled_program, named, threads);
    // (the interpreter's profiler installed as a hook, the compiled session's its own:
    // SessionOptions::profile; the command line's test installs one as a hook)
    vm::Profiler pa;
    interp.set_hook(&pa);
    vm::SessionOptions profiled{threads};
    profiled.profile = true;
    compiled::Session aot_profiled(compiled_program, profiled);
    check_all("generate(" + generate[0] + ") profiled", interp.run_named("generate", named),
              aot_profiled.run_named("generate", named));
    interp.set_hook(nullptr);
    check_profiles(pa, *aot_profiled.profiler());
  }

  if (bench > 0 && encoder_decoder) {
    std::vector<double> ti, tc, ci, cc;
    for (int r = 0; r < bench; ++r) {  // alternating, and each going first every other time
      for (const bool compiled : {r % 2 == 1, r % 2 == 0}) {
        t0 = Clock::now();
        const double c0 = thread_cpu_ms();
        decode_both(compiled);
        (compiled ? tc : ti).push_back(ms_since(t0) / steps);
        (compiled ? cc : ci).push_back((thread_cpu_ms() - c0) / steps);
      }
    }
    fmt::print("load: interpreter {:.2f} ms, compiled {:.2f} ms\n", interp_load_ms, compiled_load_ms);
    fmt::print("decode_step ms/token (median of {}, {} steps, {} rows, {} thread{}): interpreter {:.3f}, compiled {:.3f}, "
               "compiled/interpreter {:.3f}\n",
               bench, steps, rows, threads, threads == 1 ? "" : "s", median(ti), median(tc), median(tc) / median(ti));
    if (threads == 1)
      fmt::print("decode_step CPU ms/token (median of {}): interpreter {:.3f}, compiled {:.3f}, compiled/interpreter {:.3f}\n",
                 bench, median(ci), median(cc), median(cc) / median(ci));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "compare: {}\n", e.what());
    return 1;
  }
}
