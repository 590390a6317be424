#include "cli/whisper_segments.h"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace cli {

namespace {
constexpr double kStep = 0.02;  // seconds per timestamp token (transformers' time_precision)

// The segment of tokens [from, to) of `gen`, ending at the timestamp at `end_at`.
WhisperSegment make(const std::vector<int64_t>& gen, size_t from, size_t to, size_t end_at, int64_t begin) {
  WhisperSegment s;
  s.tokens.assign(gen.begin() + std::ptrdiff_t(from), gen.begin() + std::ptrdiff_t(to));
  s.start = double(gen[from] - begin) * kStep;
  s.end = double(gen[end_at] - begin) * kStep;
  return s;
}

std::string clock(double seconds, char decimal) {
  const int64_t ms = std::llround(seconds * 1000.0);
  return fmt::format("{:02}:{:02}:{:02}{}{:03}", ms / 3600000, ms / 60000 % 60, ms / 1000 % 60, decimal, ms % 1000);
}
}  // namespace

std::vector<WhisperSegment> whisper_segments(const std::vector<int64_t>& row, int64_t eos, int64_t timestamp_begin,
                                             int64_t window_positions) {
  size_t first = 0;
  while (first < row.size() && row[first] < timestamp_begin) ++first;
  std::vector<int64_t> gen;
  for (size_t i = first; i < row.size() && row[i] != eos; ++i) gen.push_back(row[i]);
  if (gen.empty()) return {};
  auto stamp = [&](size_t i) { return gen[i] >= timestamp_begin; };
  const size_t n = gen.size();
  const bool single_ending = n >= 2 && !stamp(n - 2) && stamp(n - 1);
  std::vector<size_t> slices;  // after each pair
  for (size_t i = 0; i + 1 < n; ++i)
    if (stamp(i) && stamp(i + 1)) slices.push_back(i + 1);
  std::vector<WhisperSegment> out;
  if (slices.empty()) {  // one segment: to its last timestamp, or the window's end
    WhisperSegment s;
    s.tokens = gen;
    s.end = double(window_positions) * kStep;
    for (size_t i = n; i-- > 0;)
      if (stamp(i)) {
        if (gen[i] != timestamp_begin) s.end = double(gen[i] - timestamp_begin) * kStep;
        break;
      }
    out.push_back(std::move(s));
    return out;
  }
  if (single_ending)
    slices.push_back(n);
  else
    slices.back() += 1;  // the last pair's second timestamp stays in the last segment
  size_t last = 0;
  for (size_t k = 0; k < slices.size(); ++k) {
    const bool is_last = k + 1 == slices.size();
    const size_t end_at = !is_last || single_ending ? slices[k] - 1 : slices[k] - 2;
    out.push_back(make(gen, last, slices[k], end_at, timestamp_begin));
    last = slices[k];
  }
  return out;
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
  if (format == "vtt") out += "WEBVTT\n\n";
  for (size_t i = 0; i < segments.size(); ++i) {
    const WhisperSegment& s = segments[i];
    if (format == "text")
      out += fmt::format("[{} --> {}] {}\n", clock(s.start, '.'), clock(s.end, '.'), s.text);
    else if (format == "srt")
      out += fmt::format("{}\n{} --> {}\n{}\n\n", i + 1, clock(s.start, ','), clock(s.end, ','), s.text);
    else if (format == "vtt")
      out += fmt::format("{} --> {}\n{}\n\n", clock(s.start, '.'), clock(s.end, '.'), s.text);
    else
      vm::fail("--format {}: it is text, srt, vtt or json", format);
  }
  return out;
}

}  // namespace cli
