// A small C API over the runtime for JavaScript (docs/web.md): a program loaded from bytes
// or from a directory of the module's file system, generate run on token ids with its
// options, or text translated / completed with the program's tokenizer (the text library),
// each step's tokens or text streamed to a callback.
// Errors never abort: a call that fails returns 0 (or a null handle) and tvm_last_error()
// says why, with the runtime's own message (the op, the IR line). Strings returned stay
// valid until the next call on the same thread.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tvm_program tvm_program;

// Called once per generation step with the step's new token ids: `rows` rows, row r holding
// counts[r] ids starting at ids[offsets[r]]. Returning 0 stops generation.
typedef int (*tvm_tokens_fn)(void* user, const int64_t* ids, const int32_t* offsets, const int32_t* counts, int32_t rows);

// program.py's text, weights.safetensors' bytes (copied: the caller may free them after)
// and meta.json's text (may be empty). Null on any problem.
tvm_program* tvm_load(const char* text, size_t text_len, const uint8_t* weights, size_t weights_len, const char* meta,
                      size_t meta_len);
void tvm_free(tvm_program* program);

// Runs `function` (e.g. "generate") with input_ids from `ids` ("5 17 9 0; 30 8 0": rows
// separated by ';', as tensorvm-run --ids) and options from `args` ("num_beams=4;seed=7":
// NAME=VALUE pairs separated by ';', as --arg), on `threads` threads (1 without pthreads),
// streaming each step's tokens to `on_tokens` (null: none). The first output's token ids,
// rows separated by ';', are returned (null on error).
const char* tvm_generate(tvm_program* program, const char* function, const char* ids, const char* args, int threads,
                         tvm_tokens_fn on_tokens, void* user);

// A program directory in the module's file system (a page writes the files it was given
// there, web/tensorvm.js's loadFiles): program.py, weights.safetensors (copied into memory),
// meta.json and, when meta.json names one, the tokenizer's files, which the text calls below
// read from there. Null on any problem.
tvm_program* tvm_load_dir(const char* dir);

// Called once per generation step of the text calls with `piece`, the text this step added,
// and `text`, all the output decoded so far (the first sequence of each line; earlier lines
// end with '\n'). When a step rewrites what was shown (a byte-fallback character completed),
// `piece` is "" and `text` holds the new text. Returning 0 stops generation.
typedef int (*tvm_text_fn)(void* user, const char* piece, const char* text);

// Text in, text out, as `tensorvm-run PROGRAM translate --text TEXT` prints it: one output
// line per input line, each ending in '\n' (several per line with num_return_sequences).
// `args` as tvm_generate's, plus src_lang=LANG and tgt_lang=LANG (M2M100, NLLB). Needs a
// program loaded with tvm_load_dir that carries its tokenizer. Null on error: no or empty
// text, invalid UTF-8, a program without tokenizer, anything the command line refuses.
const char* tvm_translate(tvm_program* program, const char* text, const char* args, int threads,
                          tvm_text_fn on_text, void* user);
// The same for a decoder-only program (`tensorvm-run PROGRAM complete`): the continuation.
const char* tvm_complete(tvm_program* program, const char* text, const char* args, int threads,
                         tvm_text_fn on_text, void* user);

// Whisper: the transcript of `n` samples of 16 kHz mono PCM (floats in [-1, 1]), as
// `tensorvm-run PROGRAM transcribe --wav FILE` prints it for the same samples: a line of text
// per row. One window (30 s for Whisper): the program's transcribe truncates longer audio to
// its first window, where the command line goes long-form. `args` as
// tvm_generate's, plus language=LANG (none: detected) and task=transcribe|translate. Needs a
// program loaded with tvm_load_dir that carries its tokenizer; `on_text` as above. Null on
// error.
const char* tvm_transcribe(tvm_program* program, const float* samples, size_t n, const char* args, int threads,
                           tvm_text_fn on_text, void* user);

// The message of the last failed call on this thread ("" when none failed).
const char* tvm_last_error(void);
// The kernel variant in use ("scalar", "simd128").
const char* tvm_kernel_variant(void);
// The most threads a call's `threads` can use: 1 without pthreads; with them (the build
// under simd-mt/), the caller plus the workers Emscripten started before main. More asked
// for run on that many; results do not depend on the count.
int tvm_max_threads(void);
// Forces a kernel variant by name (as TENSORVM_ISA); 0 and tvm_last_error() if unknown.
int tvm_set_kernel_variant(const char* name);

#ifdef __cplusplus
}
#endif
