#include "io/audio_file.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "io/regular_file.h"

#ifdef TENSORVM_HAVE_AUDIO
#include <sndfile.h>
#include <soxr.h>
#endif

namespace io {

namespace {

#ifdef TENSORVM_HAVE_AUDIO
// As the WAV reader: about nine hours of 16 kHz float samples; a bigger file is refused unread.
constexpr uint64_t kMaxAudioBytes = uint64_t(2) << 30;

[[noreturn]] void bad(const std::string& what, const std::string& msg) {
  throw std::runtime_error(fmt::format("{}: {}", what, msg));
}

// libsndfile's virtual I/O over bytes in memory.
struct Memory {
  const std::string* bytes;
  sf_count_t at = 0;
};

sf_count_t mem_length(void* user) { return sf_count_t(static_cast<Memory*>(user)->bytes->size()); }
sf_count_t mem_seek(sf_count_t offset, int whence, void* user) {
  Memory& m = *static_cast<Memory*>(user);
  const sf_count_t size = sf_count_t(m.bytes->size());
  sf_count_t to = whence == SEEK_SET ? offset : whence == SEEK_CUR ? m.at + offset : size + offset;
  m.at = std::clamp<sf_count_t>(to, 0, size);
  return m.at;
}
sf_count_t mem_read(void* out, sf_count_t count, void* user) {
  Memory& m = *static_cast<Memory*>(user);
  const sf_count_t n = std::clamp<sf_count_t>(count, 0, sf_count_t(m.bytes->size()) - m.at);
  std::memcpy(out, m.bytes->data() + m.at, size_t(n));
  m.at += n;
  return n;
}
sf_count_t mem_write(const void*, sf_count_t, void*) { return 0; }
sf_count_t mem_tell(void* user) { return static_cast<Memory*>(user)->at; }

struct CloseFile {
  void operator()(SNDFILE* f) const { sf_close(f); }
};

// Every frame, the channels averaged (the mean: soundfile's data.mean(axis=1), librosa's to_mono).
std::vector<float> decode_mono(const std::string& bytes, const std::string& what, int& rate, size_t max_frames) {
  Memory mem{&bytes};
  SF_VIRTUAL_IO io{mem_length, mem_seek, mem_read, mem_write, mem_tell};
  SF_INFO info{};
  std::unique_ptr<SNDFILE, CloseFile> file(sf_open_virtual(&io, SFM_READ, &info, &mem));
  if (!file) bad(what, fmt::format("not audio this build reads (libsndfile: {})", sf_strerror(nullptr)));
  if (info.channels < 1 || info.channels > 256) bad(what, fmt::format("{} channels", info.channels));
  if (info.samplerate < 1000 || info.samplerate > 768000)
    bad(what, fmt::format("a sample rate of {} Hz (1000 to 768000 are read)", info.samplerate));
  rate = info.samplerate;
  const size_t channels = size_t(info.channels);
  std::vector<float> block(channels * 4096), mono;
  // The frame count a header declares is not trusted (it may lie): read until the end,
  // at most max_frames (a FLAC of silence is tiny for hours of samples).
  for (;;) {
    const sf_count_t got = sf_readf_float(file.get(), block.data(), 4096);
    if (got <= 0) break;
    for (sf_count_t f = 0; f < got; ++f) {
      float sum = 0;
      for (size_t c = 0; c < channels; ++c) sum += block[size_t(f) * channels + c];
      mono.push_back(channels == 1 ? sum : sum / float(channels));
    }
    if (mono.size() > max_frames)
      bad(what, fmt::format("longer than {} samples (the limit on decoded audio)", max_frames));
  }
  if (const int err = sf_error(file.get()); err != SF_ERR_NO_ERROR)
    bad(what, fmt::format("a decode error (libsndfile: {})", sf_error_number(err)));
  for (float v : mono)
    if (!std::isfinite(v)) bad(what, "holds samples that are not finite numbers");
  return mono;
}

std::vector<float> resample(const std::vector<float>& in, int from, int to, const std::string& what) {
  if (from == to || in.empty()) return in;
  const double ratio = double(to) / double(from);
  std::vector<float> out(size_t(double(in.size()) * ratio + 1.0));
  size_t done = 0;
  const soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  const soxr_quality_spec_t quality = soxr_quality_spec(SOXR_HQ, 0);
  const soxr_error_t err = soxr_oneshot(from, to, 1, in.data(), in.size(), nullptr, out.data(), out.size(), &done,
                                        &io, &quality, nullptr);
  if (err) bad(what, fmt::format("resampling from {} Hz to {} Hz failed (libsoxr: {})", from, to, err));
  out.resize(done);
  return out;
}
#endif

}  // namespace

#ifdef TENSORVM_HAVE_AUDIO
bool has_audio_library() { return true; }

WavAudio decode_audio(const std::string& bytes, const std::string& what, int want_rate, size_t max_frames) {
  int rate = 0;
  const std::vector<float> mono = decode_mono(bytes, what, rate, max_frames);
  WavAudio out;
  out.sample_rate = want_rate;
  out.samples = resample(mono, rate, want_rate, what);
  return out;
}

WavAudio read_audio(const std::string& path, int want_rate) {
  return decode_audio(read_regular_file(path, kMaxAudioBytes, "audio file"), path, want_rate);
}
#else
bool has_audio_library() { return false; }

namespace {
[[noreturn]] void no_library(const std::exception& e) {
  throw std::runtime_error(fmt::format("{} (this build of tensorvm has no audio library and reads only 16 kHz mono WAV: install "
                        "libsndfile1-dev and libsoxr-dev and rebuild, docs/whisper.md)",
                        e.what()));
}
}  // namespace

WavAudio decode_audio(const std::string& bytes, const std::string& what, int want_rate, size_t) {
  try {
    return parse_wav(std::vector<unsigned char>(bytes.begin(), bytes.end()), what, want_rate);
  } catch (const std::runtime_error& e) {
    no_library(e);
  }
}

WavAudio read_audio(const std::string& path, int want_rate) {
  try {
    return read_wav(path, want_rate);
  } catch (const std::runtime_error& e) {
    no_library(e);
  }
}
#endif

}  // namespace io
