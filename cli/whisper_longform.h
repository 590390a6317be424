// Whisper's long-form transcription: audio longer than one window (30 s for the released
// checkpoints) decoded in sequential windows, as transformers'
// WhisperForConditionalGeneration.generate does it (generation_whisper.py, transformers 5):
// the features of the whole recording are computed once (the program's log_mel_long), a
// window of 2 x max_source_positions frames is cut at `seek` (zero-padded at the end), the
// program's generate decodes it with the timestamp rule, the tokens are cut into segments
// (window_segments, transformers' _retrieve_segment) and the window moves by the last
// complete segment, or by the whole window when the last segment is complete or there are
// no timestamp pairs; with condition_on_prev_tokens the next prompt starts with
// <|startofprev|> and the previous segments' last tokens; temperature fallback reruns a
// window when the compression ratio or the average log-probability passes its threshold, and
// no_speech_threshold skips a window of silence.
//
// The loop runs in the host, once, here: tensorvm-run, `tensorvm run` and
// Program.transcribe (through the binding _C.transcribe_long) all call transcribe_long.
// Why not inside the program: docs/whisper.md "Long-form audio".
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli/run_io.h"
#include "cli/text_verbs.h"
#include "cli/whisper_segments.h"
#include "core/value.h"

namespace cli {

// The options of long-form generate, with transformers' names. Unset: the checkpoint's
// generation defaults (max_new_tokens, max_length, num_beams) or transformers' (the rest).
struct LongFormOptions {
  std::optional<int64_t> max_new_tokens, max_length, num_beams;
  // transformers' temperature: unset is None (one pass, greedy or beams); a list is the
  // fallback schedule, e.g. 0.0, 0.2, 0.4, 0.6, 0.8, 1.0 (0: greedy / beams, > 0: sampling).
  std::vector<double> temperatures;
  bool condition_on_prev_tokens = false;
  std::optional<double> compression_ratio_threshold, logprob_threshold, no_speech_threshold;
  // prompt_ids as WhisperTokenizer.get_prompt_ids gives them (<|startofprev|> then text).
  std::vector<int64_t> prompt_ids;
  bool all_segments = false;  // prompt_condition_type "all-segments" (else "first-segment")
  int64_t seed = 0;  // sampling: attempt k of the call draws with seed + k
  // long_form=1: the window loop whatever the audio's length and --timestamps; 0: never (the
  // transcribe function, the audio cut to one window). Unset: the loop for audio longer than
  // a window with --timestamps, or when another option here is given.
  std::optional<bool> long_form;
  // Takes --arg NAME=VALUE when NAME is one of the options above (temperature and
  // prompt_ids: numbers separated by commas or spaces); false otherwise.
  bool parse(const std::string& name, const std::string& value);
};

// One decoding of a window (transformers' generate_with_fallback tries temperatures in turn).
struct LongFormAttempt {
  std::optional<double> temperature;  // None: transformers' temperature=None
  bool sampled = false;
  std::vector<int64_t> tokens;  // generated, the end token kept (what the thresholds see)
  std::optional<double> compression_ratio, avg_logprob;
  bool needs_fallback = false;
};

struct LongFormWindow {
  int64_t seek = 0, frames = 0;  // the window's first frame and its frames of audio (<= window)
  std::vector<int64_t> prompt;  // decoder_input_ids
  std::vector<LongFormAttempt> attempts;
  std::optional<double> no_speech_prob;
  bool skipped = false;  // no_speech_threshold: no segments, seek moves by the window
  std::vector<WhisperSegment> segments;  // absolute times, texts decoded
  int64_t next_seek = 0;
};

// The clip's frames when its features are computed whole (samples / hop), and whether
// they exceed one window (transformers' is_shortform is false): the long-form path.
bool is_long_audio(const ProgramRunner& program, int64_t samples);

// Long-form transcription of one clip: `audio` f32 [samples] or [1, samples] at 16 kHz,
// released once its features are computed (move it in to free the samples during the loop).
// The prompt: `decoder_input_ids` when given (a final <|notimestamps|> dropped), else
// built from `language` / `task` as transcribe_prompt builds it, the language detected
// (detect_language) on the first window's features when none is given. Returns every
// segment; `on_window` (may be empty) gets each window as it finishes, its segments
// with their texts: streaming.
std::vector<WhisperSegment> transcribe_long(const ProgramRunner& program, vm::Tensor audio,
                                            const std::string& language, const std::string& task,
                                            const std::vector<int64_t>& decoder_input_ids,
                                            const LongFormOptions& options,
                                            const std::function<void(const LongFormWindow&)>& on_window);

// transformers' _retrieve_compression_ratio: bytes of the tokens (each in
// int(log2(vocab_size) / 8) + 1 little-endian bytes) over the bytes zlib compresses them
// to (level 6, as Python's zlib.compress). Fails when this build has no zlib.
double compression_ratio(const std::vector<int64_t>& tokens, int64_t vocab_size);

// tensorvm-run / tensorvm run `transcribe --audio F [--timestamps]` in windows: with
// --timestamps when the audio is longer than a window, or when --arg gives a long-form option
// (LongFormOptions::parse, taken out of request.args; long_form=0 never). With --timestamps,
// prints each window's segments as it finishes (text, srt, vtt; json: one object at the end);
// without, the transcript of all segments as one line. Returns the tokens of all segments,
// [1, n] (what --outputs saves). Nothing (nullopt), and nothing printed, otherwise: transcribe
// runs as a function, the audio cut to one window, as before.
std::optional<vm::Value> run_long_transcribe(const ProgramRunner& program, const TextOptions& text,
                                             RunRequest& request, const Print& print);

}  // namespace cli
