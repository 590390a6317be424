// tensorvm-run: run a function of a program from the command line, with no Python.
//   tensorvm-run PROGRAM FUNCTION [--inputs in.npz|in.safetensors] [--arg NAME=VALUE]...
//                [--ids "1 2 3; 4 5"] [--decoder-ids "9 4; 9 7"] [--outputs out.npz|out.safetensors]
//                [--threads N] [--time] [--stream] [--profile] [--trace out.json]
// The same options and files as `tensorvm run` (pycompiler/cli.py). Each parameter
// takes, in this order: --ids (a parameter named input_ids: int64 [batch, len], ';'
// between rows, rows padded with the program's pad id (on the left for a decoder-only
// program, as transformers pads prompts), and an attention_mask built to match when
// the function takes one), --decoder-ids (a parameter named
// decoder_input_ids: the decoder prompt, rows of one length), --arg (parsed by the declared type), the array
// named after it in --inputs, or the array arr_<position>; options left out keep the
// program's default. Outputs are written as arr_0, arr_1, ... (scalars as 0-d arrays, a None
// output left out). --stream prints the tokens a generate program emits as they come,
// one line per step: "stream: " then each row's new ids, rows separated by "; ".
// --profile prints the profiler's tables after the outputs (docs/tools.md); --trace
// also writes the run as a Chrome trace.
// --wav FILE fills a parameter named audio with f32 [1, samples] from a 16 kHz mono WAV
// (ir/wav_file.h): `tensorvm-run whisper.tvm transcribe --wav speech.wav` prints the
// transcript (or token ids, when the program carries no tokenizer).
// Text in, text out (vm/cli/text_verbs.h), with the program's tokenizer:
//   tensorvm-run PROGRAM tokenize|translate|complete --text "..." | --text-file F [--arg NAME=VALUE]...
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "ir/array_file.h"
#include "ir/wav_file.h"
#include "ops/cpu.h"
#include "vm/cli/text_verbs.h"
#include "vm/profiler.h"
#include "vm/vm.h"

namespace {

const char* kUsage =
    "usage: tensorvm-run PROGRAM FUNCTION [--inputs FILE.npz|FILE.safetensors] [--arg NAME=VALUE]...\n"
    "                    [--ids \"1 2 3; 4 5\"] [--decoder-ids \"9 4; 9 7\"] [--outputs FILE.npz|FILE.safetensors]\n"
    "                    [--threads N] [--time] [--stream]   (--stream: print each step's tokens as they come)\n"
    "                    [--max-instructions N]   (stop a run past N instructions; 0 = no limit)\n"
    "                    [--profile] [--trace OUT.json]   (time per op, call and IR line; a Chrome trace)\n"
    "                    [--wav FILE.wav]   (16 kHz mono audio for a parameter named audio: Whisper's transcribe)\n"
    "       tensorvm-run PROGRAM tokenize|translate|complete --text \"...\" | --text-file FILE [--arg NAME=VALUE]...\n"
    "                    [--src-lang LANG] [--tgt-lang LANG]   (M2M100 fr, NLLB fra_Latn: translate's languages)\n"
    "                    (text in, text out with the program's tokenizer: one output line per input line)\n"
    "       tensorvm-run --info   (the CPU and the kernel variant in use; TENSORVM_ISA forces one)\n";

vm::DType dtype_from_name(const std::string& s, const std::string& what) {
  if (s == "F32") return vm::DType::f32;
  if (s == "I64") return vm::DType::i64;
  if (s == "I32") return vm::DType::i32;
  if (s == "BOOL") return vm::DType::boolean;
  if (s == "I8") return vm::DType::i8;
  vm::fail("{}: tensors must be float32, int64, int32, bool or int8, got {}", what, s);
}

std::string safetensors_dtype(vm::DType t) {
  switch (t) {
    case vm::DType::f32: return "F32";
    case vm::DType::i64: return "I64";
    case vm::DType::i32: return "I32";
    case vm::DType::boolean: return "BOOL";
    case vm::DType::i8: return "I8";
  }
  return "?";
}

// A 0-d array for a scalar parameter (np.array(7) for an int, np.array(0.5) for a float).
vm::Value scalar_from_array(const ir::ArrayData& a, const std::string& type, const std::string& what) {
  if (!a.shape.empty())
    vm::fail("{} is declared {}: give a 0-d array, got shape [{}]", what, type, fmt::join(a.shape, ", "));
  auto as = [&](auto zero) {
    decltype(zero) v;
    std::memcpy(&v, a.data.data(), sizeof v);
    return v;
  };
  const bool integral = a.dtype == "I64" || a.dtype == "I32" || a.dtype == "I8";
  const int64_t i = a.dtype == "I64" ? as(int64_t{}) : a.dtype == "I32" ? as(int32_t{}) : a.dtype == "I8" ? as(int8_t{}) : 0;
  if ((type == "int" || type == "Any") && integral) return vm::Value::from_int(i);
  if (type == "float" || type == "Any") {
    if (a.dtype == "F32") return vm::Value::from_float(as(float{}));
    if (a.dtype == "F64") return vm::Value::from_float(as(double{}));
    if (integral && type == "float") return vm::Value::from_float(double(i));
  }
  if ((type == "bool" || type == "Any") && a.dtype == "BOOL") return vm::Value::from_bool(a.data[0] != 0);
  vm::fail("{} is declared {}, got a 0-d {} array", what, type, a.dtype);
}

vm::Value parse_scalar(const std::string& type, const std::string& text, const std::string& name) {
  try {
    size_t used = 0;
    if (type == "int") {
      long long v = std::stoll(text, &used);
      if (used == text.size()) return vm::Value::from_int(v);
    } else if (type == "float") {
      double v = std::stod(text, &used);
      if (used == text.size()) return vm::Value::from_float(v);
    } else if (type == "bool") {
      if (text == "true" || text == "True" || text == "1") return vm::Value::from_bool(true);
      if (text == "false" || text == "False" || text == "0") return vm::Value::from_bool(false);
    } else if (type == "str") {
      return vm::Value::from_str(text);
    } else if (type == "None" || text == "None") {
      return vm::Value::none();
    } else if (type == "Any") {  // an option: the most specific literal it reads as
      if (text == "True" || text == "true") return vm::Value::from_bool(true);
      if (text == "False" || text == "false") return vm::Value::from_bool(false);
      // Each parse on its own: "nan", "inf" and ".5" fail as ints but are floats.
      try {
        long long i = std::stoll(text, &used);
        if (used == text.size()) return vm::Value::from_int(i);
      } catch (const std::exception&) {
      }
      try {
        double d = std::stod(text, &used);
        if (used == text.size()) return vm::Value::from_float(d);
      } catch (const std::exception&) {  // not a number: a str option (early_stopping=never)
      }
      return vm::Value::from_str(text);
    }
  } catch (const std::exception&) {
  }
  vm::fail("--arg {}={}: not a valid {}", name, text, type);
}

// "1 2 3; 4 5" -> rows of ids (`option` names the flag in errors)
std::vector<std::vector<int64_t>> parse_ids(const std::string& text, const char* option = "--ids") {
  std::vector<std::vector<int64_t>> rows(1);
  std::string tok;
  auto flush = [&] {
    if (tok.empty()) return;
    try {
      size_t used = 0;
      long long v = std::stoll(tok, &used);
      if (used != tok.size()) throw std::invalid_argument(tok);
      rows.back().push_back(v);
    } catch (const std::exception&) {
      vm::fail("{}: '{}' is not a token id", option, tok);
    }
    tok.clear();
  };
  for (char c : text) {
    if (c == ';') {
      flush();
      rows.emplace_back();
    } else if (c == ' ' || c == ',' || c == '\t' || c == '\n') {
      flush();
    } else {
      tok += c;
    }
  }
  flush();
  for (const auto& r : rows)
    if (r.empty()) vm::fail("{}: every row needs at least one token id", option);
  return rows;
}

int64_t pad_id(const nlohmann::json& meta) {
  if (meta.is_object() && meta.contains("pad_token_id") && meta["pad_token_id"].is_number_integer())
    return meta["pad_token_id"].get<int64_t>();
  return 0;
}

// A decoder-only model's prompt is input_ids: transformers pads it on the left, so
// that every row's last prompt token sits in the same slot.
bool is_decoder_only(const nlohmann::json& meta) {
  return meta.is_object() && meta.contains("is_encoder_decoder") && meta["is_encoder_decoder"].is_boolean() &&
         !meta["is_encoder_decoder"].get<bool>();
}

void print_value(const std::string& label, const vm::Value& v) {
  if (!v.is_tensor()) {
    fmt::print("{} = {}\n", label, v.describe());
    return;
  }
  const vm::Tensor t = v.as_tensor().contiguous();
  fmt::print("{} = tensor {}\n", label, t.describe());
  const int64_t row = t.ndim() ? t.size(-1) : 1;
  const int64_t n = std::min<int64_t>(t.numel(), 64 * std::max<int64_t>(row, 1));
  std::string line;
  for (int64_t i = 0; i < n; ++i) {
    switch (t.dtype()) {
      case vm::DType::f32: line += fmt::format("{:.6g}", t.data<float>()[i]); break;
      case vm::DType::i64: line += fmt::format("{}", t.data<int64_t>()[i]); break;
      case vm::DType::i32: line += fmt::format("{}", t.data<int32_t>()[i]); break;
      case vm::DType::boolean: line += static_cast<const uint8_t*>(t.raw())[i] ? "True" : "False"; break;
      case vm::DType::i8: line += fmt::format("{}", int(static_cast<const int8_t*>(t.raw())[i])); break;
    }
    if ((i + 1) % std::max<int64_t>(row, 1) == 0 || i + 1 == n) {
      fmt::print("  {}\n", line);
      line.clear();
    } else {
      line += ' ';
    }
  }
  if (n < t.numel()) fmt::print("  ... ({} values)\n", t.numel());
}

// A whole-number option in [lo, hi], with a message naming the option (not "stoi").
int64_t parse_count(const std::string& option, const std::string& text, int64_t lo, int64_t hi) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || v < lo || v > hi)
    vm::fail("{} takes a whole number from {} to {}, got '{}'", option, lo, hi, text);
  return v;
}

std::string read_text_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) vm::fail("--text-file {}: cannot open it", path);
  std::string out;
  char buf[65536];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  const bool bad = std::ferror(f);
  std::fclose(f);
  if (bad) vm::fail("--text-file {}: cannot read it", path);
  return out;
}

int run(int argc, char** argv) {
  std::vector<std::string> positional;
  std::string inputs_path, outputs_path, ids_text, decoder_ids_text, wav_path, src_lang, tgt_lang;
  std::vector<std::string> text_lines;
  bool text_given = false;
  std::map<std::string, std::string> args;
  int threads = 1;
  uint64_t max_instructions = 0;
  bool timed = false, stream = false, profile = false;
  std::string trace_path;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) vm::fail("{} needs a value", a);
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      fmt::print("{}", kUsage);
      return 0;
    } else if (a == "--info") {
      fmt::print("{}", ops::describe_cpu());
      return 0;
    } else if (a == "--inputs") {
      inputs_path = next();
    } else if (a == "--outputs") {
      outputs_path = next();
    } else if (a == "--ids") {
      ids_text = next();
    } else if (a == "--text" || a == "--text-file") {
      if (text_given) vm::fail("give one --text or --text-file");
      text_given = true;
      text_lines = cli::split_lines(a == "--text" ? next() : read_text_file(next()));
    } else if (a == "--decoder-ids") {
      decoder_ids_text = next();
    } else if (a == "--src-lang") {
      src_lang = next();
    } else if (a == "--tgt-lang") {
      tgt_lang = next();
    } else if (a == "--wav") {
      wav_path = next();
    } else if (a == "--time") {
      timed = true;
    } else if (a == "--stream") {
      stream = true;
    } else if (a == "--profile") {
      profile = true;
    } else if (a == "--trace") {
      trace_path = next();
      if (trace_path.size() < 5 || trace_path.compare(trace_path.size() - 5, 5, ".json") != 0)
        vm::fail("--trace {}: the name must end in .json", trace_path);
      profile = true;
    } else if (a == "--threads") {
      threads = int(parse_count(a, next(), 1, 4096));
    } else if (a == "--max-instructions") {
      max_instructions = uint64_t(parse_count(a, next(), 0, INT64_MAX));
    } else if (a == "--arg") {
      std::string kv = next();
      auto eq = kv.find('=');
      if (eq == std::string::npos) vm::fail("--arg takes NAME=VALUE, got '{}'", kv);
      args[kv.substr(0, eq)] = kv.substr(eq + 1);
    } else if (a.rfind("--", 0) == 0) {
      vm::fail("unknown option {}", a);
    } else {
      positional.push_back(a);
    }
  }
  if (positional.size() != 2) {
    fmt::print(stderr, "{}", kUsage);
    return 2;
  }
  auto program = vm::Program::load(positional[0]);
  if (cli::is_text_verb(positional[1]) && !program->find(positional[1])) {
    const std::string& verb = positional[1];
    if (!text_given) vm::fail("{} needs --text \"...\" or --text-file FILE", verb);
    if (!inputs_path.empty() || !outputs_path.empty() || !ids_text.empty() || !decoder_ids_text.empty() || stream)
      vm::fail("{} takes --text or --text-file, --arg, --threads and --max-instructions only", verb);
    cli::TextVerbOptions o;
    o.lines = std::move(text_lines);
    o.src_lang = src_lang;
    o.tgt_lang = tgt_lang;
    if (verb == "complete" && !(src_lang.empty() && tgt_lang.empty()))
      vm::fail("complete: --src-lang and --tgt-lang go with tokenize and translate");
    o.session.num_threads = threads;
    o.session.max_instructions = max_instructions;
    if (!args.empty()) {
      const vm::Function* gen = verb == "tokenize" ? nullptr : program->find("generate");
      if (!gen) vm::fail("--arg {}: {} takes no --arg", args.begin()->first, verb);
      for (const auto& [name, value] : args) {
        auto it = std::find(gen->param_names.begin(), gen->param_names.end(), name);
        if (it == gen->param_names.end() || name == "input_ids" || name == "attention_mask")
          vm::fail("--arg {}: generate has no such option (it takes {})", name, fmt::join(gen->param_names, ", "));
        o.args.emplace_back(name, parse_scalar(gen->param_types[size_t(it - gen->param_names.begin())], value, name));
      }
    }
    return cli::run_text_verb(positional[0], program, verb, o);
  }
  if (text_given) vm::fail("--text and --text-file go with the verbs tokenize, translate and complete");
  if (!src_lang.empty() || !tgt_lang.empty()) vm::fail("--src-lang and --tgt-lang go with the verbs tokenize and translate");
  const vm::Function& fn = program->function(positional[1]);

  if (!outputs_path.empty() && !ir::is_array_file_name(outputs_path))
    vm::fail("--outputs {}: the name must end in .npz or .safetensors", outputs_path);
  std::map<std::string, ir::ArrayData> arrays;
  for (ir::ArrayData& a : inputs_path.empty() ? std::vector<ir::ArrayData>{} : ir::read_arrays(inputs_path))
    arrays.emplace(a.name, std::move(a));
  std::vector<std::vector<int64_t>> ids;
  if (!ids_text.empty()) ids = parse_ids(ids_text);
  size_t max_len = 0;
  for (const auto& r : ids) max_len = std::max(max_len, r.size());
  const nlohmann::json meta = nlohmann::json::parse(program->meta_json(), nullptr, false);
  const bool left_pad = is_decoder_only(meta);
  std::vector<std::vector<int64_t>> prompt;
  if (!decoder_ids_text.empty()) prompt = parse_ids(decoder_ids_text, "--decoder-ids");
  for (const auto& r : prompt)
    if (r.size() != prompt[0].size())
      vm::fail("--decoder-ids: every row needs the same number of tokens (a decoder prompt is [batch, p]), got {} and {}",
               prompt[0].size(), r.size());
  bool prompt_used = prompt.empty();
  if (!wav_path.empty() && std::find(fn.param_names.begin(), fn.param_names.end(), "audio") == fn.param_names.end())
    vm::fail("--wav: {} has no parameter audio", fn.name);

  std::vector<vm::Value> inputs;
  std::set<std::string> used;
  for (size_t p = 0; p < fn.param_names.size(); ++p) {
    const std::string& name = fn.param_names[p];
    const std::string& type = fn.param_types[p];
    const std::string positional_name = fmt::format("arr_{}", p);
    const std::string array_name = arrays.count(name) ? name : arrays.count(positional_name) ? positional_name : "";
    if (!wav_path.empty() && name == "audio") {
      const ir::WavAudio wav = ir::read_wav(wav_path);
      vm::Tensor t = vm::Tensor::empty(vm::DType::f32, {1, int64_t(wav.samples.size())});
      std::copy(wav.samples.begin(), wav.samples.end(), t.data<float>());
      inputs.emplace_back(t);
    } else if (!ids.empty() && (name == "input_ids" || name == "attention_mask")) {
      const bool mask = name == "attention_mask";
      vm::Tensor t = vm::Tensor::empty(vm::DType::i64, {int64_t(ids.size()), int64_t(max_len)});
      int64_t* d = t.data<int64_t>();
      const int64_t pad = pad_id(meta);
      for (size_t r = 0; r < ids.size(); ++r) {
        const size_t first = left_pad ? max_len - ids[r].size() : 0;  // the row's first token slot
        for (size_t c = 0; c < max_len; ++c) {
          const bool token = c >= first && c < first + ids[r].size();
          d[r * max_len + c] = token ? (mask ? 1 : ids[r][c - first]) : (mask ? 0 : pad);
        }
      }
      inputs.emplace_back(t);
    } else if (!prompt.empty() && name == "decoder_input_ids") {
      const int64_t width = int64_t(prompt[0].size());
      vm::Tensor t = vm::Tensor::empty(vm::DType::i64, {int64_t(prompt.size()), width});
      for (size_t r = 0; r < prompt.size(); ++r) std::copy(prompt[r].begin(), prompt[r].end(), t.data<int64_t>() + r * width);
      inputs.emplace_back(t);
      prompt_used = true;
    } else if (args.count(name)) {  // overrides an array of --inputs
      inputs.push_back(parse_scalar(type, args[name], name));
      args.erase(name);
      used.insert(array_name);
    } else if (!array_name.empty()) {
      const ir::ArrayData& a = arrays.at(array_name);
      const std::string what = fmt::format("{}: input '{}' of {}", inputs_path, name, fn.name);
      used.insert(array_name);
      if (type == "Tensor" || type == "Tensor?" || (type == "Any" && !a.shape.empty())) {
        vm::Tensor t = vm::Tensor::empty(dtype_from_name(a.dtype, what), vm::Shape(a.shape.begin(), a.shape.end()));
        std::memcpy(t.raw(), a.data.data(), a.data.size());
        inputs.emplace_back(t);
      } else {
        inputs.push_back(scalar_from_array(a, type, what));
      }
    } else if (type == "None" || type == "Any") {
      inputs.push_back(vm::Value::none());  // an option left to the program's default
    } else {
      vm::fail("no value for input '{}' ({}) of {}: give it with --arg {}=..., --inputs or --ids", name, type, fn.name, name);
    }
  }
  for (const auto& [key, a] : arrays)
    if (!used.count(key))
      vm::fail("{}: array '{}' is no input of {} (name arrays arr_0, arr_1, ... or {})", inputs_path, key, fn.name,
               fmt::join(fn.param_names, ", "));
  if (!args.empty()) vm::fail("--arg {}: {} has no such parameter", args.begin()->first, fn.name);
  if (!prompt_used) vm::fail("--decoder-ids: {} has no parameter decoder_input_ids", fn.name);

  vm::SessionOptions opts;
  opts.num_threads = threads;
  opts.max_instructions = max_instructions;
  opts.profile = profile;
  opts.profile_trace = !trace_path.empty();
  vm::Session session(program, opts);
  const auto t0 = std::chrono::steady_clock::now();
  vm::EmitCallback on_emit;
  if (stream)
    on_emit = vm::token_stream([](const std::vector<std::vector<int64_t>>& rows) {
      std::vector<std::string> shown;
      for (const auto& r : rows) shown.push_back(fmt::format("{}", fmt::join(r, " ")));
      fmt::print("stream: {}\n", fmt::join(shown, "; "));
      std::fflush(stdout);
      return true;
    });
  std::vector<vm::Value> outs = vm::run(session, fn.name, std::move(inputs), std::move(on_emit));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  std::vector<ir::TensorToWrite> to_write;
  std::vector<vm::Tensor> keep;  // owns the bytes to_write points into
  std::vector<std::unique_ptr<unsigned char[]>> scalars;
  for (size_t i = 0; i < outs.size(); ++i) {
    const vm::Value& v = outs[i];
    // Whisper's transcript as text when the program carries its tokenizer (--outputs keeps the ids).
    if (!(i == 0 && fn.name == "transcribe" && cli::print_as_text(positional[0], v)))
      print_value(fmt::format("output {}", i), v);
    if (outputs_path.empty() || v.is_none()) continue;  // None: an optional result not produced
    const std::string name = fmt::format("arr_{}", i);
    if (v.is_tensor()) {
      keep.push_back(v.as_tensor().contiguous());
      const vm::Tensor& t = keep.back();
      to_write.push_back({name, safetensors_dtype(t.dtype()), std::vector<int64_t>(t.shape().begin(), t.shape().end()),
                          t.raw(), t.nbytes()});
    } else if (v.is_int() || v.is_float() || v.is_bool()) {  // 0-d arrays, as numpy.asarray makes them
      scalars.emplace_back(new unsigned char[8]);
      unsigned char* raw = scalars.back().get();
      if (v.is_int()) {
        const int64_t x = v.as_int();
        std::memcpy(raw, &x, 8);
        to_write.push_back({name, "I64", {}, raw, 8});
      } else if (v.is_float()) {
        const double x = v.as_float();
        std::memcpy(raw, &x, 8);
        to_write.push_back({name, "F64", {}, raw, 8});
      } else {
        raw[0] = v.as_bool() ? 1 : 0;
        to_write.push_back({name, "BOOL", {}, raw, 1});
      }
    } else {
      vm::fail("--outputs: output {} is {}, which cannot be saved as an array", i, v.describe());
    }
  }
  if (!outputs_path.empty()) ir::write_arrays(outputs_path, to_write);
  if (timed) {
    fmt::print("time: {:.2f} ms", ms);
    // For generate-style outputs ([batch, length] token ids after the prompt: the
    // decoder-only prompt, the decoder prompt, or the decoder start token), the cost
    // per generated position.
    const int64_t prompt_width = left_pad ? int64_t(max_len) : prompt.empty() ? 1 : int64_t(prompt[0].size());
    if (fn.name == "generate" && !outs.empty() && outs[0].is_tensor() && outs[0].as_tensor().dtype() == vm::DType::i64 &&
        outs[0].as_tensor().ndim() == 2 && outs[0].as_tensor().size(1) > prompt_width)
      fmt::print(" ({:.2f} ms per generated token)", ms / double(outs[0].as_tensor().size(1) - prompt_width));
    fmt::print("\n");
  }
  if (profile) {
    fmt::print("\n{}", session.profiler()->report(20));
    if (!trace_path.empty()) {
      session.profiler()->write_trace(trace_path);
      fmt::print("trace: {}\n", trace_path);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "tensorvm-run: error: {}\n", e.what());
    return 1;
  }
}
