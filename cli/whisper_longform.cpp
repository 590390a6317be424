#include "cli/whisper_longform.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#ifdef TENSORVM_HAVE_ZLIB
#include <zlib.h>
#endif

#include "core/error.h"

namespace cli {

namespace {

constexpr int64_t kInputStride = 2;  // conv1 stride x conv2 stride: frames per encoder position

// What the loop reads from meta.json (the importer writes it).
struct WhisperMeta {
  int64_t timestamp_begin = 0, eos = 0, pad = 0, window = 0, max_target = 0, vocab = 0, start = 0;
  std::optional<int64_t> prev_sot, max_new_tokens;
  bool prev_sot_configured = false;  // the generation config's, not suppress_tokens' second last
  int64_t max_length = 20, num_beams = 1;
};

WhisperMeta read_meta(const ProgramRunner& program) {
  const auto j = nlohmann::json::parse(program.meta_json, nullptr, false);
  auto field = [&](const char* name) { return whisper_meta_int(program.meta_json, name, "transcribe (long-form)"); };
  WhisperMeta m;
  m.timestamp_begin = field("no_timestamps_token_id") + 1;
  m.eos = field("eos_token_id");
  m.pad = field("pad_token_id");
  m.window = kInputStride * field("max_source_positions");
  m.max_target = field("max_position_embeddings");
  m.vocab = field("vocab_size");
  m.start = field("decoder_start_token_id");
  if (j.contains("prev_sot_token_id") && j["prev_sot_token_id"].is_number_integer()) {
    m.prev_sot = j["prev_sot_token_id"];
    m.prev_sot_configured = true;
  }
  const auto& g = j.contains("generation") ? j["generation"] : nlohmann::json();
  if (g.is_object()) {
    if (g.contains("max_new_tokens") && g["max_new_tokens"].is_number_integer()) m.max_new_tokens = g["max_new_tokens"];
    if (g.contains("max_length") && g["max_length"].is_number_integer()) m.max_length = g["max_length"];
    if (g.contains("num_beams") && g["num_beams"].is_number_integer()) m.num_beams = g["num_beams"];
    // transformers' fallback when the generation config has no prev_sot_token_id: the
    // second last suppressed token (<|startofprev|> in the released lists)
    if (!m.prev_sot && g.contains("suppress_tokens") && g["suppress_tokens"].is_array() &&
        g["suppress_tokens"].size() >= 2) {
      const auto& t = g["suppress_tokens"][g["suppress_tokens"].size() - 2];
      if (t.is_number_integer()) m.prev_sot = t.get<int64_t>();
    }
  }
  return m;
}

std::vector<double> parse_numbers(const std::string& name, const std::string& value) {
  std::string text = value;
  std::replace(text.begin(), text.end(), ',', ' ');
  std::istringstream in(text);
  std::vector<double> out;
  std::string word;
  while (in >> word) {
    try {
      size_t used = 0;
      out.push_back(std::stod(word, &used));
      if (used != word.size()) throw std::invalid_argument(word);
    } catch (const std::exception&) {
      vm::fail("--arg {}={}: {} is not a number", name, value, word);
    }
  }
  return out;
}

double parse_number(const std::string& name, const std::string& value) {
  const std::vector<double> v = parse_numbers(name, value);
  if (v.size() != 1) vm::fail("--arg {}={}: give one number", name, value);
  return v[0];
}

vm::Tensor ids_row(const std::vector<int64_t>& ids) {
  vm::Tensor t = vm::Tensor::empty(vm::DType::i64, {1, int64_t(ids.size())});
  std::copy(ids.begin(), ids.end(), t.data<int64_t>());
  return t;
}

// Frames [seek, seek + frames) of features [1, mels, total], zero-padded to `window`
// (transformers pads the window's features with zeros, not with the features of silence).
vm::Tensor window_of(const vm::Tensor& features, int64_t seek, int64_t frames, int64_t window) {
  const int64_t mels = features.size(1), total = features.size(2);
  vm::Tensor w = vm::Tensor::empty(vm::DType::f32, {1, mels, window});
  float* out = w.data<float>();
  const float* in = features.data<float>();
  std::fill(out, out + mels * window, 0.0f);
  for (int64_t m = 0; m < mels; ++m) std::copy(in + m * total + seek, in + m * total + seek + frames, out + m * window);
  return w;
}

// transformers' _retrieve_avg_logprobs: the scores (the processed scores of each step,
// [steps, 1, vocab]) rescaled by the temperature, log_softmax, the chosen tokens' sum over
// the token count (the end token included).
double avg_logprob(const vm::Tensor& scores, std::vector<int64_t> tokens, double rescale) {
  const int64_t steps = scores.size(0), vocab = scores.size(2);
  int64_t used = steps;
  if (steps > int64_t(tokens.size()))
    used = int64_t(tokens.size());
  else
    tokens.erase(tokens.begin(), tokens.end() - steps);
  if (tokens.empty()) return std::nan("");
  double sum = 0;
  for (int64_t s = 0; s < used; ++s) {
    const float* row = scores.data<float>() + s * scores.size(1) * vocab;
    double top = -INFINITY;
    for (int64_t v = 0; v < vocab; ++v) top = std::max(top, double(row[v]) * rescale);
    double z = 0;
    for (int64_t v = 0; v < vocab; ++v) z += std::exp(double(row[v]) * rescale - top);
    sum += double(row[tokens[size_t(s)]]) * rescale - top - std::log(z);
  }
  return sum / double(tokens.size());
}

// The decoder prompt of a window (transformers' _prepare_decoder_input_ids).
std::vector<int64_t> window_prompt(const WhisperMeta& m, const std::vector<int64_t>& init,
                                   const std::vector<WhisperSegment>& previous, bool condition,
                                   const LongFormOptions& o) {
  if (condition && !previous.empty()) {
    std::vector<int64_t> prev;
    for (const WhisperSegment& s : previous) {
      const auto& t = s.tokens;
      // a segment ending in two timestamps gives only the first of them
      const bool double_ending = t.size() > 2 && t[t.size() - 2] >= m.timestamp_begin;
      prev.insert(prev.end(), t.begin(), double_ending ? t.end() - 1 : t.end());
    }
    const size_t cut_off = size_t(m.max_target / 2 - 1);
    if (prev.size() > cut_off) prev.erase(prev.begin(), prev.end() - std::ptrdiff_t(cut_off));
    std::vector<int64_t> prompt;
    if (!o.prompt_ids.empty() && o.all_segments)
      prompt = o.prompt_ids;
    else if (m.prev_sot)
      prompt.push_back(*m.prev_sot);
    prompt.insert(prompt.end(), prev.begin(), prev.end());
    prompt.insert(prompt.end(), init.begin(), init.end());
    return prompt;
  }
  std::vector<int64_t> prompt = o.prompt_ids;
  prompt.insert(prompt.end(), init.begin(), init.end());
  return prompt;
}

void check_options(const LongFormOptions& o, int64_t num_beams) {
  if (o.no_speech_threshold && !o.logprob_threshold)
    vm::fail("transcribe: no_speech_threshold needs logprob_threshold (a window is skipped when both say so, as in "
             "transformers)");
  if (o.logprob_threshold && num_beams > 1)
    vm::fail("transcribe: logprob_threshold with num_beams > 1 is not supported (transformers averages the scores "
             "of each step's beam along beam_indices, which generate does not return); use num_beams=1");
  for (double t : o.temperatures)
    if (!(t >= 0.0) || !std::isfinite(t)) vm::fail("transcribe: temperature {} must be finite and >= 0", t);
  if (o.all_segments && !o.condition_on_prev_tokens)
    vm::fail("transcribe: prompt_condition_type=all-segments needs condition_on_prev_tokens=True (as transformers)");
  if (o.all_segments && o.prompt_ids.empty()) vm::fail("transcribe: prompt_condition_type=all-segments needs prompt_ids");
}

}  // namespace

bool LongFormOptions::parse(const std::string& name, const std::string& value) {
  auto flag = [&] {
    if (value == "1" || value == "true" || value == "True") return true;
    if (value == "0" || value == "false" || value == "False") return false;
    vm::fail("--arg {}={}: give true or false", name, value);
  };
  auto integer = [&] {
    const double v = parse_number(name, value);
    if (v != std::floor(v) || std::abs(v) > 9e15) vm::fail("--arg {}={}: give an integer", name, value);
    return int64_t(v);
  };
  if (name == "temperature") {
    temperatures = parse_numbers(name, value);
  } else if (name == "condition_on_prev_tokens") {
    condition_on_prev_tokens = flag();
  } else if (name == "compression_ratio_threshold") {
    compression_ratio_threshold = parse_number(name, value);
  } else if (name == "logprob_threshold") {
    logprob_threshold = parse_number(name, value);
  } else if (name == "no_speech_threshold") {
    no_speech_threshold = parse_number(name, value);
  } else if (name == "prompt_ids") {
    prompt_ids.clear();
    for (double v : parse_numbers(name, value)) prompt_ids.push_back(int64_t(v));
  } else if (name == "prompt_condition_type") {
    if (value != "first-segment" && value != "all-segments")
      vm::fail("--arg prompt_condition_type={}: it is first-segment or all-segments", value);
    all_segments = value == "all-segments";
  } else if (name == "seed") {
    seed = integer();
  } else if (name == "long_form") {
    long_form = flag();
  } else if (name == "max_length") {
    max_length = integer();
  } else {
    return false;
  }
  return true;
}

double compression_ratio(const std::vector<int64_t>& tokens, int64_t vocab_size) {
#ifdef TENSORVM_HAVE_ZLIB
  const int width = int(std::log2(double(vocab_size)) / 8) + 1;
  std::vector<unsigned char> bytes;
  for (int64_t t : tokens)
    for (int b = 0; b < width; ++b) bytes.push_back(static_cast<unsigned char>((uint64_t(t) >> (8 * b)) & 0xff));
  uLongf size = compressBound(uLong(bytes.size()));
  std::vector<unsigned char> packed(size);
  if (compress2(packed.data(), &size, bytes.data(), uLong(bytes.size()), 6) != Z_OK)
    vm::fail("transcribe: compression_ratio_threshold: zlib failed");
  return double(bytes.size()) / double(size);
#else
  (void)tokens;
  (void)vocab_size;
  vm::fail("transcribe: compression_ratio_threshold needs zlib, and this build of tensorvm has none");
#endif
}

bool is_long_audio(const ProgramRunner& program, int64_t samples) {
  const auto j = nlohmann::json::parse(program.meta_json, nullptr, false);
  if (!j.is_object() || !j.contains("max_source_positions") || !j["max_source_positions"].is_number_integer())
    return false;
  return samples / 160 > kInputStride * j["max_source_positions"].get<int64_t>();
}

std::vector<WhisperSegment> transcribe_long(const ProgramRunner& program, vm::Tensor audio_in,
                                            const std::string& language, const std::string& task,
                                            const std::vector<int64_t>& decoder_input_ids,
                                            const LongFormOptions& o,
                                            const std::function<void(const LongFormWindow&)>& on_window) {
  const WhisperMeta m = read_meta(program);
  for (const char* fn : {"log_mel_long", "generate"})
    if (!program.functions.count(fn))
      vm::fail("transcribe: {} has no {} function (imported before long-form transcription existed): import the "
               "checkpoint again",
               program.dir, fn);
  if (audio_in.dtype() != vm::DType::f32 || audio_in.ndim() < 1 || audio_in.ndim() > 2 ||
      (audio_in.ndim() == 2 && audio_in.size(0) != 1))
    vm::fail("transcribe (long-form): audio must be f32 [samples] or [1, samples], got {}", audio_in.describe());
  const int64_t samples = audio_in.numel();
  // The features of the whole recording when it is longer than a window (transformers'
  // long-form input: WhisperFeatureExtractor(truncation=False, padding="longest")); else
  // of the audio padded or cut to the window (the extractor's default, short-form input).
  vm::Tensor features;
  if (is_long_audio(program, samples) && audio_in.is_contiguous()) {  // as it is: no copy of hours of samples
    const vm::Tensor audio = audio_in.ndim() == 2 ? audio_in : audio_in.reshape({1, samples});
    features = program.run_named("log_mel_long", {{"audio", audio}}, vm::EmitCallback()).at(0).as_tensor().contiguous();
  } else {
    const int64_t n = is_long_audio(program, samples) ? samples : m.window * 160;
    vm::Tensor audio = vm::Tensor::empty(vm::DType::f32, {1, n});
    const vm::Tensor src = audio_in.contiguous();
    std::fill(audio.data<float>(), audio.data<float>() + n, 0.0f);
    std::copy(src.data<float>(), src.data<float>() + std::min(n, samples), audio.data<float>());
    features = program.run_named("log_mel_long", {{"audio", audio}}, vm::EmitCallback()).at(0).as_tensor().contiguous();
  }
  audio_in = vm::Tensor();  // 80 floats per 160 samples from here on: half the samples' bytes
  const int64_t max_frames = features.size(2);
  const auto decode = segment_decoder(program.dir);

  // the first tokens of every window's prompt (transformers' init_tokens)
  std::vector<int64_t> init = decoder_input_ids;
  if (init.empty()) {
    const vm::Value audio_rows = vm::Tensor::empty(vm::DType::f32, {1, 1});
    const vm::Value p = transcribe_prompt(program, audio_rows, {language}, task,
                                          window_of(features, 0, std::min(m.window, max_frames), m.window));
    if (p.is_none()) {
      init = {m.start};
    } else {
      const vm::Tensor t = p.as_tensor().contiguous();
      init.assign(t.data<int64_t>(), t.data<int64_t>() + t.numel());
    }
  }
  if (init.size() > 1 && init.back() == m.timestamp_begin - 1) init.pop_back();  // <|notimestamps|>

  int64_t num_beams = o.num_beams.value_or(m.num_beams);
  check_options(o, num_beams);
  const std::optional<int64_t> max_new_tokens = o.max_new_tokens ? o.max_new_tokens : m.max_new_tokens;
  int64_t max_length = o.max_length.value_or(m.max_length);
  std::vector<std::optional<double>> temperatures;
  for (double t : o.temperatures) temperatures.push_back(t);
  if (temperatures.empty()) temperatures.push_back(std::nullopt);

  std::vector<WhisperSegment> segments;  // with prompt_ids (first-segment): the prompt's first
  if (!o.prompt_ids.empty() && !o.all_segments) {
    WhisperSegment p;
    p.tokens = o.prompt_ids;
    // transformers' _prepare_segments drops the configured <|startofprev|> only
    if (m.prev_sot_configured && p.tokens.front() == *m.prev_sot) p.tokens.erase(p.tokens.begin());
    segments.push_back(std::move(p));
  }
  const size_t first_real = segments.size();
  bool condition = o.condition_on_prev_tokens;
  int64_t attempt_number = 0;
  for (int64_t seek = 0; seek < max_frames;) {
    LongFormWindow w;
    w.seek = seek;
    w.frames = std::min(max_frames - seek, m.window);
    const double time_offset = double(seek) * 0.02 / double(kInputStride);
    const vm::Tensor input = window_of(features, seek, w.frames, m.window);
    w.prompt = window_prompt(m, init, segments, condition, o);
    const int64_t p = int64_t(w.prompt.size());
    if (max_new_tokens.value_or(0) + p > m.max_target)
      vm::fail("transcribe: the prompt of the window at {:.2f} s ({} tokens: start tokens, prompt and previous tokens) "
               "and max_new_tokens {} exceed the decoder's {} positions (max_target_positions); give a smaller "
               "max_new_tokens",
               time_offset, p, max_new_tokens.value_or(0), m.max_target);
    if (!max_new_tokens) max_length = std::min(max_length + std::min(m.max_target / 2 - 1, p), m.max_target);
    if (o.no_speech_threshold) {
      // transformers' WhisperNoSpeechDetection: the probability of the token before
      // <|notimestamps|> in the logits at <|startoftranscript|> (the prompt's position p - init)
      const std::vector<int64_t> head(w.prompt.begin(), w.prompt.end() - std::ptrdiff_t(init.size()) + 1);
      const std::vector<vm::Value> out = program.run_named(
          "generate",
          {{"input_features", input}, {"decoder_input_ids", ids_row(head)}, {"max_new_tokens", vm::Value::from_int(1)},
           {"num_beams", vm::Value::from_int(1)}, {"do_sample", vm::Value::from_bool(false)},
           {"output_logits", vm::Value::from_bool(true)}},
          vm::EmitCallback());
      const vm::Tensor logits = out.at(3).as_tensor().contiguous();
      const float* l = logits.data<float>();
      const int64_t vocab = logits.size(2);
      double top = -INFINITY, z = 0;
      for (int64_t v = 0; v < vocab; ++v) top = std::max(top, double(l[v]));
      for (int64_t v = 0; v < vocab; ++v) z += std::exp(double(l[v]) - top);
      w.no_speech_prob = std::exp(double(l[m.timestamp_begin - 2]) - top) / z;
    }
    std::vector<int64_t> kept;
    bool skip = false;
    for (size_t k = 0; k < temperatures.size(); ++k) {
      LongFormAttempt a;
      a.temperature = temperatures[k];
      a.sampled = a.temperature && *a.temperature > 0.0;
      if (a.sampled) num_beams = 1;  // transformers sets generation_config.num_beams = 1 for good
      std::vector<std::pair<std::string, vm::Value>> named = {
          {"input_features", input},
          {"decoder_input_ids", ids_row(w.prompt)},
          {"num_beams", vm::Value::from_int(num_beams)},
          {"do_sample", vm::Value::from_bool(a.sampled)},
          {"temperature", vm::Value::from_float(a.sampled ? *a.temperature : 1.0)},
          {"return_timestamps", vm::Value::from_bool(true)},
          {"output_scores", vm::Value::from_bool(bool(o.logprob_threshold))},
          {"seed", vm::Value::from_int(o.seed + attempt_number++)}};
      if (max_new_tokens)
        named.emplace_back("max_new_tokens", vm::Value::from_int(*max_new_tokens));
      else
        named.emplace_back("max_length", vm::Value::from_int(max_length));
      const std::vector<vm::Value> out = program.run_named("generate", named, vm::EmitCallback());
      const vm::Tensor seq = out.at(0).as_tensor().contiguous();
      a.tokens.assign(seq.data<int64_t>() + std::min(p, seq.numel()), seq.data<int64_t>() + seq.numel());
      // drop the padding, keeping the end token when the pad token is the end token
      if (!a.tokens.empty() && a.tokens.back() == m.pad) {
        int64_t pads = std::count(a.tokens.begin(), a.tokens.end(), m.pad);
        if (m.pad == m.eos) pads -= 1;
        a.tokens.resize(a.tokens.size() - size_t(pads));
      }
      if (o.compression_ratio_threshold) {
        a.compression_ratio = compression_ratio(a.tokens, m.vocab);
        a.needs_fallback = *a.compression_ratio > *o.compression_ratio_threshold;
      }
      bool low_logprob = false;
      if (o.logprob_threshold) {
        // transformers: temperature if temperature > 0 else 1 (None fails there; 1 here)
        const double rescale = a.sampled ? *a.temperature : 1.0;
        a.avg_logprob = avg_logprob(out.at(2).as_tensor().contiguous(), a.tokens, rescale);
        low_logprob = *a.avg_logprob < *o.logprob_threshold;
        a.needs_fallback = a.needs_fallback || low_logprob;
      }
      skip = false;
      if (o.no_speech_threshold && low_logprob && *w.no_speech_prob > *o.no_speech_threshold) {
        a.needs_fallback = false;
        skip = true;
      }
      kept = a.tokens;
      if (!kept.empty() && kept.back() == m.eos) kept.pop_back();
      condition = o.condition_on_prev_tokens && (!a.temperature || *a.temperature < 0.5);
      const bool again = a.needs_fallback;
      w.attempts.push_back(std::move(a));
      if (!again) break;
    }
    if (skip) {
      w.skipped = true;
      seek += w.frames;
    } else {
      WindowCut cut = window_segments(kept, m.timestamp_begin, w.frames, time_offset);
      for (WhisperSegment& s : cut.segments) s.text = decode(s.tokens);
      w.segments = cut.segments;
      segments.insert(segments.end(), cut.segments.begin(), cut.segments.end());
      seek += cut.offset;
    }
    w.next_seek = seek;
    if (on_window) on_window(w);
  }
  segments.erase(segments.begin(), segments.begin() + std::ptrdiff_t(first_real));
  return segments;
}

std::optional<vm::Value> run_long_transcribe(const ProgramRunner& program, const TextOptions& text,
                                             RunRequest& request, const Print& print) {
  if (!program.functions.count("transcribe")) return std::nullopt;
  const bool stamps = text.timestamps;
  LongFormOptions o;
  bool given = false;
  for (auto it = request.args.begin(); it != request.args.end();) {
    if (o.parse(it->first, it->second)) {
      given = true;
      it = request.args.erase(it);
    } else {
      ++it;
    }
  }
  const ProgramRunner::Params& fn = program.functions.at("transcribe");
  check_text_options(program, text, "transcribe", request.decoder_ids_text);
  RunRequest consumed = request;  // build_inputs takes the --arg it reads; a plain run reads them again
  std::vector<vm::Value> inputs = build_inputs("transcribe", fn.names, fn.types, program.meta_json, consumed);
  auto input = [&](const char* name) {
    const auto it = std::find(fn.names.begin(), fn.names.end(), name);
    return it == fn.names.end() ? vm::Value::none() : inputs[size_t(it - fn.names.begin())];
  };
  vm::Value audio = input("audio");
  if (!audio.is_tensor() || audio.as_tensor().ndim() != 2)
    vm::fail("transcribe: audio must be f32 [batch, samples], got {}", audio.describe());
  if (o.long_form == false || (!given && !(stamps && is_long_audio(program, audio.as_tensor().size(1)))))
    return std::nullopt;
  if (audio.as_tensor().size(0) != 1)
    vm::fail("transcribe (long-form): one clip at a time, got {} rows of audio", audio.as_tensor().size(0));
  if (!input("max_new_tokens").is_none()) o.max_new_tokens = input("max_new_tokens").as_int();
  if (!input("num_beams").is_none()) o.num_beams = input("num_beams").as_int();
  std::vector<int64_t> ids;
  if (const vm::Value d = input("decoder_input_ids"); !d.is_none()) {
    const vm::Tensor t = d.as_tensor().contiguous();
    if (t.dtype() != vm::DType::i64 || t.ndim() != 2 || t.size(0) != 1)
      vm::fail("transcribe (long-form): decoder_input_ids must be i64 [1, n], got {}", t.describe());
    ids.assign(t.data<int64_t>(), t.data<int64_t>() + t.numel());
  }
  // with --timestamps, each window's segments as it finishes (json: one object at the end);
  // without, the transcript of all segments as one line, as transcribe prints a clip
  const std::string format = !stamps ? "" : text.format.empty() ? "text" : text.format;
  size_t printed = 0;
  if (stamps && format != "json") print(segments_header(format));
  vm::Tensor samples = audio.as_tensor();
  audio = vm::Value::none();
  inputs.clear();  // the loop holds the samples only until their features exist
  const std::vector<WhisperSegment> all = transcribe_long(
      program, std::move(samples), text.language, text.task, ids, o, [&](const LongFormWindow& w) {
        if (!stamps || format == "json" || w.segments.empty()) return;
        print(format_segment_lines(w.segments, format, printed + 1));
        printed += w.segments.size();
      });
  if (format == "json") print(format_segments(all, "json"));
  std::vector<int64_t> tokens;
  for (const WhisperSegment& s : all) tokens.insert(tokens.end(), s.tokens.begin(), s.tokens.end());
  if (!stamps) print(segment_decoder(program.dir)(tokens) + "\n");
  return vm::Value(ids_row(tokens));
}

}  // namespace cli
