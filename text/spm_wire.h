// Just enough of the protobuf wire format to read a sentencepiece ModelProto (its
// pieces, model type and normalisation rules) and a SentencePieceText's pieces: the
// installed library ships no generated headers. Errors (a truncated or malformed
// message) are text::Error.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "text/util.h"

namespace text {

class Wire {
 public:
  explicit Wire(std::string_view b) : b_(b) {}
  bool next(uint32_t& field, uint32_t& type) {
    if (pos_ >= b_.size()) return false;
    const uint64_t key = varint();
    field = uint32_t(key >> 3), type = uint32_t(key & 7);
    return true;
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= b_.size()) fail("sentencepiece model: truncated protobuf");
      const auto c = static_cast<unsigned char>(b_[pos_++]);
      v |= uint64_t(c & 0x7f) << shift;
      if (!(c & 0x80)) return v;
    }
    fail("sentencepiece model: bad protobuf varint");
  }
  std::string_view bytes() {
    const uint64_t n = varint();
    if (n > b_.size() - pos_) fail("sentencepiece model: truncated protobuf");
    std::string_view s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  float fixed32() {
    if (b_.size() - pos_ < 4) fail("sentencepiece model: truncated protobuf");
    float f;
    std::memcpy(&f, b_.data() + pos_, 4);
    pos_ += 4;
    return f;
  }
  void skip(uint32_t type) {
    if (type == 0) varint();
    else if (type == 1) pos_ += 8;
    else if (type == 2) bytes();
    else if (type == 5) pos_ += 4;
    else fail("sentencepiece model: unsupported protobuf wire type {}", type);
    if (pos_ > b_.size()) fail("sentencepiece model: truncated protobuf");
  }

 private:
  std::string_view b_;
  size_t pos_ = 0;
};

}  // namespace text
