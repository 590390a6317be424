// libFuzzer target: bytes as an audio file through io::decode_audio (libsndfile, the
// channels averaged, libsoxr to 16 kHz; io/audio_file.h) and, for inputs of odd size,
// through io::read_audio (from a memfd). Any input must end in audio or a
// std::runtime_error naming the file, the same for both; audio must be finite, at the
// rate asked for, and within the frame cap (times the resampling ratio's bound).
// Built only with the audio library (libsndfile1-dev, libsoxr-dev).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "fuzz_memfile.h"
#include "io/audio_file.h"

namespace {

constexpr size_t kMaxInput = 1 << 16;
// Decoded frames per input: a few seconds, so that a tiny FLAC of "hours" stays fast.
constexpr size_t kMaxFrames = size_t(1) << 20;

struct Outcome {
  bool ok = false;
  io::WavAudio audio;
  bool capped = false;  // refused for its length: read_audio's cap is larger
};

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "%s\n", what);
  std::abort();
}

Outcome decode(const std::string& bytes) {
  try {
    return {true, io::decode_audio(bytes, "fuzz.audio", 16000, kMaxFrames)};
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    if (message.rfind("fuzz.audio: ", 0) != 0) finding("an error that does not name the file");
    Outcome out;
    out.capped = message.find("the limit on decoded audio") != std::string::npos;
    return out;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxInput) return 0;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const Outcome decoded = decode(bytes);
  if (size % 2 == 1 && !decoded.capped) {  // the file path too (its frame cap is larger)
    fuzz::MemFile file(data, size);
    bool ok = false;
    size_t samples = 0;
    try {
      samples = io::read_audio(file.path()).samples.size();
      ok = true;
    } catch (const std::runtime_error&) {
    }
    if (ok != decoded.ok || samples != decoded.audio.samples.size())
      finding("read_audio and decode_audio disagree on these bytes");
  }
  if (!decoded.ok) return 0;
  if (decoded.audio.sample_rate != 16000) finding("audio at a rate other than the one asked for");
  // 1000 Hz is the lowest rate read: at most 16x the frames after resampling, plus slack
  if (decoded.audio.samples.size() > kMaxFrames * 16 + 64) finding("more samples than the cap allows");
  for (float v : decoded.audio.samples)
    if (!std::isfinite(v)) finding("a sample that is not finite");
  return 0;
}
