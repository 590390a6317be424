// tensorvm._C.resolve(text): the program as the loader resolves it (vm::Program::resolve),
// for `tensorvm compile` to print (pycompiler/aot/cpp.py) instead of working it out again:
// per function its registers, constants and lists, and per instruction its kind, the op
// or functions it is bound to, its operands in the slots ops::bind gives them, its
// result registers and the registers that die after it.
#include <pybind11/stl.h>

#include "convert.h"
#include "vm/vm.h"

namespace py = pybind11;
using namespace tvm_py;

namespace {

// ("reg", i), ("const", i) or ("list", i): where an argument comes from.
py::tuple operand(const vm::Operand& o) {
  const char* from = o.from == vm::Operand::From::Reg ? "reg" : o.from == vm::Operand::From::Const ? "const" : "list";
  return py::make_tuple(from, o.index);
}

py::list operands(const std::vector<vm::Operand>& os) {
  py::list l;
  for (const vm::Operand& o : os) l.append(operand(o));
  return l;
}

py::dict instruction(const vm::Instr& ins) {
  py::dict d;
  d["kind"] = kind_name(ins.kind);
  d["line"] = ins.line;
  d["callee"] = ins.callee;
  d["text"] = ins.text;
  d["args"] = operands(ins.args);
  d["outs"] = ins.outs;
  d["frees"] = ins.frees;
  d["pack_tuple"] = ins.pack_tuple;
  d["fn_a"] = ins.fn_a;
  d["fn_b"] = ins.fn_b;
  d["table_template"] = ins.table_template;
  if (ins.kind == vm::Instr::Kind::Kernel) {
    py::list params;  // per argument slot: the op's parameter that takes it
    for (size_t s = 0; s < ins.args.size(); ++s) params.append(ins.op->params[size_t(ins.op->slot_param(s))].name);
    d["slot_params"] = params;
    d["num_outputs"] = ins.op->outputs.size();
  }
  return d;
}

py::dict function(const vm::Function& f) {
  py::dict d;
  d["name"] = f.name;
  d["line"] = f.line;
  d["params"] = f.param_names;
  d["param_types"] = f.param_types;
  d["return_types"] = f.return_types;
  d["num_regs"] = f.num_regs;
  d["reg_names"] = f.reg_names;
  py::list consts;  // ("weight", name) or ("value", the literal)
  for (size_t i = 0; i < f.consts.size(); ++i)
    consts.append(f.const_weights[i].empty() ? py::tuple(py::make_tuple("value", from_value(f.consts[i])))
                                             : py::tuple(py::make_tuple("weight", f.const_weights[i])));
  d["consts"] = consts;
  py::list lists;
  for (const vm::ListOperand& l : f.lists) lists.append(operands(l.items));
  d["lists"] = lists;
  py::list code;
  for (const vm::Instr& ins : f.code) code.append(instruction(ins));
  d["code"] = code;
  return d;
}

}  // namespace

void bind_resolved(py::module_& m) {
  m.def(
      "resolve",
      [](const std::string& text, const std::string& filename) {
        std::shared_ptr<const vm::Program> p;
        {
          py::gil_scoped_release nogil;
          p = vm::Program::resolve(text, filename);
        }
        py::list fns;
        for (const vm::Function& f : p->functions()) fns.append(function(f));
        return fns;
      },
      py::arg("text"), py::arg("filename") = "program.py",
      "The program as the loader resolves it, without weights (vm::Program::resolve): a list of functions, "
      "each a dict of its registers, constants, lists and instructions (pycompiler/aot/cpp.py prints it).");
}
