// A small C API over the runtime for JavaScript (docs/web.md): a program loaded from bytes,
// generate run on token ids with its options, each step's tokens streamed to a callback.
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

// The message of the last failed call on this thread ("" when none failed).
const char* tvm_last_error(void);
// The kernel variant in use ("scalar", "simd128").
const char* tvm_kernel_variant(void);
// Forces a kernel variant by name (as TENSORVM_ISA); 0 and tvm_last_error() if unknown.
int tvm_set_kernel_variant(const char* name);

#ifdef __cplusplus
}
#endif
