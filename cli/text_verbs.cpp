#include "cli/text_verbs.h"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "cli/run_io.h"
#include "cli/whisper_segments.h"

#ifdef TENSORVM_HAVE_TEXT
#include "text/tokenizer.h"
#endif

namespace cli {

namespace {

// The lines of --text (split at newlines) or of a --text-file (a trailing \r dropped).
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

// The verb itself, its options checked; generate's --arg values parsed.
int run_checked(const ProgramRunner& program, const std::string& verb, const TextOptions& o,
                const std::vector<std::pair<std::string, vm::Value>>& args, const Print& print);
std::vector<int64_t> whisper_prompt(const std::string& dir, const std::string& language, const std::string& task);
// Where function `function` takes parameter `name`, or npos.
size_t param_index(const ProgramRunner& program, const std::string& function, const char* name) {
  const auto fn = program.functions.find(function);
  if (fn == program.functions.end()) return std::string::npos;
  const auto& names = fn->second.names;
  const auto it = std::find(names.begin(), names.end(), name);
  return it == names.end() ? std::string::npos : size_t(it - names.begin());
}

bool is_transcribe(const ProgramRunner& program, const std::string& function) {
  return function == "transcribe" && param_index(program, function, "decoder_input_ids") != std::string::npos &&
         param_index(program, function, "audio") != std::string::npos;
}

std::string ids_as_text(const std::vector<int64_t>& tokens) {
  std::string out;
  for (int64_t t : tokens) out += (out.empty() ? "" : " ") + std::to_string(t);
  return out;
}
}  // namespace

Print stdout_print() {
  return [](std::string_view s) {
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  };
}

bool TextOptions::parse(const std::string& option, const std::function<std::string()>& next) {
  if (option == "--text" || option == "--text-file") {
    if (given) vm::fail("give one --text or --text-file");
    given = true;
    lines = split_lines(option == "--text" ? next() : read_text_file(next()));
  } else if (option == "--src-lang") {
    src_lang = next();
  } else if (option == "--tgt-lang") {
    tgt_lang = next();
  } else if (option == "--language") {
    language = next();
  } else if (option == "--task") {
    task = next();
  } else if (option == "--timestamps") {
    timestamps = true;
  } else if (option == "--format") {
    format = next();
    if (!is_segment_format(format)) vm::fail("--format {}: it is text, srt, vtt or json", format);
  } else {
    return false;
  }
  return true;
}

bool is_text_verb(const ProgramRunner& program, const std::string& verb) {
  return (verb == "tokenize" || verb == "translate" || verb == "complete") && !program.functions.count(verb);
}

void check_text_options(const ProgramRunner& program, const TextOptions& text, const std::string& function,
                        const std::string& decoder_ids) {
  if (text.given) vm::fail("--text and --text-file go with the verbs tokenize, translate and complete");
  if (!text.src_lang.empty() || !text.tgt_lang.empty())
    vm::fail("--src-lang and --tgt-lang go with the verbs tokenize and translate");
  if (text.language.empty() && text.task.empty()) return;
  if (!is_transcribe(program, function))
    vm::fail("--language and --task go with Whisper's transcribe (a function taking audio and decoder_input_ids), "
             "not {}",
             function);
  if (!decoder_ids.empty()) vm::fail("{}: give --language/--task or --decoder-ids, not both", function);
}

void fill_transcribe_prompt(const ProgramRunner& program, const TextOptions& text, const std::string& function,
                            std::vector<vm::Value>& inputs) {
  if (!is_transcribe(program, function)) return;
  const size_t dec = param_index(program, function, "decoder_input_ids");
  if (dec >= inputs.size() || !inputs[dec].is_none()) return;
  vm::Value prompt = transcribe_prompt(program, inputs[param_index(program, function, "audio")], {text.language}, text.task);
  if (!prompt.is_none()) inputs[dec] = std::move(prompt);
}

int run_text_verb(const ProgramRunner& program, const std::string& verb, const TextOptions& text,
                  const std::map<std::string, std::string>& args, bool others, const Print& print) {
  if (!text.given) vm::fail("{} needs --text \"...\" or --text-file FILE", verb);
  if (others || !text.language.empty() || !text.task.empty())
    vm::fail("{} takes --text or --text-file, --arg, --src-lang, --tgt-lang, --threads and --max-instructions only",
             verb);
  if (verb == "complete" && !(text.src_lang.empty() && text.tgt_lang.empty()))
    vm::fail("complete: --src-lang and --tgt-lang go with tokenize and translate");
  std::vector<std::pair<std::string, vm::Value>> parsed;
  if (!args.empty()) {
    const auto gen = program.functions.find("generate");
    if (verb == "tokenize" || gen == program.functions.end())
      vm::fail("--arg {}: {} takes no --arg", args.begin()->first, verb);
    const ProgramRunner::Params& p = gen->second;
    for (const auto& [name, value] : args) {
      auto it = std::find(p.names.begin(), p.names.end(), name);
      if (it == p.names.end() || name == "input_ids" || name == "attention_mask")
        vm::fail("--arg {}: generate has no such option (it takes {})", name, fmt::join(p.names, ", "));
      parsed.emplace_back(name, parse_scalar(p.types[size_t(it - p.names.begin())], value, name));
    }
  }
  return run_checked(program, verb, text, parsed, print);
}

#ifdef TENSORVM_HAVE_TEXT
namespace {

struct Meta {
  bool decoder_only = false;
  int64_t pad = 0;
};

Meta read_meta(const std::string& meta_json) {
  const auto j = nlohmann::json::parse(meta_json, nullptr, false);
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

int run_checked(const ProgramRunner& program, const std::string& verb, const TextOptions& o,
                const std::vector<std::pair<std::string, vm::Value>>& parsed_args, const Print& print) {
  const std::string& dir = program.dir;
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
        print(fmt::format("{}\n", fmt::join(encode(o.lines[i]), " ")));
      } catch (const text::Error& e) {
        vm::fail("tokenize: input line {}: {}", i + 1, e.what());
      }
    }
    return 0;
  }
  const Meta meta = read_meta(program.meta_json);
  if (verb == "translate" && meta.decoder_only)
    vm::fail("translate: {} is a decoder-only program; use the verb complete", dir);
  if (verb == "complete" && !meta.decoder_only)
    vm::fail("complete: {} is not a decoder-only program (meta.json's is_encoder_decoder is not false); use the verb "
             "translate",
             dir);
  const auto gen = program.functions.find("generate");
  if (gen == program.functions.end()) vm::fail("{}: {} has no generate function", verb, dir);
  const std::vector<std::string>& params = gen->second.names;
  std::vector<std::pair<std::string, vm::Value>> args = parsed_args;
  if (!o.tgt_lang.empty()) {
    // transformers' way to pick the output language: generate's first token forced to
    // the language's token.
    int64_t id = 0;
    try {
      id = tokenizer->language_id(o.tgt_lang);
    } catch (const text::Error& e) {
      vm::fail("{}: --tgt-lang {}: {}", verb, o.tgt_lang, e.what());
    }
    if (std::find(params.begin(), params.end(), "forced_bos_token_id") == params.end())
      vm::fail("{}: --tgt-lang: generate of {} takes no forced_bos_token_id", verb, dir);
    for (const auto& a : args)
      if (a.first == "forced_bos_token_id") vm::fail("{}: give --tgt-lang or --arg forced_bos_token_id, not both", verb);
    args.emplace_back("forced_bos_token_id", vm::Value::from_int(id));
  }
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
    for (const std::string& p : params)
      if (p == "attention_mask") named.emplace_back("attention_mask", mask);
    for (const auto& a : args) named.push_back(a);
    const std::vector<vm::Value> outs = program.run_named("generate", named, vm::EmitCallback());
    if (outs.empty() || !outs[0].is_tensor()) vm::fail("{}: generate returned no sequences", verb);
    const vm::Tensor seq = outs[0].as_tensor().contiguous();
    if (seq.dtype() != vm::DType::i64 || seq.ndim() != 2)
      vm::fail("{}: generate returned {}, not [rows, n] ids", verb, seq.describe());
    // Each returned sequence (num_return_sequences may give several) on its own line;
    // a decoder-only program returns the prompt too, which is not printed.
    const int64_t skip = meta.decoder_only ? int64_t(ids.size()) : 0;
    std::string lines;
    for (int64_t r = 0; r < seq.size(0); ++r) {
      const int64_t* row = seq.data<int64_t>() + r * seq.size(1);
      std::vector<int64_t> out(row + std::min(skip, seq.size(1)), row + seq.size(1));
      lines += tokenizer->decode(out, true) + "\n";
    }
    print(lines);
  }
  return 0;
}

}  // namespace

bool print_as_text(const std::string& dir, const vm::Value& sequences, const Print& print) {
  if (!text::has_tokenizer(dir) || !sequences.is_tensor()) return false;
  const vm::Tensor seq = sequences.as_tensor().contiguous();
  if (seq.dtype() != vm::DType::i64 || seq.ndim() != 2) return false;
  const auto tokenizer = text::load_tokenizer(dir);
  for (int64_t r = 0; r < seq.size(0); ++r) {
    const int64_t* row = seq.data<int64_t>() + r * seq.size(1);
    print(tokenizer->decode(std::vector<int64_t>(row, row + seq.size(1)), true) + "\n");
  }
  return true;
}

namespace {
std::vector<int64_t> whisper_prompt(const std::string& dir, const std::string& language, const std::string& task) {
  try {
    return text::load_tokenizer(dir)->decoder_prompt(language, task);
  } catch (const text::Error& e) {
    vm::fail("transcribe: --language {} --task {}: {}", language.empty() ? "(none)" : language,
             task.empty() ? "(none)" : task, e.what());
  }
}

}  // namespace

vm::Value transcribe_prompt(const ProgramRunner& program, const vm::Value& audio,
                            const std::vector<std::string>& languages, const std::string& task,
                            const vm::Value& features) {
  const std::string& dir = program.dir;
  const auto meta = nlohmann::json::parse(program.meta_json, nullptr, false);
  const bool has_table = meta.is_object() && meta.contains("tokenizer") && meta["tokenizer"].is_object() &&
                         meta["tokenizer"].contains("prompt");
  const bool given = !task.empty() || std::any_of(languages.begin(), languages.end(), [](auto& l) { return !l.empty(); });
  if (!given && (!has_table || !text::has_tokenizer(dir))) return vm::Value::none();
  if (!audio.is_tensor() || audio.as_tensor().ndim() != 2)
    vm::fail("transcribe: audio must be f32 [batch, samples] to build the decoder prompt");
  const int64_t rows = audio.as_tensor().size(0);
  if (languages.empty() || (languages.size() != 1 && int64_t(languages.size()) != rows))
    vm::fail("transcribe: {} languages for {} clips (give one per clip, or one for all)", languages.size(), rows);
  std::vector<std::vector<int64_t>> prompts;  // one for all rows, or one per row
  for (const std::string& language : languages) prompts.push_back(whisper_prompt(dir, language, task));
  const int64_t n = int64_t(prompts[0].size());
  for (const auto& p : prompts)
    if (int64_t(p.size()) != n) vm::fail("transcribe: the languages give prompts of different lengths");
  vm::Tensor out = vm::Tensor::empty(vm::DType::i64, {rows, n});
  int64_t* ids = out.data<int64_t>();
  bool open = false;  // a language slot left for detect_language_audio
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<int64_t>& p = prompts[prompts.size() == 1 ? 0 : size_t(r)];
    std::copy(p.begin(), p.end(), ids + r * n);
    open = open || std::find(p.begin(), p.end(), text::kDetectLanguage) != p.end();
  }
  if (!open) return out;
  // from features (long-form: the first window of the whole recording's), else from the audio
  const std::string detector = features.is_none() ? "detect_language_audio" : "detect_language";
  const auto detect = program.functions.find(detector);
  if (detect == program.functions.end() || detect->second.names.empty())
    vm::fail("transcribe: {} has no {} function (imported before language detection existed): "
             "give --language, or import the checkpoint again",
             dir, detector);
  const std::vector<vm::Value> found = program.run_named(
      detector, {{detect->second.names[0], features.is_none() ? audio : features}}, vm::EmitCallback());
  const vm::Tensor lang = found.at(0).as_tensor().contiguous();
  if (lang.dtype() != vm::DType::i64 || lang.numel() != rows)
    vm::fail("transcribe: {} returned {}, not [{}] ids", detector, lang.describe(), rows);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n; ++c)
      if (ids[r * n + c] == text::kDetectLanguage) ids[r * n + c] = lang.data<int64_t>()[r];
  return out;
}

// A segment's text: decoded with skip_special_tokens, or its ids without a tokenizer.
std::function<std::string(const std::vector<int64_t>&)> segment_decoder(const std::string& dir) {
  if (!text::has_tokenizer(dir)) return ids_as_text;
  std::shared_ptr<const text::Tokenizer> tokenizer = text::load_tokenizer(dir);
  return [tokenizer](const std::vector<int64_t>& tokens) { return tokenizer->decode(tokens, true); };
}
#else
bool print_as_text(const std::string&, const vm::Value&, const Print&) { return false; }

namespace {
int run_checked(const ProgramRunner&, const std::string& verb, const TextOptions&,
                const std::vector<std::pair<std::string, vm::Value>>&, const Print&) {
  vm::fail("{}: this build of tensorvm has no text library (install libsentencepiece-dev and libpcre2-dev and "
           "rebuild; docs/text.md)",
           verb);
}

std::vector<int64_t> whisper_prompt(const std::string&, const std::string&, const std::string&) {
  vm::fail("transcribe: --language and --task need the text library, and this build of tensorvm has none "
           "(docs/text.md); give the prompt ids with --decoder-ids");
}

}  // namespace

vm::Value transcribe_prompt(const ProgramRunner&, const vm::Value&, const std::vector<std::string>& languages,
                            const std::string& task, const vm::Value&) {
  for (const std::string& language : languages)
    if (!language.empty()) whisper_prompt("", language, task);  // fails, saying why
  if (!task.empty()) whisper_prompt("", "", task);
  return vm::Value::none();
}

std::function<std::string(const std::vector<int64_t>&)> segment_decoder(const std::string&) { return ids_as_text; }
#endif

void print_segments(const ProgramRunner& program, const vm::Value& sequences, const std::string& format,
                    const Print& print) {
  auto field = [&](const char* name) { return whisper_meta_int(program.meta_json, name, "transcribe --timestamps"); };
  const int64_t begin = field("no_timestamps_token_id") + 1, eos = field("eos_token_id");
  const int64_t window = field("max_source_positions");
  if (!sequences.is_tensor() || sequences.as_tensor().dtype() != vm::DType::i64 || sequences.as_tensor().ndim() != 2)
    vm::fail("transcribe --timestamps: the program returned {}, not i64 [rows, n] sequences", sequences.describe());
  const vm::Tensor seq = sequences.as_tensor().contiguous();
  const std::function<std::string(const std::vector<int64_t>&)> decode = segment_decoder(program.dir);
  for (int64_t r = 0; r < seq.size(0); ++r) {
    const int64_t* row = seq.data<int64_t>() + r * seq.size(1);
    std::vector<WhisperSegment> segments = whisper_segments(std::vector<int64_t>(row, row + seq.size(1)), eos, begin,
                                                            window);
    for (WhisperSegment& s : segments) s.text = decode(s.tokens);
    print(format_segments(segments, format.empty() ? "text" : format));
  }
}

}  // namespace cli
