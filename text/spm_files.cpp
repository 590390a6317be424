#include "text/spm_files.h"

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

std::unique_ptr<sentencepiece::SentencePieceProcessor> load_spm(const std::string& path, std::string_view who) {
  auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  // Read here, not by the library's Load: it opens any name and reads it to the end.
  const auto status = sp->LoadFromSerializedProto(read_text_file(path));
  if (!status.ok()) fail("{}: cannot load the sentencepiece model {}: {}", who, path, status.ToString());
  return sp;
}

std::unique_ptr<sentencepiece::SentencePieceProcessor> load_spm_unnormalized(const std::string& path,
                                                                             std::string_view who,
                                                                             std::string* charsmap) {
  const std::string proto = read_text_file(path);
  // Calls f(field number, whole field, payload of a length-delimited one) for each field of `b`.
  auto each_field = [&](std::string_view b, auto&& f) {
    size_t pos = 0;
    auto varint = [&] {
      uint64_t v = 0;
      for (int shift = 0; pos < b.size() && shift < 64; shift += 7) {
        const auto c = static_cast<unsigned char>(b[pos++]);
        v |= uint64_t(c & 0x7f) << shift;
        if (!(c & 0x80)) return v;
      }
      fail("{}: {} is not a sentencepiece model (bad protobuf)", who, path);
    };
    while (pos < b.size()) {
      const size_t start = pos;
      const uint64_t key = varint(), type = key & 7;
      size_t payload = pos, len = 0;
      if (type == 0) varint();
      else if (type == 1) pos += 8;
      else if (type == 5) pos += 4;
      else if (type == 2) len = varint(), payload = pos, pos += len;
      else fail("{}: {} is not a sentencepiece model (protobuf wire type {})", who, path, type);
      if (pos > b.size()) fail("{}: {} is not a sentencepiece model (truncated)", who, path);
      f(key >> 3, b.substr(start, pos - start), b.substr(payload, len));
    }
  };
  // Every top-level field of the ModelProto but normalizer_spec (field 3), copied as it is.
  std::string out;
  each_field(proto, [&](uint64_t field, std::string_view whole, std::string_view payload) {
    if (field != 3) {
      out += whole;
    } else if (charsmap) {  // NormalizerSpec.precompiled_charsmap is field 2
      each_field(payload, [&](uint64_t f, std::string_view, std::string_view p) {
        if (f == 2) *charsmap = std::string(p);
      });
    }
  });
  // NormalizerSpec{name: "identity", add_dummy_prefix: false, remove_extra_whitespaces:
  // false, escape_whitespaces: true}
  static const char kIdentity[] = "\x1a\x10\x0a\x08identity\x18\x00\x20\x00\x28\x01";
  out.append(kIdentity, sizeof kIdentity - 1);
  auto sp = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const auto status = sp->LoadFromSerializedProto(out);
  if (!status.ok()) fail("{}: cannot load the sentencepiece model {}: {}", who, path, status.ToString());
  return sp;
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
