// tensorvm._C.build_inputs: tensorvm-run's input builder (cli/main.h, cli/run_io.h) for `tensorvm run`,
// replay, profile, diff, bundle and inspect --memory (pycompiler/cli_io.py), so both command
// lines read --ids, --decoder-ids, --wav, --arg and --inputs with one code.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>

#include "cli/main.h"
#include "cli/text_verbs.h"
#include "convert.h"
#include "vm/program.h"

namespace py = pybind11;
using namespace tvm_py;

namespace {

// A numpy array as a file's array would hold it (safetensors' dtype names, plus F64 for
// a 0-d float, which build_inputs reads as a scalar).
io::ArrayData array_data(const std::string& name, const py::handle& obj) {
  const py::array a = py::array::ensure(obj, py::array::c_style);
  if (!a) throw vm::Error(fmt::format("array '{}': not an array", name));
  const py::dtype dt = a.dtype();
  const char kind = dt.kind();
  const size_t size = size_t(dt.itemsize());
  io::ArrayData d;
  d.name = name;
  d.dtype = kind == 'f' && size == 4   ? "F32"
            : kind == 'f' && size == 8 ? "F64"
            : kind == 'i' && size == 8 ? "I64"
            : kind == 'i' && size == 4 ? "I32"
            : kind == 'i' && size == 1 ? "I8"
            : kind == 'b'              ? "BOOL"
                                       : "";
  if (d.dtype.empty()) throw vm::Error(fmt::format("array '{}': dtype {} is not one a program takes", name,
                                                   std::string(py::str(dt))));
  for (py::ssize_t i = 0; i < a.ndim(); ++i) d.shape.push_back(int64_t(a.shape(i)));
  d.data.resize(size_t(a.nbytes()));
  if (!d.data.empty()) std::memcpy(d.data.data(), a.data(), d.data.size());
  return d;
}

// The text verbs' view of `program` (cli/main.h), run in its own session.
cli::ProgramRunner runner_of(const std::shared_ptr<vm::Program>& program, const std::string& dir, int threads,
                             uint64_t max_instructions) {
  vm::SessionOptions options;
  options.num_threads = threads;
  options.max_instructions = max_instructions;
  return cli::text_runner(std::make_shared<const cli::ProgramSource::Loaded>(cli::interpreted(dir, program)), dir,
                          options);
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
}
