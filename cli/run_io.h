// What the command lines share (cli/main.h: tensorvm-run and a compiled program's):
// a function's inputs from --ids, --decoder-ids, --arg,
// --inputs and --wav, and its outputs printed, saved (--outputs) and timed (--time).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "io/npz.h"
#include "vm/session.h"
#include "core/value.h"

namespace cli {

struct RunRequest {
  std::string inputs_path, outputs_path, ids_text, decoder_ids_text, wav_path;
  std::map<std::string, std::string> args;  // --arg NAME=VALUE
  // Given as values rather than text (`tensorvm run` through the Python binding,
  // pycompiler/bindings/cli.cpp): rows of ids in place of ids_text (the text verbs' encoded
  // line), and arrays by parameter name over those of --inputs (inspect --memory's --shapes).
  std::vector<std::vector<int64_t>> ids;
  std::vector<io::ArrayData> arrays;
  bool timed = false;
  int64_t prompt_width = 1;  // set by build_inputs: for --time's cost per generated token
};

// The inputs of function `fn_name` in parameter order (docs/tools.md): --ids for
// input_ids and attention_mask (left-padded for a decoder-only program, by meta.json),
// --decoder-ids, --wav, --arg, arrays of --inputs by name or arr_<i>; options left out
// are None. Fails naming what does not fit.
std::vector<vm::Value> build_inputs(const std::string& fn_name, const std::vector<std::string>& param_names,
                                const std::vector<std::string>& param_types, const std::string& meta_json,
                                RunRequest& r);
// Prints each output ("output 0 = tensor ..."), writes --outputs, prints --time's line.
// `printed(i, value)`, when given, may print output i its own way and return true.
void finish(const std::string& fn_name, const std::vector<vm::Value>& outs, const RunRequest& r, double ms,
            const std::function<bool(size_t, const vm::Value&)>& printed = {});
// --stream: one "stream: ..." line per generation step.
vm::EmitCallback stream_printer();

// A parameter's value from an array of --inputs (or of a bundle, cli/verify.h): a
// tensor for Tensor, Tensor? and a shaped Any, else a 0-d array read as the declared
// scalar type. `what` names the array in errors.
vm::Value value_from_array(const io::ArrayData& a, const std::string& type, const std::string& what);
std::string safetensors_dtype(vm::DType t);  // "F32", "I64", ...

vm::Value parse_scalar(const std::string& type, const std::string& text, const std::string& name);
std::vector<std::vector<int64_t>> parse_ids(const std::string& text, const char* option = "--ids");
int64_t parse_count(const std::string& option, const std::string& text, int64_t lo, int64_t hi);
void print_value(const std::string& label, const vm::Value& v);

}  // namespace cli
