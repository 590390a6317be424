#include "cli/whisper_segments.h"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace cli {

namespace {
constexpr double kStep = 0.02;  // seconds per timestamp token (transformers' time_precision)

std::string clock(double seconds, char decimal) {
  const int64_t ms = std::llround(seconds * 1000.0);
  return fmt::format("{:02}:{:02}:{:02}{}{:03}", ms / 3600000, ms / 60000 % 60, ms / 1000 % 60, decimal, ms % 1000);
}
}  // namespace

WindowCut window_segments(const std::vector<int64_t>& gen, int64_t begin, int64_t seek_num_frames,
                          double time_offset) {
  auto stamp = [&](size_t i) { return gen[i] >= begin; };
  // positions x 0.02 s from the window's start, in float64 as transformers computes them
  auto at = [&](int64_t position) { return time_offset + double(position) * kStep; };
  const size_t n = gen.size();
  const bool single_ending = n >= 2 && !stamp(n - 2) && stamp(n - 1);
  std::vector<size_t> slices;  // after each pair
  for (size_t i = 0; i + 1 < n; ++i)
    if (stamp(i) && stamp(i + 1)) slices.push_back(i + 1);
  WindowCut cut;
  if (slices.empty()) {  // one segment: to its last timestamp, or the window's end
    WhisperSegment s;
    s.tokens = gen;
    s.start = time_offset;
    // int(seek_num_frames * 0.01 / 0.02): a float32 tensor in transformers
    int64_t end = int64_t(float(float(seek_num_frames) * 0.01f) / 0.02f);
    for (size_t i = n; i-- > 0;)
      if (stamp(i)) {
        if (gen[i] != begin) end = gen[i] - begin;
        break;
      }
    s.end = at(end);
    cut.segments.push_back(std::move(s));
    cut.offset = seek_num_frames;
    return cut;
  }
  if (single_ending)
    slices.push_back(n);
  else
    slices.back() += 1;  // the last pair's second timestamp stays in the last segment
  size_t last = 0;
  for (size_t k = 0; k < slices.size(); ++k) {
    const bool is_last = k + 1 == slices.size();
    const size_t end_at = !is_last || single_ending ? slices[k] - 1 : slices[k] - 2;
    WhisperSegment s;
    s.tokens.assign(gen.begin() + std::ptrdiff_t(last), gen.begin() + std::ptrdiff_t(slices[k]));
    s.start = at(gen[last] - begin);
    s.end = at(gen[end_at] - begin);
    cut.segments.push_back(std::move(s));
    last = slices[k];
  }
  // a single timestamp at the end: no speech after it, the window is done; otherwise the
  // unfinished segment after the last pair is dropped and decoded again from its start
  cut.offset = single_ending ? seek_num_frames : (gen[last - 2] - begin) * 2;
  return cut;
}

std::vector<WhisperSegment> whisper_segments(const std::vector<int64_t>& row, int64_t eos, int64_t timestamp_begin,
                                             int64_t window_positions) {
  size_t first = 0;
  while (first < row.size() && row[first] < timestamp_begin) ++first;
  std::vector<int64_t> gen;
  for (size_t i = first; i < row.size() && row[i] != eos; ++i) gen.push_back(row[i]);
  if (gen.empty()) return {};
  return window_segments(gen, timestamp_begin, 2 * window_positions, 0.0).segments;
}

int64_t whisper_meta_int(const std::string& meta_json, const char* name, const char* who) {
  const auto meta = nlohmann::json::parse(meta_json, nullptr, false);
  if (!meta.is_object() || !meta.contains(name) || !meta[name].is_number_integer())
    vm::fail("{}: the program's meta.json has no {} (not a Whisper program with timestamps; import it again)", who,
             name);
  return meta[name].get<int64_t>();
}

bool is_segment_format(const std::string& format) {
  return format == "text" || format == "srt" || format == "vtt" || format == "json";
}

std::string format_segments(const std::vector<WhisperSegment>& segments, const std::string& format) {
  std::string out;
  if (format == "json") {
    nlohmann::json list = nlohmann::json::array();
    for (const WhisperSegment& s : segments)
      list.push_back({{"start", s.start}, {"end", s.end}, {"text", s.text}, {"tokens", s.tokens}});
    return nlohmann::json{{"segments", list}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  return segments_header(format) + format_segment_lines(segments, format, 1);
}

std::string segments_header(const std::string& format) { return format == "vtt" ? "WEBVTT\n\n" : ""; }

std::string format_segment_lines(const std::vector<WhisperSegment>& segments, const std::string& format,
                                 size_t first_number) {
  std::string out;
  for (size_t i = 0; i < segments.size(); ++i) {
    const WhisperSegment& s = segments[i];
    if (format == "text")
      out += fmt::format("[{} --> {}] {}\n", clock(s.start, '.'), clock(s.end, '.'), s.text);
    else if (format == "srt")
      out += fmt::format("{}\n{} --> {}\n{}\n\n", first_number + i, clock(s.start, ','), clock(s.end, ','), s.text);
    else if (format == "vtt")
      out += fmt::format("{} --> {}\n{}\n\n", clock(s.start, '.'), clock(s.end, '.'), s.text);
    else
      vm::fail("--format {}: it is text, srt, vtt or json", format);
  }
  return out;
}

}  // namespace cli
