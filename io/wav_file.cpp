#include "io/wav_file.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "io/regular_file.h"

namespace io {

namespace {

uint32_t u32(const unsigned char* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }
uint16_t u16(const unsigned char* p) { return uint16_t(p[0] | p[1] << 8); }

[[noreturn]] void bad(const std::string& what, const std::string& msg) {
  throw std::runtime_error(fmt::format("{}: {}", what, msg));
}

// An hour of 16 kHz mono float samples is 230 MB: the cap leaves room for about nine,
// and keeps a huge or endless file (--wav /dev/zero is refused anyway: not a regular
// file) from being read into memory whole.
constexpr uint64_t kMaxWavBytes = uint64_t(2) << 30;

WavAudio parse_bytes(std::string_view b, const std::string& what, int want_rate) {
  if (b.size() < 12 || std::memcmp(b.data(), "RIFF", 4) != 0 || std::memcmp(b.data() + 8, "WAVE", 4) != 0)
    bad(what, "not a WAV file (no RIFF/WAVE header)");
  const auto* bytes = reinterpret_cast<const unsigned char*>(b.data());
  int format = -1, channels = 0, bits = 0, rate = 0;
  const unsigned char* data = nullptr;
  size_t data_size = 0;
  for (size_t at = 12; at + 8 <= b.size();) {
    const uint32_t size = u32(bytes + at + 4);
    const unsigned char* body = bytes + at + 8;
    const size_t room = b.size() - at - 8;
    if (std::memcmp(b.data() + at, "fmt ", 4) == 0) {
      if (size < 16 || room < 16) bad(what, "the fmt chunk is truncated");
      format = u16(body);
      channels = u16(body + 2);
      rate = int(u32(body + 4));
      bits = u16(body + 14);
      if (format == 0xFFFE) {  // WAVE_FORMAT_EXTENSIBLE: the sub-format's first two bytes
        if (size < 40 || room < 40) bad(what, "the extensible fmt chunk is truncated");
        format = u16(body + 24);
      }
    } else if (std::memcmp(b.data() + at, "data", 4) == 0) {
      data = body;
      data_size = std::min<size_t>(size, room);  // a streamed WAV may leave the size at its maximum
      if (size > room && size != 0xFFFFFFFFu) bad(what, fmt::format("the data chunk is truncated ({} of {} bytes)", room, size));
    }
    at += 8 + size_t(size) + (size & 1);  // chunks are padded to even sizes
  }
  if (format < 0) bad(what, "no fmt chunk");
  if (!data) bad(what, "no data chunk");
  if (channels != 1) bad(what, fmt::format("{} channels; Whisper takes mono audio (mix down first)", channels));
  if (rate != want_rate) bad(what, fmt::format("sample rate {} Hz; Whisper takes {} Hz (resample first)", rate, want_rate));
  WavAudio out;
  out.sample_rate = rate;
  if (format == 1 && bits == 16) {
    out.samples.resize(data_size / 2);
    for (size_t i = 0; i < out.samples.size(); ++i)
      out.samples[i] = float(int16_t(u16(data + 2 * i))) / 32768.0f;
  } else if (format == 3 && bits == 32) {
    out.samples.resize(data_size / 4);
    for (size_t i = 0; i < out.samples.size(); ++i) {
      const uint32_t v = u32(data + 4 * i);
      std::memcpy(&out.samples[i], &v, 4);
    }
  } else {
    bad(what, fmt::format("{} {}-bit samples; supported: PCM 16-bit and IEEE float 32-bit",
                          format == 1 ? "PCM" : format == 3 ? "float" : fmt::format("format {}", format), bits));
  }
  return out;
}

}  // namespace

WavAudio parse_wav(const std::vector<unsigned char>& bytes, const std::string& what, int want_rate) {
  return parse_bytes(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), what, want_rate);
}

WavAudio read_wav(const std::string& path, int want_rate) {
  return parse_bytes(read_regular_file(path, kMaxWavBytes, "a WAV file"), path, want_rate);
}

}  // namespace io
