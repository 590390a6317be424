// 16 kHz mono WAV audio for Whisper's transcribe (tensorvm-run --wav): a small RIFF
// reader, no library. It takes PCM 16-bit and IEEE float 32-bit samples (also in
// WAVE_FORMAT_EXTENSIBLE) and refuses anything else with a message naming the file
// and what it holds (no resampling, no channel mixing: convert with ffmpeg or sox).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace io {

struct WavAudio {
  int sample_rate = 0;
  std::vector<float> samples;  // PCM 16 scaled by 1 / 32768, as soundfile and librosa read it
};

// Throws std::runtime_error naming `path` (or `what` for in-memory bytes). read_wav
// reads only a regular file of at most 2 GiB (io/regular_file.h): a FIFO or device
// (/dev/zero) is refused before any read.
WavAudio read_wav(const std::string& path, int want_rate = 16000);
WavAudio parse_wav(const std::vector<unsigned char>& bytes, const std::string& what, int want_rate = 16000);

}  // namespace io
