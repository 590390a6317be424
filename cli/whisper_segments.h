// Whisper's timestamped output as segments: the one parser of tensorvm-run's
// `transcribe --timestamps` and Program.transcribe(return_timestamps=True) (bound as
// _C.whisper_segments), and the printed forms of the command line (--format).
//
// The segments are those transformers' WhisperForConditionalGeneration.generate
// (_retrieve_segment) cuts from one 30-s window: a segment runs from a timestamp to the
// next pair of timestamps. When the window's tokens end in a single timestamp (or the
// end token right after a pair's second half), every pair is a segment; otherwise the
// tokens after the last pair are an unfinished segment, dropped (long-form decoding
// decodes the audio from there again: window_segments' offset). Without any pair the whole
// output is one segment, up to its last timestamp or the window's end.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cli {

struct WhisperSegment {
  double start = 0, end = 0;  // seconds, as transformers computes them (positions x 0.02, float64)
  std::vector<int64_t> tokens;  // the segment's tokens, its timestamps included
  std::string text;  // filled by the caller (the tokenizer's decode with skip_special_tokens)
};

// Segments of one generated row. `row`: the prompt, then the generated tokens (and
// padding): the generated part starts at the first timestamp token (the timestamp rule
// makes the first generated token one) and stops before the first end token.
// `timestamp_begin`: <|0.00|>'s id (no_timestamps_token_id + 1); `window_positions`:
// the window's length in timestamp steps of 0.02 s (max_source_positions: 1500 for 30 s).
std::vector<WhisperSegment> whisper_segments(const std::vector<int64_t>& row, int64_t eos, int64_t timestamp_begin,
                                             int64_t window_positions);

// transformers' _retrieve_segment on one window's generated tokens `gen` (from the first,
// a timestamp, to before the end token): the segments, their times from `time_offset`
// seconds, and how many frames the window moves: the last complete segment's end (its
// timestamp x 2 frames) when the tokens end in an unfinished segment, else `seek_num_frames`
// (the window's frames of audio). Long-form decoding (cli/whisper_longform.h) seeks by it.
struct WindowCut {
  std::vector<WhisperSegment> segments;
  int64_t offset = 0;
};
WindowCut window_segments(const std::vector<int64_t>& gen, int64_t timestamp_begin, int64_t seek_num_frames,
                          double time_offset);

// An integer field of a Whisper program's meta.json (`meta_json`: its text), or a failure
// naming `who` (the command) and the field: the program is no Whisper program with
// timestamps, or was imported before the field existed.
int64_t whisper_meta_int(const std::string& meta_json, const char* name, const char* who);

// "text": "[00:00:00.120 --> 00:00:14.980] text" lines; "srt" and "vtt" subtitles;
// "json": {"segments": [{"start", "end", "text", "tokens"}]}. One call per row (a
// JSON object per line for "json"). Fails on another format.
std::string format_segments(const std::vector<WhisperSegment>& segments, const std::string& format);
// Streaming: the lines of `segments` in "text", "srt" (numbered from `first_number`) or
// "vtt" without the WebVTT header; format_segments is the header, then these.
std::string format_segment_lines(const std::vector<WhisperSegment>& segments, const std::string& format,
                                 size_t first_number);
// The header of a subtitle format: "WEBVTT\n\n" for vtt, else nothing.
std::string segments_header(const std::string& format);
// Whether `format` is one format_segments prints.
bool is_segment_format(const std::string& format);

}  // namespace cli
