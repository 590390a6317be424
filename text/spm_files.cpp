#include "text/spm_files.h"

#include "text/protobuf_wire.h"
#include "text/spm_model_check.h"
#include "text/util.h"

namespace text {

const std::string& named_file(const FileMap& files, const char* role, std::string_view who) {
  auto it = files.find(role);
  if (it == files.end()) fail("{}: meta.json names no '{}' file", who, role);
  return it->second;
}

nlohmann::json load_tokenizer_config(const FileMap& files, std::string_view who) {
  auto it = files.find("config");
  if (it == files.end()) return nlohmann::json::object();
  auto config = nlohmann::json::parse(read_text_file(it->second), nullptr, false);
  if (!config.is_object()) fail("{}: {} is not a JSON object", who, it->second);
  return config;
}

namespace {

// The library trusts the normalisation rules it finds in a model (text/spm_model_check.h),
// and its trie builder (darts-clone) throws on a piece it cannot hold, e.g. one that
// starts with a NUL byte, where the rest of the library returns a status.
std::unique_ptr<sentencepiece::SentencePieceProcessor> load_checked(const std::string& model, const std::string& path,
                                                                    std::string_view who) {
  const std::string problem = spm_model_problem(model);
  if (!problem.empty()) fail("{}: cannot load the sentencepiece model {}: {}", who, path, problem);
  auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  sentencepiece::util::Status status;
  try {
    status = sp->LoadFromSerializedProto(model);
  } catch (const std::exception& e) {
    fail("{}: cannot load the sentencepiece model {}: {}", who, path, e.what());
  }
  if (!status.ok()) fail("{}: cannot load the sentencepiece model {}: {}", who, path, status.ToString());
  return sp;
}

}  // namespace

std::unique_ptr<sentencepiece::SentencePieceProcessor> load_spm(const std::string& path, std::string_view who) {
  // Read here, not by the library's Load: it opens any name and reads it to the end.
  return load_checked(read_text_file(path), path, who);
}

std::unique_ptr<sentencepiece::SentencePieceProcessor> load_spm_unnormalized(const std::string& path,
                                                                             std::string_view who,
                                                                             std::string* charsmap) {
  const std::string proto = read_text_file(path);
  // Every top-level field of the ModelProto but normalizer_spec (field 3), copied as it is.
  std::string out;
  try {
  Wire w(proto);
  uint32_t field = 0, type = 0;
  for (size_t start = 0; w.next(field, type); start = w.pos()) {
    if (field != 3) {
      w.skip(type);
      out.append(proto, start, w.pos() - start);
    } else if (type != 2) {
      fail("{}: {} is not a sentencepiece model (normalizer_spec of wire type {})", who, path, type);
    } else {
      Wire spec(w.bytes());
      while (spec.next(field, type)) {  // NormalizerSpec.precompiled_charsmap is field 2
        if (field == 2 && type == 2 && charsmap) *charsmap = std::string(spec.bytes());
        else spec.skip(type);
      }
    }
  }
  } catch (const Error& e) {
    fail("{}: cannot load the sentencepiece model {}: {}", who, path, e.what());
  }
  // NormalizerSpec{name: "identity", add_dummy_prefix: false, remove_extra_whitespaces:
  // false, escape_whitespaces: true}
  static const char kIdentity[] = "\x1a\x10\x0a\x08identity\x18\x00\x20\x00\x28\x01";
  out.append(kIdentity, sizeof kIdentity - 1);
  return load_checked(out, path, who);
}

std::unordered_map<std::string, int64_t> load_vocab(const std::string& path, std::string_view who) {
  const auto j = nlohmann::json::parse(read_text_file(path), nullptr, false);
  if (!j.is_object()) fail("{}: {} is not a JSON object of piece -> id", who, path);
  std::unordered_map<std::string, int64_t> v;
  for (const auto& [piece, id] : j.items()) {
    if (!id.is_number_integer()) fail("{}: {}: the id of '{}' is not an integer", who, path, piece);
    v[piece] = id.get<int64_t>();
  }
  return v;
}

std::string token_name(const nlohmann::json& config, const char* key, const char* fallback, std::string_view who) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return fallback;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content")) return it->at("content").get<std::string>();
  fail("{}: tokenizer_config.json: {} is neither a string nor a token", who, key);
}

}  // namespace text
