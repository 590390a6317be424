// A loaded program: the IR resolved once into flat instruction arrays. Every op name
// is bound to its kernel, every argument to a register, constant or weight, and every
// register's last use is known, so the interpreter does no lookups while running.
// A Program is immutable after load and may be shared by many Sessions and threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/safetensors.h"
#include "ops/registry.h"
#include "core/value.h"

namespace ir {
struct Module;
}

namespace vm {

// An app's source of weight bytes for Program::from_reader (an asset manager, a flash
// partition): size() and read(offset, dst, n) -> bytes written. See io/safetensors.h.
using WeightsReader = io::ByteReader;

// Load-time limits, so that no program can make the interpreter overflow its own
// stack or its 16-bit operand counts; a program past them is a load error.
constexpr int kMaxCallDepth = 1000;     // nested calls, while_loop and cond bodies
constexpr size_t kMaxOperands = 65535;  // arguments or results of one statement

struct Operand {
  enum class From : uint8_t { Reg, Const, List };
  From from = From::Reg;
  uint32_t index = 0;
};

// A list argument with names in it ("[b, -1, 8, 64]"): built at run time, inline.
struct ListOperand {
  std::vector<Operand> items;  // Reg or Const (ints)
};

struct Instr {
  enum class Kind : uint8_t { Kernel, Call, WhileLoop, Cond, Emit, ParamIndexed, Return };
  Kind kind = Kind::Kernel;
  const ops::OpDef* op = nullptr;   // Kernel
  ops::Kernel kernel = nullptr;     // Kernel
  uint32_t fn_a = 0, fn_b = 0;      // Call: callee; WhileLoop: cond, body; Cond: then, else
  std::vector<Operand> args;        // Kernel: bound slots; Emit: channel (a str constant), value; others: positional
  std::vector<uint8_t> contiguous;  // Kernel: per slot, 1 if a tensor must be made contiguous
  std::vector<uint32_t> outs;       // destination registers
  bool pack_tuple = false;          // one target receives all k > 1 results as a tuple
  std::vector<uint32_t> frees;      // registers whose last use is this instruction
  std::vector<Value> table;         // ParamIndexed: weights by index (undefined where absent)
  std::string table_template;       // ParamIndexed: the name template, for errors
  int line = 0;
  std::string text;                 // the statement as printed, for errors and profiles
  std::string callee;               // op or function name, for errors and profiles
};

// The hot form of an instruction: fixed size, with its operands, destination
// registers and dead registers stored contiguously in the function's pools, so the
// interpreter streams through memory instead of chasing per-instruction vectors.
struct PackedInstr {
  Instr::Kind kind = Instr::Kind::Kernel;
  bool pack_tuple = false;
  uint16_t num_args = 0, num_outs = 0, num_frees = 0;
  ops::Kernel kernel = nullptr;
  const ops::OpDef* op = nullptr;
  uint32_t args = 0;   // offset into Function::operand_pool (and contiguous_pool)
  uint32_t outs = 0;   // offset into Function::index_pool
  uint32_t frees = 0;  // offset into Function::index_pool
  uint32_t fn_a = 0, fn_b = 0;
};

struct Function {
  std::string name;
  int line = 0;
  std::vector<std::string> param_names;
  std::vector<std::string> param_types;
  std::vector<std::string> return_types;
  bool returns_tuple = false;
  uint32_t num_regs = 0;
  uint32_t stack_need = 0;  // registers this function and its deepest callee chain need
  std::vector<Instr> code;          // full form: errors, hooks, profiles, inspection
  std::vector<PackedInstr> packed;  // hot form, one per entry of `code`
  std::vector<Operand> operand_pool;
  std::vector<uint8_t> contiguous_pool;
  std::vector<uint32_t> index_pool;
  std::vector<Value> consts;
  // Per constant: the weight a literal param() bound it to, "" for a literal. Tools
  // that print the resolved program (tensorvm compile) name the weight, not its bytes.
  std::vector<std::string> const_weights;
  std::vector<ListOperand> lists;
  std::vector<std::string> reg_names;
  size_t num_returns() const { return return_types.size(); }
};

struct LoadOptions {
  // Read the weights into memory instead of mapping them. A mapped file that another
  // process truncates in place kills this one with SIGBUS on the next read of a lost
  // page; a copy is immune, at the price of the memory and the read at load. The
  // environment variable TENSORVM_COPY_WEIGHTS=1 turns this on for every load.
  bool copy_weights = false;
};

class Program {
 public:
  // Loads a program directory (program.py, weights.safetensors, meta.json). Throws
  // vm::Error naming the file and line on any problem.
  static std::shared_ptr<const Program> load(const std::string& dir, const LoadOptions& options = {});
  // From IR text and an optional weights file path ("" for none).
  static std::shared_ptr<const Program> from_text(const std::string& text, const std::string& weights_path,
                                                  const std::string& filename = "program.py",
                                                  const LoadOptions& options = {});
  // A program whose text, weights (safetensors bytes; nullptr and 0 for none) and meta
  // (meta.json's text; empty for none) are in memory: an embedded resource, an asset,
  // a network buffer. The same checks as load(): bad bytes are a vm::Error, never a
  // crash. The weights are BORROWED: tensors view them in place, so the buffer must
  // stay valid and unchanged until the Program, every Session on it and every tensor
  // a run returned are gone (`owner`, if given, is kept alive exactly that long).
  // options.copy_weights copies them instead (64-byte aligned), and the buffer may
  // then be freed as soon as this returns. The text and meta are always copied.
  static std::shared_ptr<const Program> from_memory(std::string_view text, const void* weights, size_t weights_size,
                                                    std::string_view meta_json = {}, const LoadOptions& options = {},
                                                    std::shared_ptr<const void> owner = nullptr);
  // As from_memory, the weights read from `reader` into memory the Program owns (the
  // reader is not used after this returns).
  static std::shared_ptr<const Program> from_reader(std::string_view text, WeightsReader& reader,
                                                    std::string_view meta_json = {});

  // The program as the loader resolves it (every call bound, registers, last uses),
  // without weights: each param() is bound by name only (Function::const_weights,
  // Instr::table_template), to a placeholder tensor. For tools that print the program,
  // as `tensorvm compile` (docs/aot.md); a Session refuses to run it.
  static std::shared_ptr<const Program> resolve(const std::string& text, const std::string& filename = "program.py");

  const Function* find(const std::string& name) const;  // nullptr if absent
  const Function& function(const std::string& name) const;  // throws naming the functions there are
  const std::vector<Function>& functions() const { return functions_; }
  const std::string& text() const { return text_; }
  const std::string& filename() const { return filename_; }
  const std::string& meta_json() const { return meta_json_; }  // "{}" when absent
  uint32_t max_stack() const { return max_stack_; }
  size_t weight_bytes() const { return weight_bytes_; }
  bool weights_bound() const { return weights_bound_; }  // false: made by resolve(), not runnable

 private:
  friend class Loader;
  static std::shared_ptr<const Program> build(const std::string& text, const std::string& filename,
                                              const std::function<std::shared_ptr<io::WeightsFile>()>& open_weights,
                                              bool bind_weights = true);
  std::vector<Function> functions_;
  std::string text_;
  std::string filename_;
  std::string meta_json_ = "{}";
  std::shared_ptr<io::WeightsFile> weights_;
  uint32_t max_stack_ = 0;
  size_t weight_bytes_ = 0;
  bool weights_bound_ = true;
};

}  // namespace vm
