// libFuzzer target: bytes as a WAV file through io::parse_wav (an exactly sized copy, so
// ASan sees any read past the end) and, for inputs of odd size, through io::read_wav
// (from a memfd). Any input must end in audio or a std::runtime_error naming the file,
// the same for both; audio must be at the 16 kHz asked for, with no more samples than
// the bytes after the headers hold.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz_memfile.h"
#include "io/wav_file.h"

namespace {

// The cap on an input (tensorvm-run reads whole files; the fuzzer needs no long audio).
constexpr size_t kMaxInput = 1 << 16;

struct Outcome {
  bool ok = false;
  io::WavAudio audio;
};

Outcome parse(const std::vector<unsigned char>& bytes) {
  try {
    return {true, io::parse_wav(bytes, "fuzz.wav")};
  } catch (const std::runtime_error&) {
    return {};
  }
}

Outcome read(const uint8_t* data, size_t size) {
  fuzz::MemFile file(data, size);
  try {
    return {true, io::read_wav(file.path())};
  } catch (const std::runtime_error&) {
    return {};
  }
}

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "%s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxInput) return 0;
  const std::vector<unsigned char> bytes(data, data + size);
  const Outcome parsed = parse(bytes);
  if (size % 2 == 1) {
    const Outcome from_file = read(data, size);
    if (from_file.ok != parsed.ok || from_file.audio.samples.size() != parsed.audio.samples.size())
      finding("read_wav and parse_wav disagree on these bytes");
  }
  if (!parsed.ok) return 0;
  if (parsed.audio.sample_rate != 16000) finding("audio at a rate other than the one asked for");
  // 12 bytes of RIFF header and 8 of the data chunk's header at least precede the samples.
  if (parsed.audio.samples.size() * 2 > size - 20) finding("more samples than the bytes hold");
  return 0;
}
