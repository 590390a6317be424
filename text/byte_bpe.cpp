// Byte-level BPE as the tokenizers library runs a tokenizer.json: added tokens found
// first, the pre-tokenizer's regex (PCRE2) cuts the rest into words, each word's bytes
// map to printable characters (GPT-2's byte-to-unicode table), merges apply by rank,
// and the post-processor's template adds its special tokens. Decoding maps the
// characters back to bytes, with invalid UTF-8 replaced by U+FFFD as tokenizers does.
// The same class reads a sentencepiece-style BPE tokenizer.json (kind "sentencepiece",
// Llama 2, Gemma): no byte mapping, "▁" for spaces from the normalizer (then no
// pre-tokenizer, or Gemma's Split on " ", which finds none) or from a Metaspace one,
// <0xXX> byte tokens for characters outside the vocabulary, and a decoder chain
// (Replace, ByteFallback, Fuse, Strip) run as tokenizers runs it.
#include "text/byte_bpe.h"

#include <cctype>
#include <limits>
#include <optional>
#include <queue>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "text/added_tokens.h"
#include "text/metaspace.h"
#include "text/regex_split.h"
#include "text/unicode_nfc.h"
#include "text/util.h"

namespace text {
namespace {

// GPT-2's pre-tokenizer regex (the ByteLevel pre-tokenizer with use_regex).
const char* const kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Unsigned arithmetic: a tokenizer.json may give ids anywhere in int64, and a signed
// product would overflow.
struct PairHash {
  size_t operator()(const std::pair<int64_t, int64_t>& p) const {
    return std::hash<uint64_t>()(uint64_t(p.first) * 1000003u ^ uint64_t(p.second));
  }
};

// One step of a tokenizer.json decoder chain (sentencepiece style).
struct DecodeStep {
  enum Kind { kReplace, kByteFallback, kFuse, kStrip } kind;
  std::string from, to;  // kReplace; kStrip: `from` is the character stripped
  size_t start = 0, stop = 0;
};

// How long a normalizer or decoder chain may make a text: real chains at most triple
// it (Llama 2's " " -> "▁"), but growing Replace steps compound (eight of "▁" -> 16
// "▁" would ask for 16^8 times the input), so past this the chain is an error.
constexpr size_t kMaxGrowth = 16, kGrowthSlack = 4096;

// A normalizer step (sentencepiece style): Prepend, Replace (a plain string) or NFC.
struct NormalizeStep {
  enum Kind { kPrepend, kReplace, kNfc } kind;
  std::string from, to;
};

class ByteBpe final : public Tokenizer {
 public:
  ByteBpe(const std::map<std::string, std::string>& files, bool spm_style, const nlohmann::json& template_ids)
      : spm_style_(spm_style), name_(spm_style ? "sentencepiece BPE" : "byte-level BPE") {
    if (spm_style) kind_ = "sentencepiece";
    auto it = files.find("tokenizer");
    if (it == files.end()) fail("{}: meta.json names no 'tokenizer' file (tokenizer.json)", name_);
    const std::string& path = it->second;
    const auto j = nlohmann::json::parse(read_text_file(path), nullptr, false);
    if (!j.is_object()) fail("{}: {} is not a JSON object", name_, path);
    try {
      load(j, path);
    } catch (const nlohmann::json::exception& e) {
      fail("{}: {}: {}", name_, path, e.what());
    }
    if (!template_ids.is_null()) {
      try {
        prefix_.clear(), suffix_.clear();
        for (const auto& id : template_ids.at("prefix")) prefix_.push_back(json_int(id));
        for (const auto& id : template_ids.at("suffix")) suffix_.push_back(json_int(id));
      } catch (const nlohmann::json::exception& e) {
        fail("{}: meta.json's tokenizer \"template\" is malformed: {}", name_, e.what());
      }
    }
    if (files.count("config")) {
      const auto c = nlohmann::json::parse(read_text_file(files.at("config")), nullptr, false);
      clean_up_spaces_ = clean_up_wanted(c, /*bpe_model=*/true);
    }
  }

  std::vector<int64_t> encode(std::string_view input) const override {
    check_utf8(input, name_ + ": encode");
    std::vector<int64_t> ids;
    for (int64_t id : prefix_) ids.push_back(id);
    std::vector<std::string_view> words;
    std::string mapped;
    std::vector<std::string> spm_words;
    bool at_start = true;  // the next piece begins the input (Metaspace's prepend_scheme "first")
    // As tokenizers: tokens with normalized=false are found in the raw text, the rest of
    // it is normalised, then tokens with normalized=true are found in that (by their
    // normalised content), and what is left is pre-tokenized and merged.
    for (const std::string& chunk : added_.split(std::string(input), Match::kRaw)) {
      if (chunk.empty()) continue;
      const bool chunk_at_start = at_start;
      at_start = false;
      if (const AddedToken* t = added_.find(chunk, Match::kRaw)) {
        ids.push_back(t->id);
        continue;
      }
      bool piece_at_start = chunk_at_start;
      for (const std::string& piece : normalized_added_.split(normalize(chunk))) {
        if (piece.empty()) continue;
        const bool first = piece_at_start;
        piece_at_start = false;
        if (const AddedToken* t = normalized_added_.find(piece)) {
          ids.push_back(t->id);
          continue;
        }
        if (spm_style_ && metaspace_) {
          spm_words.clear();
          metaspace_->apply(piece, first, spm_words);
          for (const std::string& w : spm_words) bpe(w, ids);
          continue;
        }
        if (spm_style_) {
          bpe(piece, ids);
          continue;
        }
        std::string text = piece;
        if (add_prefix_space_ && text[0] != ' ') text.insert(0, 1, ' ');
        words.clear();
        if (regex_) {
          regex_->split(text, words);
        } else {
          words.push_back(text);
        }
        for (std::string_view w : words) {
          mapped.clear();
          for (unsigned char b : w) mapped += byte_char_[b];
          bpe(mapped, ids);
        }
      }
    }
    for (int64_t id : suffix_) ids.push_back(id);
    return ids;
  }

  std::string decode(const std::vector<int64_t>& ids, bool skip_special_tokens) const override {
    if (spm_style_ || join_tokens_) return decode_chain(ids, skip_special_tokens);
    std::string bytes;
    for (const int64_t id : ids) {
      const std::string* token = nullptr;
      if (const AddedToken* t = added_.find(id)) {
        if (skip_special_tokens && t->special) continue;
        token = &t->content;
      } else {
        auto it = id_to_token_.find(id);
        if (it == id_to_token_.end())
          fail("{}: decode: token id {} is outside the vocabulary ({} tokens)", name_, id, id_to_token_.size());
        token = &it->second;
      }
      // Each character back to its byte; one outside the table stays as it is.
      for (size_t i = 0; i < token->size();) {
        const size_t n = char_len(*token, i);
        auto b = char_byte_.find(token->substr(i, n));
        if (b != char_byte_.end()) {
          bytes += char(b->second);
        } else {
          bytes.append(*token, i, n);
        }
        i += n;
      }
    }
    return clean_up(utf8_lossy(bytes));
  }

  const std::string& kind() const override { return kind_; }

  // The normalizer of tokenizer.json (NFC for a byte-level one, the steps for a
  // sentencepiece-style one).
  std::string normalize(const std::string& chunk) const {
    if (!spm_style_) return nfc_ ? nfc(chunk) : chunk;
    std::string text = chunk;
    for (size_t k = 0; k < normalizer_.size(); ++k) {
      const NormalizeStep& n = normalizer_[k];
      if (n.kind == NormalizeStep::kNfc) {
        text = nfc(text);
      } else if (n.kind == NormalizeStep::kReplace) {
        check_growth("normalizer", k, replaced_size(text, n.from, n.to), chunk.size());
        replace_all(text, n.from, n.to);
      } else if (!text.empty()) {  // Prepend: only to a non-empty text
        check_growth("normalizer", k, text.size() + n.to.size(), chunk.size());
        text.insert(0, n.to);
      }
    }
    return text;
  }

  // Throws when step `k` of a chain would make `size` bytes of a text that was `input` bytes.
  void check_growth(const char* chain, size_t k, size_t size, size_t input) const {
    if (size <= kMaxGrowth * input + kGrowthSlack) return;
    fail("{}: step {} of tokenizer.json's {} would grow a text of {} bytes to {} bytes, past the limit of {} times "
         "the text plus {} bytes (growing steps compound)",
         name_, k + 1, chain, input, size, kMaxGrowth, kGrowthSlack);
  }

 private:
  bool spm_style_;
  std::string name_;
  std::string kind_ = "byte-level-bpe";
  std::vector<NormalizeStep> normalizer_;
  std::optional<Metaspace> metaspace_;  // the pre-tokenizer transformers 5 writes for Llama 2
  std::vector<DecodeStep> decoder_;
  int64_t unk_id_ = -1;
  bool byte_fallback_ = false, fuse_unk_ = false;
  int64_t byte_ids_[256];
  std::unordered_map<std::string, int64_t> vocab_;
  std::unordered_map<int64_t, std::string> id_to_token_;
  std::unordered_map<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>, PairHash> merges_;  // -> (rank, new id)
  AddedTokens added_;
  AddedTokens normalized_added_;  // the normalized=true tokens by their normalised content
  std::unique_ptr<Regex> regex_;
  std::string byte_char_[256];
  std::unordered_map<std::string, unsigned char> char_byte_;
  std::vector<int64_t> prefix_, suffix_;
  bool add_prefix_space_ = false, ignore_merges_ = false, clean_up_spaces_ = false, nfc_ = false;
  bool join_tokens_ = false;  // tokenizer.json has no decoder

  void load(const nlohmann::json& j, const std::string& path) {
    const auto& model = j.at("model");
    if (model.value("type", "") != "BPE") fail("{}: {}: the model is not BPE", name_, path);
    // transformers 5's GPT2Tokenizer writes "" for the prefix and suffix: as tokenizers
    // reads them, "" (and a dropout of 0) change nothing, so they count as absent.
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix", "dropout"})
      if (model.contains(key) && !model[key].is_null() && model[key] != "" && model[key] != 0)
        fail("{}: {}: model.{} is not supported", name_, path, key);
    byte_fallback_ = model.value("byte_fallback", false);
    fuse_unk_ = model.value("fuse_unk", false);
    if (byte_fallback_ && !spm_style_) fail("byte-level BPE: {}: byte_fallback is not supported", path);
    if (spm_style_) {
      load_spm_style(j, path);
    } else if (j.contains("normalizer") && !j["normalizer"].is_null()) {
      const std::string type = j["normalizer"].value("type", "?");
      if (type != "NFC") fail("byte-level BPE: {}: normalizer {} is not supported (none or NFC)", path, type);
      if (!nfc_available())
        fail("byte-level BPE: {}: normalizer NFC needs ICU, which this build of the text library lacks (libicu-dev)",
             path);
      nfc_ = true;
    }
    ignore_merges_ = model.value("ignore_merges", false);
    for (const auto& [tok, id] : model.at("vocab").items()) {
      const int64_t v = json_int(id);
      vocab_[tok] = v;
      id_to_token_[v] = tok;
    }
    int64_t rank = 0;
    for (const auto& m : model.at("merges")) {
      std::string a, b;
      if (m.is_string()) {  // "a b" (older files)
        const std::string s = m.get<std::string>();
        const size_t sp = s.find(' ');
        if (sp == std::string::npos) fail("byte-level BPE: {}: merge '{}' is not two tokens", path, s);
        a = s.substr(0, sp), b = s.substr(sp + 1);
      } else {
        a = m.at(0).get<std::string>(), b = m.at(1).get<std::string>();
      }
      auto ia = vocab_.find(a), ib = vocab_.find(b), iab = vocab_.find(a + b);
      if (ia == vocab_.end() || ib == vocab_.end() || iab == vocab_.end())
        fail("byte-level BPE: {}: merge '{} {}' names a token outside the vocabulary", path, a, b);
      merges_.emplace(std::pair{ia->second, ib->second}, std::pair{rank++, iab->second});
    }
    if (j.contains("added_tokens") && j["added_tokens"].is_array()) added_.add_from_tokenizer_json(j["added_tokens"]);
    for (const auto& [content, t] : added_.by_id()) id_to_token_.emplace(content, t.content);
    // GPT-2's table: printable Latin-1 bytes stand for themselves, the rest map to 256+.
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
      std::string c;
      append_utf8(c, printable ? uint32_t(b) : uint32_t(256 + next++));
      byte_char_[b] = c;
      char_byte_[c] = static_cast<unsigned char>(b);
    }
    if (spm_style_) {
      if (model.contains("unk_token") && model["unk_token"].is_string()) {
        auto u = vocab_.find(model["unk_token"].get<std::string>());
        if (u != vocab_.end()) unk_id_ = u->second;
      }
      for (int b = 0; b < 256; ++b) {
        auto t = vocab_.find(fmt::format("<0x{:02X}>", b));
        byte_ids_[b] = t == vocab_.end() ? -1 : t->second;
      }
    } else {
      load_pre_tokenizer(j.contains("pre_tokenizer") ? j["pre_tokenizer"] : nlohmann::json(), path);
      const nlohmann::json decoder = j.contains("decoder") ? j["decoder"] : nlohmann::json();
      if (!decoder.is_null() && decoder.value("type", "") != "ByteLevel")
        fail("byte-level BPE: {}: decoder {} is not supported (ByteLevel, or none)", path,
             decoder.dump().substr(0, 200));
    }
    // Without a decoder tokenizers joins the tokens with spaces, as they are.
    join_tokens_ = !j.contains("decoder") || j["decoder"].is_null();
    if (j.contains("post_processor") && !j["post_processor"].is_null()) load_post_processor(j["post_processor"], path);
    for (const auto& [id, t] : added_.by_id()) {
      if (!t.normalized) continue;
      AddedToken n = t;
      n.content = normalize(t.content);
      if (!n.content.empty()) normalized_added_.add(std::move(n));
    }
  }

  void load_spm_style(const nlohmann::json& j, const std::string& path) {
    const nlohmann::json pre = j.contains("pre_tokenizer") ? j["pre_tokenizer"] : nlohmann::json();
    if (!pre.is_null() && pre.value("type", "") == "Metaspace") {
      metaspace_ = Metaspace::from_json(pre, name_, path);
    } else if (!pre.is_null() && pre.value("type", "") != "Split") {
      fail("sentencepiece BPE: {}: pre_tokenizer {} is not supported (none, Metaspace, or a Split that never "
           "matches)",
           path, pre.value("type", "?"));
    }
    auto normalizer_step = [&](const nlohmann::json& n) {
      const std::string type = n.value("type", "?");
      if (type == "Prepend") {
        normalizer_.push_back({NormalizeStep::kPrepend, "", n.at("prepend").get<std::string>()});
      } else if (type == "Replace" && n.at("pattern").contains("String")) {
        normalizer_.push_back({NormalizeStep::kReplace, n["pattern"]["String"].get<std::string>(),
                               n.at("content").get<std::string>()});
      } else if (type == "NFC" && nfc_available()) {
        normalizer_.push_back({NormalizeStep::kNfc, "", ""});
      } else {
        fail("sentencepiece BPE: {}: normalizer {} is not supported (Prepend, Replace of a string, NFC)", path, type);
      }
    };
    if (j.contains("normalizer") && !j["normalizer"].is_null()) {
      const auto& n = j["normalizer"];
      if (n.value("type", "") == "Sequence") {
        for (const auto& step : n.at("normalizers")) normalizer_step(step);
      } else {
        normalizer_step(n);
      }
    }
    if (!pre.is_null() && !metaspace_) check_split_never_matches(pre, path);
    auto decoder_step = [&](const nlohmann::json& d) {
      const std::string type = d.value("type", "?");
      if (type == "Replace" && d.at("pattern").contains("String")) {
        decoder_.push_back({DecodeStep::kReplace, d["pattern"]["String"].get<std::string>(),
                            d.at("content").get<std::string>()});
      } else if (type == "ByteFallback") {
        decoder_.push_back({DecodeStep::kByteFallback, "", ""});
      } else if (type == "Fuse") {
        decoder_.push_back({DecodeStep::kFuse, "", ""});
      } else if (type == "Strip") {
        // tokenizers' Strip takes one character and two counts (a Rust char and usizes):
        // an empty content would match forever, and a negative count is no count.
        const std::string content = d.at("content").get<std::string>();
        if (content.empty() || char_len(content, 0) != content.size())
          fail("sentencepiece BPE: {}: decoder Strip: content must be one character, not \"{}\"", path, content);
        auto count = [&](const char* key) {
          if (!d.contains(key)) return size_t(0);
          if (!d[key].is_number_unsigned())
            fail("sentencepiece BPE: {}: decoder Strip: {} must be a count (0 or more), not {}", path, key,
                 d[key].dump());
          return d[key].get<size_t>();
        };
        decoder_.push_back({DecodeStep::kStrip, content, "", count("start"), count("stop")});
      } else {
        fail("sentencepiece BPE: {}: decoder {} is not supported (Replace, ByteFallback, Fuse, Strip)", path, type);
      }
    };
    if (j.contains("decoder") && !j["decoder"].is_null()) {
      const auto& d = j["decoder"];
      if (d.value("type", "") == "Sequence") {
        for (const auto& step : d.at("decoders")) decoder_step(step);
      } else {
        decoder_step(d);
      }
    }
  }

  // Gemma as transformers 5 saves it: Split on " " after a normalizer that replaced every
  // " " with "▁". Such a Split never matches, so it cuts nothing and the file reads as
  // one without a pre-tokenizer; any other Split is refused.
  void check_split_never_matches(const nlohmann::json& split, const std::string& path) const {
    const auto& pattern = split.at("pattern");
    const std::string s = pattern.contains("String") ? pattern["String"].get<std::string>() : std::string();
    bool removed = false;
    if (!s.empty() && char_len(s, 0) == s.size() && !split.value("invert", false)) {
      for (const NormalizeStep& n : normalizer_) {
        if (n.kind == NormalizeStep::kReplace && n.from == s && n.to.find(s) == std::string::npos) {
          removed = true;
        } else if (n.kind == NormalizeStep::kNfc || n.to.find(s) != std::string::npos) {
          removed = false;  // a later step may bring the character back
        }
      }
    }
    if (!removed)
      fail("sentencepiece BPE: {}: pre_tokenizer Split {} is not supported (only a Split on one character that the "
           "normalizer replaces everywhere, which never matches)",
           path, split.dump().substr(0, 200));
  }

  // The decoder chain over the tokens, as tokenizers' decode_chain runs it.
  std::string decode_chain(const std::vector<int64_t>& ids, bool skip_special_tokens) const {
    std::vector<std::string> tokens;
    for (const int64_t id : ids) {
      if (const AddedToken* t = added_.find(id)) {
        // tokenizers keeps a normalized token by its normalised content ("▁<added>")
        if (!(skip_special_tokens && t->special)) tokens.push_back(t->normalized ? normalize(t->content) : t->content);
        continue;
      }
      auto it = id_to_token_.find(id);
      if (it == id_to_token_.end())
        fail("{}: decode: token id {} is outside the vocabulary ({} tokens)", name_, id, id_to_token_.size());
      tokens.push_back(it->second);
    }
    if (join_tokens_) {
      std::string all;
      for (size_t k = 0; k < tokens.size(); ++k) all += (k ? " " : "") + tokens[k];
      return clean_up(std::move(all));
    }
    size_t input = 0;
    for (const std::string& t : tokens) input += t.size();
    for (size_t k = 0; k < decoder_.size(); ++k) {
      const DecodeStep& step = decoder_[k];
      if (step.kind == DecodeStep::kReplace) {
        size_t size = 0;
        for (const std::string& t : tokens) {
          const size_t r = replaced_size(t, step.from, step.to);
          size = r > SIZE_MAX - size ? SIZE_MAX : size + r;
        }
        check_growth("decoder", k, size, input);
        for (std::string& t : tokens) replace_all(t, step.from, step.to);
      } else if (step.kind == DecodeStep::kFuse) {
        std::string all;
        for (const std::string& t : tokens) all += t;
        tokens.assign(1, std::move(all));
      } else if (step.kind == DecodeStep::kStrip) {
        for (std::string& t : tokens) {
          size_t begin = 0, end = t.size();
          for (size_t k = 0; k < step.start && t.compare(begin, step.from.size(), step.from) == 0; ++k)
            begin += step.from.size();
          for (size_t k = 0; k < step.stop && end >= begin + step.from.size() &&
                             t.compare(end - step.from.size(), step.from.size(), step.from) == 0;
               ++k)
            end -= step.from.size();
          t = t.substr(begin, end - begin);
        }
      } else {  // ByteFallback: a run of <0xXX> tokens becomes its text, or one U+FFFD per byte if not UTF-8
        std::vector<std::string> out;
        std::string run;
        size_t run_len = 0;
        auto flush = [&] {
          if (!run_len) return;
          bool ok = true;
          try {
            check_utf8(run, "");
          } catch (const Error&) {
            ok = false;
          }
          if (ok) {
            out.push_back(run);
          } else {
            for (size_t k = 0; k < run_len; ++k) out.emplace_back("\xef\xbf\xbd");
          }
          run.clear();
          run_len = 0;
        };
        for (std::string& t : tokens) {
          if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' &&
              std::isxdigit(static_cast<unsigned char>(t[3])) &&
              std::isxdigit(static_cast<unsigned char>(t[4]))) {
            run += char(std::stoi(t.substr(3, 2), nullptr, 16));
            ++run_len;
          } else {
            flush();
            out.push_back(std::move(t));
          }
        }
        flush();
        tokens = std::move(out);
      }
    }
    std::string all;
    for (const std::string& t : tokens) all += t;
    return clean_up(std::move(all));
  }

  std::string clean_up(std::string out) const {
    if (clean_up_spaces_) clean_up_tokenization(out);
    return out;
  }

  void load_pre_tokenizer(const nlohmann::json& p, const std::string& path) {
    if (p.is_null()) fail("byte-level BPE: {}: no pre_tokenizer (a byte-level one is needed)", path);
    const std::string type = p.value("type", "");
    if (type == "ByteLevel") {
      add_prefix_space_ = p.value("add_prefix_space", false);
      if (p.value("use_regex", true)) regex_ = std::make_unique<Regex>(kGpt2Pattern);
      return;
    }
    // Llama 3 / Qwen2: Sequence[Split(regex, Isolated), ByteLevel(use_regex=false)].
    if (type == "Sequence") {
      const auto& list = p.at("pretokenizers");
      if (list.size() == 2 && list[0].value("type", "") == "Split" && list[1].value("type", "") == "ByteLevel" &&
          list[0].value("behavior", "") == "Isolated" && !list[0].value("invert", false) &&
          list[0].at("pattern").contains("Regex") && !list[1].value("use_regex", true)) {
        regex_ = std::make_unique<Regex>(list[0]["pattern"]["Regex"].get<std::string>());
        add_prefix_space_ = list[1].value("add_prefix_space", false);
        return;
      }
    }
    fail("byte-level BPE: {}: pre_tokenizer {} is not supported (ByteLevel, or Sequence[Split(Isolated), ByteLevel])",
         path, p.dump().substr(0, 200));
  }

  void load_post_processor(const nlohmann::json& p, const std::string& path) {
    const std::string type = p.value("type", "");
    if (type == "ByteLevel") return;  // offsets only
    if (type == "RobertaProcessing") {  // BART, RoBERTa: <s> text </s> (its other fields are offsets only)
      prefix_.push_back(json_int(p.at("cls").at(1)));
      suffix_.push_back(json_int(p.at("sep").at(1)));
      return;
    }
    const nlohmann::json* proc = &p;
    nlohmann::json template_proc;
    if (type == "Sequence") {  // Llama 3: [ByteLevel, TemplateProcessing]
      for (const auto& q : p.at("processors")) {
        const std::string t = q.value("type", "");
        if (t == "TemplateProcessing") template_proc = q;
        else if (t != "ByteLevel") fail("{}: {}: post_processor {} is not supported", name_, path, t);
      }
      if (template_proc.is_null()) return;
      proc = &template_proc;
    } else if (type != "TemplateProcessing") {
      fail("{}: {}: post_processor {} is not supported", name_, path, type);
    }
    bool seen_sequence = false;
    for (const auto& piece : proc->at("single")) {
      if (piece.contains("Sequence")) {
        seen_sequence = true;
        continue;
      }
      const std::string name = piece.at("SpecialToken").at("id").get<std::string>();
      const auto& st = proc->at("special_tokens").at(name);
      for (const auto& id : st.at("ids")) (seen_sequence ? suffix_ : prefix_).push_back(json_int(id));
    }
  }

  // Merges one word (already byte-mapped) and appends its ids.
  void bpe(const std::string& word, std::vector<int64_t>& ids) const {
    if (ignore_merges_) {
      auto it = vocab_.find(word);
      if (it != vocab_.end()) {
        ids.push_back(it->second);
        return;
      }
    }
    std::vector<int64_t> parts;
    bool last_unk = false;
    for (size_t i = 0; i < word.size();) {
      const size_t n = char_len(word, i);
      auto it = vocab_.find(word.substr(i, n));
      if (it != vocab_.end()) {
        parts.push_back(it->second);
        last_unk = false;
      } else if (!spm_style_) {
        fail("byte-level BPE: the vocabulary has no token for the byte character '{}'", word.substr(i, n));
      } else {
        // Outside the vocabulary: its bytes' <0xXX> tokens when all exist, else <unk>
        // (one for a run of them with fuse_unk).
        bool bytes = byte_fallback_;
        for (size_t k = 0; bytes && k < n; ++k) bytes = byte_ids_[static_cast<unsigned char>(word[i + k])] >= 0;
        if (bytes) {
          for (size_t k = 0; k < n; ++k) parts.push_back(byte_ids_[static_cast<unsigned char>(word[i + k])]);
          last_unk = false;
        } else {
          // without an unk token tokenizers drops the character (transformers 5's Llama 2 files have none)
          if (unk_id_ >= 0 && !(fuse_unk_ && last_unk)) parts.push_back(unk_id_);
          last_unk = true;
        }
      }
      i += n;
    }
    // Merge the pair of lowest rank, leftmost first, until none is left: a heap of
    // candidate pairs over a linked list of symbols (as tokenizers' Word::merge_all), so
    // a long word (a whole line in the sentencepiece style) costs n log n, not n^2.
    const size_t n = parts.size();
    if (n > 1) {
      std::vector<size_t> next(n), prev(n);
      std::vector<bool> alive(n, true);
      for (size_t i = 0; i < n; ++i) next[i] = i + 1, prev[i] = i - 1;  // prev[0] wraps, never read
      struct Cand {
        int64_t rank;
        size_t left;
        int64_t left_id, right_id, merged;
        bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
      };
      std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
      auto consider = [&](size_t left) {
        if (left >= n || next[left] >= n) return;
        auto it = merges_.find({parts[left], parts[next[left]]});
        if (it != merges_.end())
          heap.push({it->second.first, left, parts[left], parts[next[left]], it->second.second});
      };
      for (size_t i = 0; i + 1 < n; ++i) consider(i);
      while (!heap.empty()) {
        const Cand c = heap.top();
        heap.pop();
        const size_t right = next[c.left];
        // A candidate is stale when either side has merged since it was pushed.
        if (!alive[c.left] || right >= n || parts[c.left] != c.left_id || parts[right] != c.right_id) continue;
        parts[c.left] = c.merged;
        alive[right] = false;
        next[c.left] = next[right];
        if (next[right] < n) prev[next[right]] = c.left;
        if (c.left != 0) consider(prev[c.left]);  // symbol 0 is never a right side, so always first
        consider(c.left);
      }
      std::vector<int64_t> merged;
      for (size_t i = 0; i < n; i = next[i]) merged.push_back(parts[i]);
      parts.swap(merged);
    }
    ids.insert(ids.end(), parts.begin(), parts.end());
  }
};

}  // namespace

std::unique_ptr<Tokenizer> load_byte_bpe(const std::map<std::string, std::string>& files,
                                         const nlohmann::json& template_ids) {
  return std::make_unique<ByteBpe>(files, false, template_ids);
}

std::unique_ptr<Tokenizer> load_sentencepiece_bpe(const std::map<std::string, std::string>& files,
                                                  const nlohmann::json& template_ids) {
  return std::make_unique<ByteBpe>(files, true, template_ids);
}

}  // namespace text
