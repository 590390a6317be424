// Any audio file as Whisper's input (tensorvm-run --audio / --wav): FLAC, Ogg/Vorbis,
// Opus, MP3, WAV (any rate, sample width and channel count) and whatever else the
// build's libsndfile reads, decoded by libsndfile, the channels averaged to mono, then
// resampled to the rate asked for by libsoxr at its "HQ" quality (SOXR_HQ: 20-bit
// precision, linear phase, the recipe python-soxr's resample uses by default).
//
// The audio library is optional (CMake TENSORVM_AUDIO, docs/whisper.md): without
// libsndfile1-dev and libsoxr-dev the build reads audio with the small WAV reader
// (io/wav_file.h: 16 kHz mono PCM 16 or float 32 only), and other files are refused
// saying that this build has no audio library.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "io/wav_file.h"

namespace io {

// True when this build decodes audio through libsndfile and libsoxr.
bool has_audio_library();

// The file's audio, mono, at `want_rate`. Throws std::runtime_error naming `path` and
// the reason (not a regular file, over 2 GiB, not audio libsndfile reads, a decode
// error). Only a regular file is read (io/regular_file.h).
WavAudio read_audio(const std::string& path, int want_rate = 16000);
// At most this many decoded frames (2^29: 2 GiB of f32, about nine hours at 16 kHz,
// three at 48 kHz), whatever a header declares.
inline constexpr size_t kMaxAudioFrames = size_t(1) << 29;
// The same for bytes in memory, named `what` in errors (the fuzz target's entry, with a
// smaller max_frames).
WavAudio decode_audio(const std::string& bytes, const std::string& what, int want_rate = 16000,
                      size_t max_frames = kMaxAudioFrames);

}  // namespace io
