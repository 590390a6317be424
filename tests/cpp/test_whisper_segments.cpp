// cli/whisper_segments.h: the segments of one window as transformers cuts them (the Python
// test compares 3,000 rows with _retrieve_segment) and their printed forms; and
// io/audio_file.h's refusals of bytes that are not audio.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include "cli/whisper_longform.h"
#include "cli/whisper_segments.h"
#include "io/audio_file.h"

namespace {
constexpr int64_t kEos = 40, kBegin = 50;  // <|endoftext|>, <|0.00|>
}

TEST_CASE("whisper segments: pairs, a single ending, none", "[whisper_segments]") {
  // prompt, <|0.00|> a b <|0.04|><|0.06|> c <|0.10|>, end, padding
  auto segs = cli::whisper_segments({45, 46, 50, 1, 2, 52, 53, 3, 55, kEos, kEos}, kEos, kBegin, 64);
  REQUIRE(segs.size() == 2);
  CHECK(segs[0].start == 0.0);
  CHECK(segs[0].end == 2 * 0.02);
  CHECK(segs[0].tokens == std::vector<int64_t>{50, 1, 2, 52});
  CHECK(segs[1].tokens == std::vector<int64_t>{53, 3, 55});
  CHECK(segs[1].end == 5 * 0.02);
  // an unfinished segment after the last pair is dropped; the pair's second half stays
  segs = cli::whisper_segments({50, 1, 52, 53, 2, 3}, kEos, kBegin, 64);
  REQUIRE(segs.size() == 1);
  CHECK(segs[0].tokens == std::vector<int64_t>{50, 1, 52, 53});
  CHECK(segs[0].end == 2 * 0.02);
  // no pair: one segment to the last timestamp, or to the window's end
  segs = cli::whisper_segments({50, 1, 2}, kEos, kBegin, 64);
  REQUIRE(segs.size() == 1);
  CHECK(segs[0].end == 64 * 0.02);
  CHECK(cli::whisper_segments({45, 46, kEos}, kEos, kBegin, 64).empty());
}

TEST_CASE("whisper segments: text, srt, vtt and json", "[whisper_segments]") {
  std::vector<cli::WhisperSegment> segs(2);
  segs[0] = {0.12, 3.5, {62, 7, 225}, " Hello"};
  segs[1] = {3725.0, 3726.04, {1, 2}, " \"two\""};
  CHECK(cli::format_segments(segs, "text") ==
        "[00:00:00.120 --> 00:00:03.500]  Hello\n[01:02:05.000 --> 01:02:06.040]  \"two\"\n");
  CHECK(cli::format_segments(segs, "srt") ==
        "1\n00:00:00,120 --> 00:00:03,500\n Hello\n\n2\n01:02:05,000 --> 01:02:06,040\n \"two\"\n\n");
  CHECK(cli::format_segments(segs, "vtt").rfind("WEBVTT\n\n00:00:00.120 --> 00:00:03.500\n Hello\n\n", 0) == 0);
  CHECK(cli::format_segments(segs, "json") ==
        "{\"segments\":[{\"end\":3.5,\"start\":0.12,\"text\":\" Hello\",\"tokens\":[62,7,225]},"
        "{\"end\":3726.04,\"start\":3725.0,\"text\":\" \\\"two\\\"\",\"tokens\":[1,2]}]}\n");
  CHECK_THROWS_AS(cli::format_segments(segs, "docx"), std::runtime_error);
  CHECK(cli::is_segment_format("srt"));
  CHECK_FALSE(cli::is_segment_format("docx"));
}

TEST_CASE("audio: bytes that are not audio fail naming the file", "[audio]") {
  for (const std::string& bytes : {std::string(), std::string("not audio at all, not even close"),
                                   std::string("RIFF\x10\0\0\0WAVEfmt ", 16), std::string("fLaC\0\0\0\x22", 8)}) {
    try {
      io::decode_audio(bytes, "clip.bin");
      FAIL("decoded");
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()).rfind("clip.bin: ", 0) == 0);
    }
  }
}

TEST_CASE("whisper long-form: a window's cut, its seek and times", "[whisper_segments]") {
  // <|0.00|> a <|0.04|><|0.06|> b <|0.10|><|0.10|> c: unfinished, seek to <|0.10|> (frame 10)
  cli::WindowCut cut = cli::window_segments({50, 1, 52, 53, 2, 55, 55, 3}, kBegin, 128, 30.0);
  REQUIRE(cut.segments.size() == 2);
  CHECK(cut.segments[0].start == 30.0);
  CHECK(cut.segments[1].start == 30.0 + 3 * 0.02);
  CHECK(cut.segments[1].end == 30.0 + 5 * 0.02);
  CHECK(cut.segments[1].tokens == std::vector<int64_t>{53, 2, 55, 55});
  CHECK(cut.offset == 10);
  // a single timestamp at the end: the whole window (its frames of audio)
  cut = cli::window_segments({50, 1, 52, 53, 2, 55}, kBegin, 101, 0.0);
  CHECK(cut.offset == 101);
  // no pair: one segment to the window's end, int(frames * 0.01 / 0.02) positions (float32)
  cut = cli::window_segments({50, 1, 2}, kBegin, 101, 2.0);
  REQUIRE(cut.segments.size() == 1);
  CHECK(cut.segments[0].end == 2.0 + 50 * 0.02);
  CHECK(cut.offset == 101);
  // nothing generated: one empty segment, as transformers keeps it
  cut = cli::window_segments({}, kBegin, 64, 0.0);
  CHECK(cut.segments.size() == 1);
  CHECK(cut.offset == 64);
}

TEST_CASE("whisper long-form: compression ratio and options", "[whisper_segments]") {
#ifdef TENSORVM_HAVE_ZLIB
  std::vector<int64_t> tokens;
  for (int i = 0; i < 5; ++i)
    for (int64_t t : {808, 82, 817, 605, 828, 80, 844, 844}) tokens.push_back(t);
  // Python: len(b) / len(zlib.compress(b)) with 2 bytes a token (vocabulary 2309)
  CHECK(cli::compression_ratio(tokens, 2309) == 80.0 / 27.0);
#endif
  cli::LongFormOptions o;
  CHECK(o.parse("temperature", "0, 0.2,0.4"));
  CHECK(o.temperatures == std::vector<double>{0.0, 0.2, 0.4});
  CHECK(o.parse("condition_on_prev_tokens", "true"));
  CHECK(o.condition_on_prev_tokens);
  CHECK(o.parse("prompt_ids", "7 8 9"));
  CHECK(o.prompt_ids == std::vector<int64_t>{7, 8, 9});
  CHECK_FALSE(o.parse("num_beams", "2"));  // transcribe's own input
  CHECK_THROWS_WITH(o.parse("logprob_threshold", "low"), Catch::Contains("low is not a number"));
  CHECK_THROWS_WITH(o.parse("prompt_condition_type", "every"), Catch::Contains("first-segment or all-segments"));
}
