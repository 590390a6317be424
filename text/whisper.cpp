#include "text/whisper.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <vector>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "text/byte_bpe.h"
#include "text/util.h"

namespace text {
namespace {

class Whisper final : public Tokenizer {
 public:
  Whisper(const std::map<std::string, std::string>& files, const nlohmann::json& prompt,
          const nlohmann::json& template_ids)
      : bpe_(load_byte_bpe(files, template_ids)) {
    const std::string& path = files.at("tokenizer");
    const auto j = nlohmann::json::parse(read_text_file(path), nullptr, false);
    if (j.is_object() && j.contains("added_tokens") && j["added_tokens"].is_array())
      for (const auto& t : j["added_tokens"])
        if (t.is_object() && t.contains("content") && t["content"].is_string() && t.contains("id") &&
            t["id"].is_number_integer())
          added_[t["content"].get<std::string>()] = t["id"].get<int64_t>();
    start_of_prev_ = added_id("<|startofprev|>");
    start_of_transcript_ = added_id("<|startoftranscript|>");
    if (!prompt.is_null()) read_prompt(prompt);
  }

  std::vector<int64_t> encode(std::string_view input) const override { return bpe_->encode(input); }

  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const override {
    // _strip_prompt: a sequence opening with <|startofprev|> starts at <|startoftranscript|>
    // (or is empty without one).
    if (skip_special_tokens && !ids.empty() && ids[0] == start_of_prev_) {
      auto sot = std::find(ids.begin(), ids.end(), start_of_transcript_);
      return sot == ids.end() ? std::string() : drop_timestamps(bpe_->decode({sot, ids.end()}, true));
    }
    return drop_timestamps(bpe_->decode(ids, skip_special_tokens));
  }

  const std::string& kind() const override { return kind_; }

  // transformers' language_to_id: "<|fr|>" as lang_to_id has it, a name ("French") or a
  // code ("fr"), lowercased; then it must be one of the checkpoint's languages.
  int64_t language_id(std::string_view language) const override {
    require_prompt(language, "");
    std::string lang(language);
    for (char& c : lang) c = char(std::tolower(static_cast<unsigned char>(c)));
    std::string token;
    if (languages_.count(lang)) {
      token = lang;
    } else if (auto it = names_.find(lang); it != names_.end()) {
      token = "<|" + it->second + "|>";
    } else if (codes_.count(lang)) {
      token = "<|" + lang + "|>";
    } else {
      fail("whisper tokenizer: unknown language '{}': give a code ({}, ... {} in all) or a name ({}, ...)", language,
           example_codes_, codes_.size(), example_names_);
    }
    if (!languages_.count(token))
      fail("whisper tokenizer: language '{}' ({}) is not one of this model's (generation_config.json's lang_to_id: {}, "
           "...)",
           language, token, example_codes_);
    return added_id(token);
  }

  // WhisperForConditionalGeneration.generate's init tokens (_retrieve_init_tokens):
  // decoder start, language, task (transcribe when a language but no task is given),
  // <|notimestamps|> when the checkpoint names one (return_timestamps is not supported).
  // Without a language, as transformers: with no task either, generation_config's
  // forced_decoder_ids (a [1, null] language slot, then e.g. the task) follow the start;
  // the language is then detected (kDetectLanguage at index 1) since lang_to_id exists.
  std::vector<int64_t> decoder_prompt(std::string_view language, std::string_view task) const override {
    require_prompt(language, task);
    std::vector<int64_t> ids = {start_of_transcript_};
    if (language.empty() && task.empty()) ids.insert(ids.end(), forced_.begin(), forced_.end());
    if (!language.empty() || ids.size() == 1 || ids[1] == kForcedNone) {
      const int64_t lang = language.empty() ? kDetectLanguage : language_id(language);
      if (ids.size() > 1)
        ids[1] = lang;
      else
        ids.push_back(lang);
    }
    if (!task.empty() || !language.empty()) {
      const std::string t = task.empty() ? "transcribe" : std::string(task);
      if (t != "transcribe" && t != "translate")
        fail("whisper tokenizer: unknown task '{}': it is transcribe or translate", task);
      if (tasks_.count(t))
        ids.push_back(added_id("<|" + t + "|>"));
      else if (!task.empty())
        fail("whisper tokenizer: task '{}' is not one of this model's (generation_config.json's task_to_id: {})", task,
             fmt::join(tasks_, ", "));
    }
    const int64_t no_timestamps = added_id("<|notimestamps|>");
    if (no_timestamps_ && ids.back() != no_timestamps) ids.push_back(no_timestamps);
    ids.erase(std::remove(ids.begin(), ids.end(), kForcedNone), ids.end());  // transformers drops None tokens
    return ids;
  }

 private:
  std::string kind_ = "whisper-bpe";
  std::unique_ptr<Tokenizer> bpe_;
  std::map<std::string, int64_t> added_;  // tokenizer.json's added tokens: content -> id
  int64_t start_of_prev_ = -1, start_of_transcript_ = -1;
  // meta.json's "prompt" (import-hf, from generation_config.json): prompt_ false without one
  bool prompt_ = false, multilingual_ = true, no_timestamps_ = false;
  std::set<std::string> languages_, tasks_, codes_;
  std::map<std::string, std::string> names_;  // "french" -> "fr"
  std::string example_codes_, example_names_;
  // generation_config's forced_decoder_ids after the start token, in position order
  // (kForcedNone for a null): what generate prompts with when given no language nor task
  std::vector<int64_t> forced_;
  static constexpr int64_t kForcedNone = -2;

  int64_t added_id(const std::string& token) const {
    auto it = added_.find(token);
    return it == added_.end() ? -1 : it->second;
  }

  void read_prompt(const nlohmann::json& p) {
    std::vector<std::string> order;  // lang_to_id's tokens in id order (en, zh, de, ...)
    std::map<std::string, std::string> first_name;  // "es" -> "spanish" (the first of its names)
    try {
      for (const auto& l : p.at("languages")) order.push_back(l.get<std::string>());
      for (const auto& t : p.at("tasks")) tasks_.insert(t.get<std::string>());
      for (const auto& pair : p.at("language_names")) {  // [name, code] in transformers' order
        const std::string name = pair.at(0).get<std::string>(), code = pair.at(1).get<std::string>();
        names_[name] = code;
        codes_.insert(code);
        first_name.emplace(code, name);
      }
      no_timestamps_ = p.value("no_timestamps", false);
      if (p.contains("forced_decoder_ids"))
        for (const auto& id : p.at("forced_decoder_ids")) forced_.push_back(id.is_null() ? kForcedNone : json_int(id));
      multilingual_ = p.value("multilingual", true);
    } catch (const nlohmann::json::exception& e) {
      fail("whisper tokenizer: meta.json's tokenizer \"prompt\" is malformed: {}", e.what());
    }
    languages_.insert(order.begin(), order.end());
    for (const std::string& l : languages_)
      if (added_id(l) < 0) fail("whisper tokenizer: language token {} is not in tokenizer.json", l);
    for (const std::string& t : tasks_)
      if (added_id("<|" + t + "|>") < 0) fail("whisper tokenizer: task token <|{}|> is not in tokenizer.json", t);
    if (start_of_transcript_ < 0 || (no_timestamps_ && added_id("<|notimestamps|>") < 0))
      fail("whisper tokenizer: tokenizer.json lacks <|startoftranscript|> or <|notimestamps|>");
    // the first few of the model's languages, for messages
    size_t shown = 0;
    for (const std::string& token : order) {
      if (token.size() < 5 || shown == 7) continue;
      const std::string code = token.substr(2, token.size() - 4);
      auto name = first_name.find(code);
      if (name == first_name.end()) continue;
      example_codes_ += (shown ? ", " : "") + code;
      example_names_ += (shown ? ", " : "") + name->second;
      ++shown;
    }
    prompt_ = true;
  }

  void require_prompt(std::string_view language, std::string_view task) const {
    if (!prompt_)
      fail("whisper tokenizer: this program has no language or task table (its checkpoint's generation_config.json "
           "had no lang_to_id and task_to_id): give the prompt ids instead (decoder_input_ids)");
    if (!multilingual_ && !(language.empty() && task.empty()))
      fail("whisper tokenizer: an English-only model takes no language or task (generation_config.json's "
           "is_multilingual is false)");
  }

  // transformers' re.sub(r"<\|(\d+\.\d+)\|>", "", text), on the decoded text.
  static std::string drop_timestamps(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
      if (text.compare(i, 2, "<|") == 0) {
        size_t k = i + 2, int_digits = 0, frac_digits = 0;
        while (k < text.size() && std::isdigit(static_cast<unsigned char>(text[k]))) ++k, ++int_digits;
        if (int_digits && k < text.size() && text[k] == '.') {
          ++k;
          while (k < text.size() && std::isdigit(static_cast<unsigned char>(text[k]))) ++k, ++frac_digits;
          if (frac_digits && text.compare(k, 2, "|>") == 0) {
            i = k + 2;
            continue;
          }
        }
      }
      out += text[i++];
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Tokenizer> load_whisper(const std::map<std::string, std::string>& files,
                                        const nlohmann::json& prompt, const nlohmann::json& template_ids) {
  if (!files.count("tokenizer")) fail("whisper tokenizer: meta.json names no 'tokenizer' file (tokenizer.json)");
  return std::make_unique<Whisper>(files, prompt, template_ids);
}

}  // namespace text
