// ir/wav_file: the WAV reader of tensorvm-run --wav.
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include "io/wav_file.h"

namespace {

void put32(std::vector<unsigned char>& b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back((v >> (8 * i)) & 0xff);
}
void put16(std::vector<unsigned char>& b, uint16_t v) {
  b.push_back(v & 0xff);
  b.push_back(v >> 8);
}

// A RIFF/WAVE file with one fmt chunk (and an odd-sized chunk before data, padded).
std::vector<unsigned char> wav(int format, int channels, int rate, int bits, const std::vector<unsigned char>& data) {
  std::vector<unsigned char> b;
  b.insert(b.end(), {'R', 'I', 'F', 'F'});
  put32(b, 0);
  b.insert(b.end(), {'W', 'A', 'V', 'E', 'f', 'm', 't', ' '});
  put32(b, 16);
  put16(b, uint16_t(format));
  put16(b, uint16_t(channels));
  put32(b, uint32_t(rate));
  put32(b, uint32_t(rate * channels * bits / 8));
  put16(b, uint16_t(channels * bits / 8));
  put16(b, uint16_t(bits));
  b.insert(b.end(), {'L', 'I', 'S', 'T'});
  put32(b, 3);
  b.insert(b.end(), {'a', 'b', 'c', 0});
  b.insert(b.end(), {'d', 'a', 't', 'a'});
  put32(b, uint32_t(data.size()));
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

std::string error_of(const std::vector<unsigned char>& b) {
  try {
    io::parse_wav(b, "x.wav");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("wav: PCM 16 and float 32 mono at 16 kHz") {
  std::vector<unsigned char> pcm;
  for (int16_t v : {int16_t(0), int16_t(16384), int16_t(-32768), int16_t(32767)}) put16(pcm, uint16_t(v));
  const io::WavAudio a = io::parse_wav(wav(1, 1, 16000, 16, pcm), "x.wav");
  REQUIRE(a.samples == std::vector<float>{0.0f, 0.5f, -1.0f, 32767.0f / 32768.0f});
  std::vector<unsigned char> f32;
  for (float v : {0.25f, -0.75f}) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    put32(f32, u);
  }
  REQUIRE(io::parse_wav(wav(3, 1, 16000, 32, f32), "x.wav").samples == std::vector<float>{0.25f, -0.75f});
}

TEST_CASE("wav: other formats are refused with the reason") {
  const std::vector<unsigned char> two(4, 0);
  REQUIRE(error_of({'n', 'o', 'p', 'e'}) == "x.wav: not a WAV file (no RIFF/WAVE header)");
  REQUIRE(error_of(wav(1, 2, 16000, 16, two)).find("2 channels; Whisper takes mono audio") != std::string::npos);
  REQUIRE(error_of(wav(1, 1, 44100, 16, two)).find("sample rate 44100 Hz; Whisper takes 16000 Hz") != std::string::npos);
  REQUIRE(error_of(wav(1, 1, 16000, 8, two)).find("PCM 8-bit samples; supported") != std::string::npos);
  REQUIRE(error_of(wav(6, 1, 16000, 8, two)).find("format 6 8-bit samples") != std::string::npos);
  std::vector<unsigned char> cut = wav(1, 1, 16000, 16, std::vector<unsigned char>(100, 0));
  cut.resize(cut.size() - 10);
  REQUIRE(error_of(cut).find("the data chunk is truncated (90 of 100 bytes)") != std::string::npos);
  std::vector<unsigned char> no_data = wav(1, 1, 16000, 16, two);
  std::memcpy(no_data.data() + no_data.size() - 12, "junk", 4);
  REQUIRE(error_of(no_data) == "x.wav: no data chunk");
}
