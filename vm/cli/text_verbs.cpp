#include "vm/cli/text_verbs.h"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#ifdef TENSORVM_HAVE_TEXT
#include "text/tokenizer.h"
#endif

namespace cli {

bool is_text_verb(const std::string& name) { return name == "tokenize" || name == "translate" || name == "complete"; }

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    start = end + 1;
  }
  // A file's final newline ends its last line rather than starting an empty one.
  if (lines.size() > 1 && lines.back().empty() && !text.empty() && text.back() == '\n') lines.pop_back();
  return lines;
}

#ifdef TENSORVM_HAVE_TEXT
namespace {

struct Meta {
  bool decoder_only = false;
  int64_t pad = 0;
};

Meta read_meta(const vm::Program& p) {
  const auto j = nlohmann::json::parse(p.meta_json(), nullptr, false);
  Meta m;
  if (!j.is_object()) return m;
  if (j.contains("is_encoder_decoder") && j["is_encoder_decoder"].is_boolean())
    m.decoder_only = !j["is_encoder_decoder"].get<bool>();
  if (j.contains("pad_token_id") && j["pad_token_id"].is_number_integer()) m.pad = j["pad_token_id"];
  return m;
}

// One row [1, n] of ids and its all-ones mask.
std::pair<vm::Tensor, vm::Tensor> one_row(const std::vector<int64_t>& ids) {
  const int64_t n = int64_t(ids.size());
  vm::Tensor t = vm::Tensor::empty(vm::DType::i64, {1, n}), m = vm::Tensor::empty(vm::DType::i64, {1, n});
  for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = ids[size_t(i)], m.data<int64_t>()[i] = 1;
  return {t, m};
}

}  // namespace

int run_text_verb(const std::string& dir, const std::shared_ptr<const vm::Program>& program, const std::string& verb,
                  const TextVerbOptions& o) {
  const auto tokenizer = text::load_tokenizer(dir);
  auto encode = [&](const std::string& line) {
    return o.src_lang.empty() ? tokenizer->encode(line) : tokenizer->encode_from(line, o.src_lang);
  };
  if (!o.src_lang.empty()) {
    try {
      tokenizer->language_id(o.src_lang);
    } catch (const text::Error& e) {
      vm::fail("{}: --src-lang {}: {}", verb, o.src_lang, e.what());
    }
  }
  if (verb == "tokenize") {
    if (!o.tgt_lang.empty()) vm::fail("tokenize: --tgt-lang goes with translate");
    for (size_t i = 0; i < o.lines.size(); ++i) {
      try {
        fmt::print("{}\n", fmt::join(encode(o.lines[i]), " "));
      } catch (const text::Error& e) {
        vm::fail("tokenize: input line {}: {}", i + 1, e.what());
      }
    }
    return 0;
  }
  const Meta meta = read_meta(*program);
  if (verb == "translate" && meta.decoder_only)
    vm::fail("translate: {} is a decoder-only program; use the verb complete", dir);
  if (verb == "complete" && !meta.decoder_only)
    vm::fail("complete: {} is not a decoder-only program (meta.json's is_encoder_decoder is not false); use the verb "
             "translate",
             dir);
  if (!program->find("generate")) vm::fail("{}: {} has no generate function", verb, dir);
  const vm::Function& fn = program->function("generate");
  std::vector<std::pair<std::string, vm::Value>> args = o.args;
  if (!o.tgt_lang.empty()) {
    // transformers' way to pick the output language: generate's first token forced to
    // the language's token.
    int64_t id = 0;
    try {
      id = tokenizer->language_id(o.tgt_lang);
    } catch (const text::Error& e) {
      vm::fail("{}: --tgt-lang {}: {}", verb, o.tgt_lang, e.what());
    }
    if (std::find(fn.param_names.begin(), fn.param_names.end(), "forced_bos_token_id") == fn.param_names.end())
      vm::fail("{}: --tgt-lang: generate of {} takes no forced_bos_token_id", verb, dir);
    for (const auto& a : args)
      if (a.first == "forced_bos_token_id") vm::fail("{}: give --tgt-lang or --arg forced_bos_token_id, not both", verb);
    args.emplace_back("forced_bos_token_id", vm::Value::from_int(id));
  }
  vm::Session session(program, o.session);
  // One run per line: each output depends on its own line only, as it would alone.
  for (size_t i = 0; i < o.lines.size(); ++i) {
    std::vector<int64_t> ids;
    try {
      ids = encode(o.lines[i]);
    } catch (const text::Error& e) {
      vm::fail("{}: input line {}: {}", verb, i + 1, e.what());
    }
    if (ids.empty()) vm::fail("{}: input line {} gives no tokens (an empty prompt)", verb, i + 1);
    auto [input_ids, mask] = one_row(ids);
    std::vector<std::pair<std::string, vm::Value>> named = {{"input_ids", input_ids}};
    for (const std::string& p : fn.param_names)
      if (p == "attention_mask") named.emplace_back("attention_mask", mask);
    for (const auto& a : args) named.push_back(a);
    const std::vector<vm::Value> outs = session.run_named("generate", named);
    if (outs.empty() || !outs[0].is_tensor()) vm::fail("{}: generate returned no sequences", verb);
    const vm::Tensor seq = outs[0].as_tensor().contiguous();
    if (seq.dtype() != vm::DType::i64 || seq.ndim() != 2)
      vm::fail("{}: generate returned {}, not [rows, n] ids", verb, seq.describe());
    // Each returned sequence (num_return_sequences may give several) on its own line;
    // a decoder-only program returns the prompt too, which is not printed.
    const int64_t skip = meta.decoder_only ? int64_t(ids.size()) : 0;
    for (int64_t r = 0; r < seq.size(0); ++r) {
      const int64_t* row = seq.data<int64_t>() + r * seq.size(1);
      std::vector<int64_t> out(row + std::min(skip, seq.size(1)), row + seq.size(1));
      fmt::print("{}\n", tokenizer->decode(out, true));
    }
    std::fflush(stdout);
  }
  return 0;
}
bool print_as_text(const std::string& dir, const vm::Value& sequences) {
  if (!text::has_tokenizer(dir) || !sequences.is_tensor()) return false;
  const vm::Tensor seq = sequences.as_tensor().contiguous();
  if (seq.dtype() != vm::DType::i64 || seq.ndim() != 2) return false;
  const auto tokenizer = text::load_tokenizer(dir);
  for (int64_t r = 0; r < seq.size(0); ++r) {
    const int64_t* row = seq.data<int64_t>() + r * seq.size(1);
    fmt::print("{}\n", tokenizer->decode(std::vector<int64_t>(row, row + seq.size(1)), true));
  }
  return true;
}

std::vector<int64_t> whisper_prompt(const std::string& dir, const std::string& language, const std::string& task) {
  try {
    return text::load_tokenizer(dir)->decoder_prompt(language, task);
  } catch (const text::Error& e) {
    vm::fail("transcribe: --language {} --task {}: {}", language.empty() ? "(none)" : language,
             task.empty() ? "(none)" : task, e.what());
  }
}

vm::Value transcribe_prompt(const std::string& dir, vm::Session& session, const vm::Value& audio,
                            const std::string& language, const std::string& task) {
  const vm::Program& program = session.program();
  const auto meta = nlohmann::json::parse(program.meta_json(), nullptr, false);
  const bool has_table = meta.is_object() && meta.contains("tokenizer") && meta["tokenizer"].is_object() &&
                         meta["tokenizer"].contains("prompt");
  if (language.empty() && task.empty() && (!has_table || !text::has_tokenizer(dir))) return vm::Value::none();
  const std::vector<int64_t> prompt = whisper_prompt(dir, language, task);
  if (!audio.is_tensor() || audio.as_tensor().ndim() != 2)
    vm::fail("transcribe: audio must be f32 [batch, samples] to build the decoder prompt");
  const int64_t rows = audio.as_tensor().size(0), n = int64_t(prompt.size());
  vm::Tensor out = vm::Tensor::empty(vm::DType::i64, {rows, n});
  int64_t* ids = out.data<int64_t>();
  for (int64_t r = 0; r < rows; ++r) std::copy(prompt.begin(), prompt.end(), ids + r * n);
  const auto slot = std::find(prompt.begin(), prompt.end(), text::kDetectLanguage);
  if (slot == prompt.end()) return out;
  if (!program.find("detect_language_audio"))
    vm::fail("transcribe: {} has no detect_language_audio function (imported before language detection existed): "
             "give --language, or import the checkpoint again",
             dir);
  const std::vector<vm::Value> found = session.run("detect_language_audio", {audio});
  const vm::Tensor lang = found.at(0).as_tensor().contiguous();
  if (lang.dtype() != vm::DType::i64 || lang.numel() != rows)
    vm::fail("transcribe: detect_language_audio returned {}, not [{}] ids", lang.describe(), rows);
  for (int64_t r = 0; r < rows; ++r) ids[r * n + (slot - prompt.begin())] = lang.data<int64_t>()[r];
  return out;
}
#else
bool print_as_text(const std::string&, const vm::Value&) { return false; }

vm::Value transcribe_prompt(const std::string&, vm::Session&, const vm::Value&, const std::string& language,
                            const std::string& task) {
  if (language.empty() && task.empty()) return vm::Value::none();
  whisper_prompt("", language, task);  // fails, saying why
  return vm::Value::none();
}

std::vector<int64_t> whisper_prompt(const std::string&, const std::string&, const std::string&) {
  vm::fail("transcribe: --language and --task need the text library, and this tensorvm-run was built without it "
           "(docs/text.md); give the prompt ids with --decoder-ids");
}

int run_text_verb(const std::string&, const std::shared_ptr<const vm::Program>&, const std::string& verb,
                  const TextVerbOptions&) {
  vm::fail("{}: this tensorvm-run was built without the text library (install libsentencepiece-dev and "
           "libpcre2-dev and rebuild; docs/text.md)",
           verb);
}
#endif

}  // namespace cli
