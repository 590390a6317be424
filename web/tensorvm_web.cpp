// The C API of web/tensorvm_web.h: a thin layer over vm::Program::from_memory, a Session
// and cli::build_inputs (the inputs tensorvm-run builds from --ids and --arg), and for text
// over the command line's own text verbs (cli/text_verbs.h: tokenizer, generate, decode), so
// a page gets exactly the command line's behaviour. Every entry point catches everything: a JavaScript
// caller gets an error string, never an abort.
#include "web/tensorvm_web.h"

#include <fmt/format.h>

#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/main.h"
#include "cli/run_io.h"
#include "cli/text_verbs.h"
#include "io/npz.h"
#include "ops/cpu.h"
#include "vm/vm.h"

#ifdef TENSORVM_HAVE_TEXT
#include "text/tokenizer.h"
#endif

#ifdef __EMSCRIPTEN__
#include <emscripten/emscripten.h>
#define TVM_EXPORT EMSCRIPTEN_KEEPALIVE
#else
#define TVM_EXPORT
#endif

struct tvm_program {
  std::shared_ptr<const vm::Program> program;
  std::string dir;  // tvm_load_dir's: where meta.json and the tokenizer's files are; "" from bytes
#ifdef TENSORVM_HAVE_TEXT
  std::shared_ptr<const text::Tokenizer> tokenizer;  // the streamed text's decoder, read at first use
#endif
};

namespace {

thread_local std::string g_error;
thread_local std::string g_result;

// "a=1;b=two" -> {a: "1", b: "two"}; blanks around pairs are ignored.
std::map<std::string, std::string> parse_args(const std::string& text) {
  std::map<std::string, std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(';', start);
    if (end == std::string::npos) end = text.size();
    std::string pair = text.substr(start, end - start);
    const size_t b = pair.find_first_not_of(" \t\n"), e = pair.find_last_not_of(" \t\n");
    pair = b == std::string::npos ? std::string() : pair.substr(b, e - b + 1);
    if (!pair.empty()) {
      const size_t eq = pair.find('=');
      if (eq == std::string::npos || eq == 0) vm::fail("args: '{}' is not NAME=VALUE", pair);
      out[pair.substr(0, eq)] = pair.substr(eq + 1);
    }
    start = end + 1;
  }
  return out;
}

std::string ids_text(const vm::Value& v) {
  if (!v.is_tensor()) vm::fail("generate: the first output is {}, not a tensor of token ids", v.describe());
  const vm::Tensor& t = v.as_tensor();
  if (t.dtype() != vm::DType::i64 || t.ndim() != 2)
    vm::fail("generate: the first output is {}, not i64 token ids [rows, length]", t.describe());
  const vm::Tensor c = t.contiguous();
  const int64_t* p = c.data<int64_t>();
  std::string out;
  for (int64_t r = 0; r < t.shape()[0]; ++r) {
    if (r) out += "; ";
    for (int64_t j = 0; j < t.shape()[1]; ++j) out += fmt::format("{}{}", j ? " " : "", p[r * t.shape()[1] + j]);
  }
  return out;
}

template <typename F>
auto guarded(F&& f, decltype(f()) on_error) -> decltype(f()) {
  try {
    g_error.clear();
    return f();
  } catch (const std::exception& e) {
    g_error = e.what();
  } catch (...) {
    g_error = "unknown error";
  }
  return on_error;
}

// The text calls need the program's directory (meta.json, the tokenizer's files).
void check_text_program(const tvm_program* program, const std::string& who) {
  if (!program) vm::fail("{}: no program", who);
  if (program->dir.empty())
    vm::fail("{}: the program was loaded from bytes (tvm_load); load its directory with tvm_load_dir for text", who);
}

// Moves the options a text call takes by name out of `arg_map` into their fields; what is
// left goes to the function as --arg values.
void take_args(std::map<std::string, std::string>& arg_map,
               std::initializer_list<std::pair<const char*, std::string*>> fields) {
  for (auto [key, field] : fields) {
    if (const auto it = arg_map.find(key); it != arg_map.end()) {
      *field = it->second;
      arg_map.erase(it);
    }
  }
}

vm::SessionOptions session_with(int threads) {
  vm::SessionOptions options;
  options.num_threads = threads < 1 ? 1 : threads;
  return options;
}

// The loaded program as the command line's text verbs take it (cli::interpreted).
std::shared_ptr<const cli::ProgramSource::Loaded> interpreted(const tvm_program* program) {
  return std::make_shared<const cli::ProgramSource::Loaded>(cli::interpreted(program->dir, program->program));
}

// What a text call returns and streams: `result` collects the printed lines; emit() decodes
// the first sequence after every generation step for the callback, print() takes the lines.
struct TextStream {
  TextStream(tvm_program* program, tvm_text_fn on_text, void* user) : on_text(on_text), user(user) {
#ifdef TENSORVM_HAVE_TEXT
    if (on_text && !program->tokenizer) program->tokenizer = text::load_tokenizer(program->dir);
    tokenizer = program->tokenizer.get();
#else
    (void)program;
#endif
  }
  // Gives the callback `now`, the whole output so far, and what it added to what was shown.
  bool show(const std::string& now) {
    if (!on_text || now == shown) return true;
    const bool appended = now.compare(0, shown.size(), shown) == 0;
    const std::string piece = appended ? now.substr(shown.size()) : std::string();
    shown = now;
    return on_text(user, piece.c_str(), shown.c_str()) != 0;
  }
  vm::EmitCallback emit() {
    first.clear();  // the first sequence's ids so far (the stream has new ids only)
    return vm::token_stream([this](const std::vector<std::vector<int64_t>>& rows) {
      if (rows.empty() || rows[0].empty()) return true;
      first.insert(first.end(), rows[0].begin(), rows[0].end());
#ifdef TENSORVM_HAVE_TEXT
      if (tokenizer) return show(result + tokenizer->decode(first, true));
#endif
      return true;
    });
  }
  cli::Print print() {
    return [this](std::string_view lines) {
      result += lines;
      show(result);  // the lines as decoded whole: the callback ends where the result does
    };
  }
  tvm_text_fn on_text;
  void* user;
  std::string result, shown;
  std::vector<int64_t> first;
#ifdef TENSORVM_HAVE_TEXT
  const text::Tokenizer* tokenizer = nullptr;
#endif
};

// The text verb `verb` (translate, complete) on `text`, as tensorvm-run runs it: the same
// ProgramRunner (cli::text_runner over cli::interpreted), options and printing; the
// callback sees the first sequence's text decoded after every step.
const char* run_text(tvm_program* program, const std::string& verb, const char* text, const char* args, int threads,
                     tvm_text_fn on_text, void* user) {
  const std::string who = "tvm_" + verb;
  check_text_program(program, who);
  if (!text || !*text) vm::fail("{}: no text", who);
  std::map<std::string, std::string> arg_map = parse_args(args ? args : "");
  cli::TextOptions options;
  options.parse("--text", [&] { return std::string(text); });  // the command line's split into lines
  take_args(arg_map, {{"src_lang", &options.src_lang}, {"tgt_lang", &options.tgt_lang}});
  const vm::SessionOptions session_options = session_with(threads);
  auto loaded = interpreted(program);
  cli::ProgramRunner runner = cli::text_runner(loaded, program->dir, session_options);
  TextStream stream(program, on_text, user);
  if (on_text) {
    runner.run_named = [&, inner = runner.run_named](const std::string& name,
                                                     const std::vector<std::pair<std::string, vm::Value>>& named,
                                                     vm::EmitCallback emit) {
      return inner(name, named, name == "generate" ? stream.emit() : std::move(emit));
    };
  }
  cli::run_text_verb(runner, verb, options, arg_map, false, stream.print());
  g_result = std::move(stream.result);
  return g_result.c_str();
}

// Whisper's transcribe on `samples` as tensorvm-run runs it on a --wav of one window:
// cli::function_inputs (the prompt from language / task), the function, print_as_text.
const char* run_transcribe(tvm_program* program, const float* samples, size_t n, const char* args, int threads,
                           tvm_text_fn on_text, void* user) {
  check_text_program(program, "tvm_transcribe");
  if (!samples || n == 0) vm::fail("tvm_transcribe: no samples");
  cli::RunRequest request;
  request.args = parse_args(args ? args : "");
  cli::TextOptions options;
  take_args(request.args, {{"language", &options.language}, {"task", &options.task}});
  io::ArrayData audio{"audio", "F32", {1, int64_t(n)}, {}};
  audio.data.resize(n * sizeof(float));
  std::memcpy(audio.data.data(), samples, audio.data.size());
  request.arrays.push_back(std::move(audio));
  const vm::SessionOptions session_options = session_with(threads);
  auto loaded = interpreted(program);
  const cli::ProgramRunner runner = cli::text_runner(loaded, program->dir, session_options);
  if (!runner.functions.count("transcribe"))
    vm::fail("tvm_transcribe: {} has no transcribe function (not a Whisper program)", program->dir);
  std::vector<vm::Value> inputs = cli::function_inputs(runner, options, "transcribe", request);
  TextStream stream(program, on_text, user);
  const std::vector<vm::Value> outs =
      loaded->open(session_options, nullptr)("transcribe", std::move(inputs), on_text ? stream.emit() : vm::EmitCallback());
  if (outs.empty() || !cli::print_as_text(program->dir, outs[0], stream.print()))
    vm::fail("tvm_transcribe: {} carries no tokenizer (or this build has no text library): no text to give", program->dir);
  g_result = std::move(stream.result);
  return g_result.c_str();
}

}  // namespace

extern "C" {

TVM_EXPORT tvm_program* tvm_load(const char* text, size_t text_len, const uint8_t* weights, size_t weights_len,
                                 const char* meta, size_t meta_len) {
  return guarded(
      [&]() -> tvm_program* {
        if (!text && text_len) vm::fail("tvm_load: no program text");
        if (!weights && weights_len) vm::fail("tvm_load: no weights");
        vm::LoadOptions options;
        options.copy_weights = true;  // the caller's buffer is freed after this returns
        auto p = std::make_unique<tvm_program>();
        p->program = vm::Program::from_memory(std::string_view(text ? text : "", text_len), weights, weights_len,
                                              std::string_view(meta ? meta : "", meta_len), options);
        return p.release();
      },
      nullptr);
}

TVM_EXPORT tvm_program* tvm_load_dir(const char* dir) {
  return guarded(
      [&]() -> tvm_program* {
        if (!dir || !*dir) vm::fail("tvm_load_dir: no directory");
        vm::LoadOptions options;
        options.copy_weights = true;  // the page may delete the weights file once loaded
        auto p = std::make_unique<tvm_program>();
        p->program = vm::Program::load(dir, options);
        p->dir = dir;
        return p.release();
      },
      nullptr);
}

TVM_EXPORT void tvm_free(tvm_program* program) { delete program; }

TVM_EXPORT const char* tvm_translate(tvm_program* program, const char* text, const char* args, int threads,
                                     tvm_text_fn on_text, void* user) {
  return guarded([&]() { return run_text(program, "translate", text, args, threads, on_text, user); }, nullptr);
}

TVM_EXPORT const char* tvm_transcribe(tvm_program* program, const float* samples, size_t n, const char* args,
                                      int threads, tvm_text_fn on_text, void* user) {
  return guarded([&]() { return run_transcribe(program, samples, n, args, threads, on_text, user); }, nullptr);
}

TVM_EXPORT const char* tvm_complete(tvm_program* program, const char* text, const char* args, int threads,
                                    tvm_text_fn on_text, void* user) {
  return guarded([&]() { return run_text(program, "complete", text, args, threads, on_text, user); }, nullptr);
}

TVM_EXPORT const char* tvm_generate(tvm_program* program, const char* function, const char* ids, const char* args,
                                    int threads, tvm_tokens_fn on_tokens, void* user) {
  return guarded(
      [&]() -> const char* {
        if (!program) vm::fail("tvm_generate: no program");
        const std::string fn_name = function ? function : "generate";
        const vm::Function& fn = program->program->function(fn_name);
        cli::RunRequest request;
        request.ids_text = ids ? ids : "";
        request.args = parse_args(args ? args : "");
        std::vector<vm::Value> inputs =
            cli::build_inputs(fn_name, fn.param_names, fn.param_types, program->program->meta_json(), request);
        vm::Session session(program->program, session_with(threads));
        vm::EmitCallback emit;
        if (on_tokens) {
          emit = vm::token_stream([&](const std::vector<std::vector<int64_t>>& rows) {
            std::vector<int64_t> flat;
            std::vector<int32_t> offsets, counts;
            for (const auto& row : rows) {
              offsets.push_back(int32_t(flat.size()));
              counts.push_back(int32_t(row.size()));
              flat.insert(flat.end(), row.begin(), row.end());
            }
            return on_tokens(user, flat.data(), offsets.data(), counts.data(), int32_t(rows.size())) != 0;
          });
        }
        std::vector<vm::Value> outs = vm::run(session, fn_name, std::move(inputs), emit);
        if (outs.empty()) vm::fail("{}: returned nothing", fn_name);
        g_result = ids_text(outs[0]);
        return g_result.c_str();
      },
      nullptr);
}

TVM_EXPORT const char* tvm_last_error(void) { return g_error.c_str(); }

TVM_EXPORT const char* tvm_kernel_variant(void) {
  return guarded([]() -> const char* { return ops::kernel_table().name; }, "");
}

TVM_EXPORT int tvm_max_threads(void) {
#if defined(__EMSCRIPTEN_PTHREADS__) && defined(TENSORVM_WASM_POOL_SIZE)
  return TENSORVM_WASM_POOL_SIZE + 1;  // the caller and the workers started before main
#else
  return 1;  // no pthreads: a pool is the caller alone (core/thread_pool.cpp)
#endif
}

TVM_EXPORT int tvm_set_kernel_variant(const char* name) {
  return guarded(
      [&]() -> int {
        ops::set_kernel_variant(name ? name : "");
        return 1;
      },
      0);
}

}  // extern "C"
