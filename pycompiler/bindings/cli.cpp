// tensorvm._C.build_inputs: tensorvm-run's input builder (cli/main.h, cli/run_io.h) for `tensorvm run`,
// replay, profile, diff, bundle and inspect --memory (pycompiler/cli_io.py), so both command
// lines read --ids, --decoder-ids, --wav, --arg and --inputs with one code; and its text
// verbs (cli/text_verbs.h: run_text_verb, print_as_text) for `tensorvm run|replay`
// (pycompiler/cli_text.py), printing through a Python callable so that sys.stdout (and a
// test's capture of it) sees what tensorvm-run prints.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <optional>

#include "cli/main.h"
#include "cli/text_verbs.h"
#include "cli/whisper_longform.h"
#include "cli/whisper_segments.h"
#include "io/audio_file.h"
#include "convert.h"
#include "vm/program.h"

namespace py = pybind11;
using namespace tvm_py;

namespace {

// A numpy array as a file's array would hold it (safetensors' dtype names of the tensor
// dtypes, plus F64 for a 0-d float, which build_inputs reads as a scalar).
io::ArrayData array_data(const std::string& name, const py::handle& obj) {
  const py::array a = py::array::ensure(obj, py::array::c_style);
  if (!a) throw vm::Error(fmt::format("array '{}': not an array", name));
  const py::dtype dt = a.dtype();
  io::ArrayData d;
  d.name = name;
  try {
    d.dtype = dt.kind() == 'f' && dt.itemsize() == 8 ? "F64" : cli::safetensors_dtype(dtype_from_numpy(dt));
  } catch (const vm::Error& e) {
    throw vm::Error(fmt::format("array '{}': {}", name, e.what()));
  }
  for (py::ssize_t i = 0; i < a.ndim(); ++i) d.shape.push_back(int64_t(a.shape(i)));
  d.data.resize(size_t(a.nbytes()));
  if (!d.data.empty()) std::memcpy(d.data.data(), a.data(), d.data.size());
  return d;
}

// A Python object kept by C++ code that runs without the GIL: copied as a shared_ptr (no
// reference count touched), let go with the GIL held.
using PyRef = std::shared_ptr<py::object>;
PyRef keep(const py::object& obj) {
  return PyRef(new py::object(obj), [](py::object* o) {
    py::gil_scoped_acquire gil;
    delete o;
  });
}

// `replay(function, *inputs)` (Program.replay: the reference ops) as a session's run.
cli::ProgramSource::Run replayed(const PyRef& replay) {
  return [replay](const std::string& function, std::vector<vm::Value> inputs, vm::EmitCallback) {
    py::gil_scoped_acquire gil;
    py::list args;
    args.append(function);
    for (const vm::Value& v : inputs) args.append(from_value(v));
    const py::object result = (*replay)(*args);
    std::vector<vm::Value> outs;
    if (py::isinstance<py::tuple>(result)) {
      for (const py::handle item : result) outs.push_back(to_value(item));
    } else if (!result.is_none()) {
      outs.push_back(to_value(result));
    }
    return outs;
  };
}

// The text verbs' view of `program` (cli/main.h), run in its own session, or by `replay`
// when that is not None.
cli::ProgramRunner runner_of(const std::shared_ptr<vm::Program>& program, const std::string& dir, int threads,
                             uint64_t max_instructions, const py::object& replay = py::none()) {
  vm::SessionOptions options;
  options.num_threads = threads;
  options.max_instructions = max_instructions;
  cli::ProgramSource::Loaded loaded = cli::interpreted(dir, program);
  if (!replay.is_none())
    loaded.open = [r = keep(replay)](const vm::SessionOptions&, vm::Hook*) { return replayed(r); };
  return cli::text_runner(std::make_shared<const cli::ProgramSource::Loaded>(std::move(loaded)), dir, options);
}

// The verbs' Print as a call of `write` with the text (UTF-8; a stray byte kept as a
// surrogate, as Python decodes a command line). `write` outlives the call it serves.
// Ctrl-C stops the verb here, between lines, as it stopped the Python loop it replaces.
cli::Print python_print(const py::object& write) {
  return [&write](std::string_view s) {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    PyObject* text = PyUnicode_DecodeUTF8(s.data(), py::ssize_t(s.size()), "surrogateescape");
    if (!text) throw py::error_already_set();
    write(py::reinterpret_steal<py::str>(text));
  };
}

}  // namespace

void bind_cli(py::module_& m) {
  m.def(
      "build_inputs",
      [](const std::shared_ptr<vm::Program>& program, const std::string& dir, const std::string& function,
         const std::string& inputs, const std::string& ids, const std::vector<std::vector<int64_t>>& id_rows,
         const std::string& decoder_ids, const std::string& wav, const std::map<std::string, std::string>& args,
         const py::dict& arrays, const std::string& outputs, const std::string& language, const std::string& task,
         int threads, uint64_t max_instructions) {
        cli::RunRequest r;
        r.inputs_path = inputs;
        r.outputs_path = outputs;
        r.ids_text = ids;
        r.ids = id_rows;
        r.decoder_ids_text = decoder_ids;
        r.wav_path = wav;
        r.args = args;
        for (auto item : arrays) r.arrays.push_back(array_data(item.first.cast<std::string>(), item.second));
        cli::TextOptions text;
        text.language = language;
        text.task = task;
        // (its session runs the language detection --language leaves to the program)
        const cli::ProgramRunner runner = runner_of(program, dir, threads, max_instructions);
        if (!runner.functions.count(function)) program->function(function);  // fails naming the functions
        std::vector<vm::Value> values;
        {
          py::gil_scoped_release nogil;
          values = cli::function_inputs(runner, text, function, r);
        }
        py::list out;
        for (const vm::Value& v : values) out.append(from_value(v));
        return out;
      },
      py::arg("program"), py::arg("dir"), py::arg("function"), py::arg("inputs") = "", py::arg("ids") = "",
      py::arg("id_rows") = std::vector<std::vector<int64_t>>{}, py::arg("decoder_ids") = "", py::arg("wav") = "",
      py::arg("args") = std::map<std::string, std::string>{}, py::arg("arrays") = py::dict(), py::arg("outputs") = "",
      py::arg("language") = "", py::arg("task") = "", py::arg("threads") = 1, py::arg("max_instructions") = 0,
      "The inputs of `function` in parameter order, built by tensorvm-run's code (cli/main.h function_inputs) "
      "from --inputs, --ids (or id_rows), --decoder-ids, --wav, --arg NAME=VALUE (args), arrays by name, and "
      "--language / --task (Whisper's prompt); an empty string is an option not given.");
  m.def(
      "transcribe_prompt",
      [](const std::shared_ptr<vm::Program>& program, const std::string& dir, const py::handle& audio,
         const std::vector<std::string>& languages, const std::string& task, int threads, uint64_t max_instructions) {
        const cli::ProgramRunner runner = runner_of(program, dir, threads, max_instructions);
        const vm::Value a = to_value(audio);
        vm::Value prompt;
        {
          py::gil_scoped_release nogil;
          prompt = cli::transcribe_prompt(runner, a, languages, task);
        }
        return from_value(prompt);
      },
      py::arg("program"), py::arg("dir"), py::arg("audio"), py::arg("languages"), py::arg("task") = "",
      py::arg("threads") = 1, py::arg("max_instructions") = 0,
      "Whisper's decoder prompt [rows of audio, n] as tensorvm-run --language / --task builds it "
      "(cli/text_verbs.h transcribe_prompt): languages one for all rows or one per row (\"\": detected); None "
      "when nothing is given and the program has no language table.");
  m.def(
      "run_text_verb",
      [](const std::shared_ptr<vm::Program>& program, const std::string& dir, const std::string& verb,
         const py::object& write, const std::optional<std::string>& text, const std::optional<std::string>& text_file,
         const std::string& src_lang, const std::string& tgt_lang, const std::string& language,
         const std::string& task, const std::map<std::string, std::string>& args, bool others,
         const py::object& replay, int threads, uint64_t max_instructions) {
        cli::TextOptions o;  // as tensorvm-run's command line gives them
        if (text) o.parse("--text", [&] { return *text; });
        if (text_file) o.parse("--text-file", [&] { return *text_file; });  // both: "give one"
        o.src_lang = src_lang;
        o.tgt_lang = tgt_lang;
        o.language = language;
        o.task = task;
        const cli::ProgramRunner runner = runner_of(program, dir, threads, max_instructions, replay);
        py::gil_scoped_release nogil;
        return cli::run_text_verb(runner, verb, o, args, others, python_print(write));
      },
      py::arg("program"), py::arg("dir"), py::arg("verb"), py::arg("write"), py::arg("text") = py::none(),
      py::arg("text_file") = py::none(), py::arg("src_lang") = "", py::arg("tgt_lang") = "", py::arg("language") = "",
      py::arg("task") = "", py::arg("args") = std::map<std::string, std::string>{}, py::arg("others") = false,
      py::arg("replay") = py::none(), py::arg("threads") = 1, py::arg("max_instructions") = 0,
      "tensorvm-run's text verb `verb` (tokenize, translate, complete: cli/text_verbs.h run_text_verb), its "
      "output lines passed to write(str) as they come. text / text_file (bytes): --text, --text-file; args: --arg "
      "NAME=VALUE; others: an option given that does not go with text; replay: a callable(function, *inputs) "
      "that runs generate in place of the VM (Program.replay). Returns the exit status, 0.");
  m.def(
      "print_as_text",
      [](const std::string& dir, const py::handle& sequences, const py::object& write) {
        return cli::print_as_text(dir, to_value(sequences), python_print(write));
      },
      py::arg("dir"), py::arg("sequences"), py::arg("write"),
      "transcribe's sequences [rows, n] passed to write(str) as lines of text, as tensorvm-run prints them "
      "(cli/text_verbs.h print_as_text); False, nothing written, when the program has no tokenizer or this build "
      "no text library.");
  m.def(
      "whisper_segments",
      [](const std::vector<int64_t>& row, int64_t eos, int64_t timestamp_begin, int64_t window_positions) {
        py::list out;
        for (const cli::WhisperSegment& s : cli::whisper_segments(row, eos, timestamp_begin, window_positions))
          out.append(py::make_tuple(s.start, s.end, s.tokens));
        return out;
      },
      py::arg("row"), py::arg("eos"), py::arg("timestamp_begin"), py::arg("window_positions"),
      "One transcribe row's segments as (start s, end s, token ids), cut as transformers' Whisper generate cuts "
      "one window (cli/whisper_segments.h, tensorvm-run transcribe --timestamps).");
  m.def(
      "print_segments",
      [](const std::shared_ptr<vm::Program>& program, const std::string& dir, const py::handle& sequences,
         const std::string& format, const py::object& write) {
        if (!format.empty() && !cli::is_segment_format(format))
          throw vm::Error(fmt::format("--format {}: it is text, srt, vtt or json", format));
        const cli::ProgramRunner runner = runner_of(program, dir, 1, 0);
        cli::print_segments(runner, to_value(sequences), format, python_print(write));
      },
      py::arg("program"), py::arg("dir"), py::arg("sequences"), py::arg("format"), py::arg("write"),
      "transcribe --timestamps' sequences written as segments in `format` (text, srt, vtt, json), as tensorvm-run "
      "prints them (cli/text_verbs.h print_segments).");
  m.def(
      "transcribe_long",
      [](const std::shared_ptr<vm::Program>& program, const std::string& dir, const py::handle& audio,
         const std::string& language, const std::string& task, const std::vector<int64_t>& decoder_input_ids,
         const std::map<std::string, std::string>& options, std::optional<int64_t> max_new_tokens,
         std::optional<int64_t> num_beams, const py::object& on_window, int threads, uint64_t max_instructions) {
        cli::LongFormOptions o;
        for (const auto& [name, value] : options)
          if (!o.parse(name, value)) throw vm::Error(fmt::format("transcribe: unknown long-form option {}", name));
        o.max_new_tokens = max_new_tokens;
        o.num_beams = num_beams;
        const cli::ProgramRunner runner = runner_of(program, dir, threads, max_instructions);
        const vm::Value a = to_value(audio);
        if (!a.is_tensor()) throw vm::Error("transcribe: audio must be an f32 array");
        auto segment = [](const cli::WhisperSegment& s) {
          py::dict d;
          d["start"] = s.start, d["end"] = s.end, d["text"] = s.text, d["tokens"] = s.tokens;
          return d;
        };
        std::function<void(const cli::LongFormWindow&)> report;
        if (!on_window.is_none())
          report = [&](const cli::LongFormWindow& w) {
            py::gil_scoped_acquire gil;
            py::list attempts, segments;
            for (const cli::LongFormAttempt& t : w.attempts) {
              py::dict d;
              d["temperature"] = t.temperature ? py::cast(*t.temperature) : py::none();
              d["sampled"] = t.sampled, d["tokens"] = t.tokens, d["needs_fallback"] = t.needs_fallback;
              d["compression_ratio"] = t.compression_ratio ? py::cast(*t.compression_ratio) : py::none();
              d["avg_logprob"] = t.avg_logprob ? py::cast(*t.avg_logprob) : py::none();
              attempts.append(d);
            }
            for (const cli::WhisperSegment& s : w.segments) segments.append(segment(s));
            py::dict d;
            d["seek"] = w.seek, d["frames"] = w.frames, d["prompt"] = w.prompt, d["attempts"] = attempts;
            d["no_speech_prob"] = w.no_speech_prob ? py::cast(*w.no_speech_prob) : py::none();
            d["skipped"] = w.skipped, d["segments"] = segments, d["next_seek"] = w.next_seek;
            on_window(d);
          };
        std::vector<cli::WhisperSegment> all;
        {
          py::gil_scoped_release nogil;
          all = cli::transcribe_long(runner, a.as_tensor(), language, task, decoder_input_ids, o, report);
        }
        py::list out;
        for (const cli::WhisperSegment& s : all) out.append(segment(s));
        return out;
      },
      py::arg("program"), py::arg("dir"), py::arg("audio"), py::arg("language") = "", py::arg("task") = "",
      py::arg("decoder_input_ids") = std::vector<int64_t>{}, py::arg("options") = std::map<std::string, std::string>{},
      py::arg("max_new_tokens") = py::none(), py::arg("num_beams") = py::none(), py::arg("on_window") = py::none(),
      py::arg("threads") = 1, py::arg("max_instructions") = 0,
      "Whisper's long-form transcription of one clip (cli/whisper_longform.h transcribe_long): segments as dicts "
      "{start, end, text, tokens}; options: the long-form options as --arg gives them (NAME: text); on_window(dict) "
      "gets each window as it finishes (seek, frames, prompt, attempts, no_speech_prob, skipped, segments, "
      "next_seek).");
  m.def(
      "run_long_transcribe",
      [](const std::shared_ptr<vm::Program>& program, const std::string& dir, const std::string& wav,
         const std::string& inputs, const std::string& decoder_ids, const std::map<std::string, std::string>& args,
         const std::string& language,
         const std::string& task, bool timestamps, const std::string& format, const py::object& write, int threads,
         uint64_t max_instructions) -> py::object {
        cli::RunRequest r;
        r.wav_path = wav;
        r.inputs_path = inputs;
        r.decoder_ids_text = decoder_ids;
        r.args = args;
        cli::TextOptions text;
        text.language = language;
        text.task = task;
        text.timestamps = timestamps;
        text.format = format;
        const cli::ProgramRunner runner = runner_of(program, dir, threads, max_instructions);
        std::optional<vm::Value> tokens;
        {
          py::gil_scoped_release nogil;
          tokens = cli::run_long_transcribe(runner, text, r, python_print(write));
        }
        return tokens ? from_value(*tokens) : py::none();
      },
      py::arg("program"), py::arg("dir"), py::arg("wav"), py::arg("inputs") = "", py::arg("decoder_ids") = "",
      py::arg("args") = std::map<std::string, std::string>{}, py::arg("language") = "", py::arg("task") = "",
      py::arg("timestamps") = true, py::arg("format") = "", py::arg("write") = py::none(), py::arg("threads") = 1,
      py::arg("max_instructions") = 0,
      "tensorvm-run's transcribe [--timestamps] on long audio (cli/whisper_longform.h run_long_transcribe): the "
      "segments written as they come; the tokens [1, n], or None when the audio fits one window and no long-form "
      "option is given (then transcribe runs as a function).");
  m.attr("has_audio") = io::has_audio_library();
  m.def(
      "read_audio",
      [](const std::string& path, int rate) {
        io::WavAudio a;
        {
          py::gil_scoped_release nogil;
          a = io::read_audio(path, rate);
        }
        py::array_t<float> out(py::ssize_t(a.samples.size()));
        std::copy(a.samples.begin(), a.samples.end(), out.mutable_data());
        return out;
      },
      py::arg("path"), py::arg("sampling_rate") = 16000,
      "An audio file's samples, mono f32 at sampling_rate, as tensorvm-run --audio reads it (io/audio_file.h: "
      "libsndfile and libsoxr HQ when this build has them, _C.has_audio; else 16 kHz mono WAV only).");
}
