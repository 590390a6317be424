// What tensorvm-run and the command line of a compiled program (vm/aot.h) share:
// inputs from --ids, --decoder-ids, --arg, --inputs and --wav, outputs printed and saved.
#include "cli/run_io.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/half.h"
#include "io/array_file.h"
#include "io/audio_file.h"
#include "vm/session.h"

namespace cli {

namespace {

vm::DType dtype_from_name(const std::string& s, const std::string& what) {
  if (s == "F32") return vm::DType::f32;
  if (s == "I64") return vm::DType::i64;
  if (s == "I32") return vm::DType::i32;
  if (s == "BOOL") return vm::DType::boolean;
  if (s == "I8") return vm::DType::i8;
  if (s == "F16") return vm::DType::f16;
  if (s == "BF16") return vm::DType::bf16;
  vm::fail("{}: tensors must be float32, int64, int32, bool, int8, float16 or bfloat16, got {}", what, s);
}

// A 0-d array for a scalar parameter (np.array(7) for an int, np.array(0.5) for a float).
vm::Value scalar_from_array(const io::ArrayData& a, const std::string& type, const std::string& what) {
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

}  // namespace

std::string safetensors_dtype(vm::DType t) {
  switch (t) {
    case vm::DType::f32: return "F32";
    case vm::DType::i64: return "I64";
    case vm::DType::i32: return "I32";
    case vm::DType::boolean: return "BOOL";
    case vm::DType::i8: return "I8";
    case vm::DType::f16: return "F16";
    case vm::DType::bf16: return "BF16";
  }
  return "?";
}

vm::Value value_from_array(const io::ArrayData& a, const std::string& type, const std::string& what) {
  if (type == "Tensor" || type == "Tensor?" || (type == "Any" && !a.shape.empty())) {
    vm::Tensor t = vm::Tensor::empty(dtype_from_name(a.dtype, what), vm::Shape(a.shape.begin(), a.shape.end()));
    if (!a.data.empty()) std::memcpy(t.raw(), a.data.data(), a.data.size());  // an empty vector's data() may be null
    return vm::Value(t);
  }
  return scalar_from_array(a, type, what);
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
std::vector<std::vector<int64_t>> parse_ids(const std::string& text, const char* option) {
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

namespace {

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

}  // namespace

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
      case vm::DType::f16: line += fmt::format("{:.6g}", vm::f16_to_f32(t.data<vm::half>()[i].bits)); break;
      case vm::DType::bf16: line += fmt::format("{:.6g}", vm::bf16_to_f32(t.data<vm::bfloat16>()[i].bits)); break;
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


std::vector<vm::Value> build_inputs(const std::string& fn_name, const std::vector<std::string>& param_names,
                                const std::vector<std::string>& param_types, const std::string& meta_json,
                                RunRequest& r) {
  if (!r.outputs_path.empty() && !io::is_array_file_name(r.outputs_path))
    vm::fail("--outputs {}: the name must end in .npz or .safetensors", r.outputs_path);
  std::map<std::string, io::ArrayData> arrays;
  for (io::ArrayData& a : r.inputs_path.empty() ? std::vector<io::ArrayData>{} : io::read_arrays(r.inputs_path))
    arrays.emplace(a.name, std::move(a));
  for (const io::ArrayData& a : r.arrays) arrays[a.name] = a;
  const std::vector<std::vector<int64_t>> ids = r.ids_text.empty() ? r.ids : parse_ids(r.ids_text);
  for (const auto& row : ids)
    if (row.empty()) vm::fail("--ids: every row needs at least one token id");
  size_t max_len = 0;
  for (const auto& r : ids) max_len = std::max(max_len, r.size());
  const nlohmann::json meta = nlohmann::json::parse(meta_json, nullptr, false);
  const bool left_pad = is_decoder_only(meta);
  std::vector<std::vector<int64_t>> prompt;
  if (!r.decoder_ids_text.empty()) prompt = parse_ids(r.decoder_ids_text, "--decoder-ids");
  for (const auto& r : prompt)
    if (r.size() != prompt[0].size())
      vm::fail("--decoder-ids: every row needs the same number of tokens (a decoder prompt is [batch, p]), got {} and {}",
               prompt[0].size(), r.size());
  bool prompt_used = prompt.empty();
  if (!r.wav_path.empty() && std::find(param_names.begin(), param_names.end(), "audio") == param_names.end())
    vm::fail("--wav: {} has no parameter audio", fn_name);

  std::vector<vm::Value> inputs;
  std::set<std::string> used;
  for (size_t p = 0; p < param_names.size(); ++p) {
    const std::string& name = param_names[p];
    const std::string& type = param_types[p];
    const std::string positional_name = fmt::format("arr_{}", p);
    const std::string array_name = arrays.count(name) ? name : arrays.count(positional_name) ? positional_name : "";
    if (!r.wav_path.empty() && name == "audio") {
      const io::WavAudio wav = io::read_audio(r.wav_path);
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
    } else if (r.args.count(name)) {  // overrides an array of --inputs
      // generate's True/False options (meta.json "bool_options") read 1 and 0 as booleans
      const bool flag = type == "Any" && meta.is_object() && meta.contains("bool_options") &&
                        meta["bool_options"].is_array() &&
                        std::find(meta["bool_options"].begin(), meta["bool_options"].end(), name) !=
                            meta["bool_options"].end();
      inputs.push_back(parse_scalar(flag ? "bool" : type, r.args[name], name));
      r.args.erase(name);
      used.insert(array_name);
    } else if (!array_name.empty()) {
      const io::ArrayData& a = arrays.at(array_name);
      const std::string what = fmt::format("{}input '{}' of {}", r.inputs_path.empty() ? "" : r.inputs_path + ": ", name, fn_name);
      used.insert(array_name);
      inputs.push_back(value_from_array(a, type, what));
    } else if (type == "None" || type == "Any") {
      inputs.push_back(vm::Value::none());  // an option left to the program's default
    } else {
      vm::fail("no value for input '{}' ({}) of {}: give it with --arg {}=..., --inputs or --ids", name, type, fn_name, name);
    }
  }
  for (const auto& [key, a] : arrays)
    if (!used.count(key))
      vm::fail("{}: array '{}' is no input of {} (name arrays arr_0, arr_1, ... or {})", r.inputs_path, key, fn_name,
               fmt::join(param_names, ", "));
  if (!r.args.empty()) vm::fail("--arg {}: {} has no such parameter", r.args.begin()->first, fn_name);
  if (!prompt_used) vm::fail("--decoder-ids: {} has no parameter decoder_input_ids", fn_name);
  r.prompt_width = left_pad ? int64_t(max_len) : prompt.empty() ? 1 : int64_t(prompt[0].size());
  return inputs;
}

vm::EmitCallback stream_printer() {
  return vm::token_stream([](const std::vector<std::vector<int64_t>>& rows) {
      std::vector<std::string> shown;
      for (const auto& r : rows) shown.push_back(fmt::format("{}", fmt::join(r, " ")));
      fmt::print("stream: {}\n", fmt::join(shown, "; "));
      std::fflush(stdout);
      return true;
    });
}

void finish(const std::string& fn_name, const std::vector<vm::Value>& outs, const RunRequest& r, double ms,
            const std::function<bool(size_t, const vm::Value&)>& printed) {
  std::vector<io::TensorToWrite> to_write;
  std::vector<vm::Tensor> keep;  // owns the bytes to_write points into
  std::vector<std::unique_ptr<unsigned char[]>> scalars;
  for (size_t i = 0; i < outs.size(); ++i) {
    const vm::Value& v = outs[i];
    if (!(printed && printed(i, v))) print_value(fmt::format("output {}", i), v);
    if (r.outputs_path.empty() || v.is_none()) continue;  // None: an optional result not produced
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
  if (!r.outputs_path.empty()) io::write_arrays(r.outputs_path, to_write);
  if (r.timed) {
    fmt::print("time: {:.2f} ms", ms);
    // For generate-style outputs ([batch, length] token ids after the prompt: the
    // decoder-only prompt, the decoder prompt, or the decoder start token), the cost
    // per generated position.
    const int64_t prompt_width = r.prompt_width;
    if (fn_name == "generate" && !outs.empty() && outs[0].is_tensor() && outs[0].as_tensor().dtype() == vm::DType::i64 &&
        outs[0].as_tensor().ndim() == 2 && outs[0].as_tensor().size(1) > prompt_width)
      fmt::print(" ({:.2f} ms per generated token)", ms / double(outs[0].as_tensor().size(1) - prompt_width));
    fmt::print("\n");
  }
}

}  // namespace cli
