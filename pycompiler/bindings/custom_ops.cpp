// tensorvm._C.register_op: an op whose kernel is a Python function (tensorvm.register_op
// on the Python side). The kernel takes the GIL for the call only: the VM runs with it
// released, so other Python threads keep running between instructions.
#include <pybind11/stl.h>

#include "convert.h"
#include "vm/custom_ops.h"

namespace py = pybind11;
using namespace tvm_py;

namespace {

// Where each bound slot goes in the Python call: positional, or keyword for the
// parameters after a variadic one (keyword-only in Python, as in the registry).
struct PyCallShape {
  std::vector<std::string> keyword;  // per fixed slot: "" for positional
  int num_fixed = 0;
};

// A Python callable held without touching its refcount when copied (an OpDef copy made
// by replace_kernel on a thread without the GIL copies the kernel), released with the GIL.
std::shared_ptr<py::object> hold(py::object fn) {
  return std::shared_ptr<py::object>(new py::object(std::move(fn)), [](py::object* p) {
    if (!Py_IsInitialized()) return;  // at exit: the interpreter is gone, leave it
    py::gil_scoped_acquire gil;
    delete p;
  });
}

// An argument as Python sees it. Arrays are views of the VM's tensors (a weight, a
// register a later instruction reads), so they are read-only: writing raises.
py::object argument(const vm::Value& v) {
  py::object o = from_value(v);
  if (py::isinstance<py::array>(o)) o.attr("flags").attr("writeable") = false;
  return o;
}

ops::KernelFunction python_kernel(std::shared_ptr<py::object> fn, PyCallShape shape, size_t num_outputs) {
  return [fn, shape, num_outputs](ops::OpContext&, const ops::Args& args, vm::Value* outs) {
    std::string error;
    {
      py::gil_scoped_acquire gil;
      try {
        py::list pos;
        py::dict kw;
        for (int i = 0; i < shape.num_fixed; ++i) {
          if (shape.keyword[size_t(i)].empty()) pos.append(argument(args[i]));
          else kw[py::str(shape.keyword[size_t(i)])] = argument(args[i]);
        }
        // Variadic values follow the fixed slots; in Python they sit where *name is.
        for (int k = 0; k < args.variadic_count(); ++k) pos.append(argument(args.variadic(k)));
        py::object result = (*fn)(*py::tuple(pos), **kw);
        if (num_outputs == 1) {
          outs[0] = to_value(result);
        } else {
          if (!py::isinstance<py::tuple>(result) || py::len(result) != num_outputs)
            throw vm::Error(fmt::format("the Python kernel must return a tuple of {} values", num_outputs));
          auto t = py::reinterpret_borrow<py::tuple>(result);
          for (size_t i = 0; i < num_outputs; ++i) outs[i] = to_value(t[i]);
        }
      } catch (py::error_already_set& e) {
        // Type and message only: e.what() appends the whole Python traceback.
        error = fmt::format("the Python kernel raised {}: {}", std::string(py::str(e.type().attr("__name__"))),
                            std::string(py::str(e.value())));
      } catch (const vm::Error& e) {
        error = e.what();
      }
    }
    if (!error.empty()) throw vm::Error(error);  // the caller adds the op's name
  };
}

ops::Param to_param(const py::dict& d, const std::string& op) {
  ops::Param p;
  p.name = d["name"].cast<std::string>();
  const std::string kind = d["kind"].cast<std::string>();
  auto k = ops::parse_kind(kind);
  if (!k) vm::fail("register_op: op '{}': parameter '{}' has unknown kind '{}'", op, p.name, kind);
  p.kind = *k;
  p.variadic = d.contains("variadic") && d["variadic"].cast<bool>();
  p.has_default = d.contains("has_default") && d["has_default"].cast<bool>();
  if (p.has_default) p.default_value = to_value(d["default"]);
  return p;
}

void register_python_op(const std::string& name, const py::list& params, const std::vector<std::string>& outputs,
                        const std::string& doc, const std::string& group, py::object fn, bool replace) {
  if (!PyCallable_Check(fn.ptr())) vm::fail("register_op: the kernel of op '{}' is not callable", name);
  vm::CustomOp op;
  op.name = name;
  op.outputs = outputs;
  op.doc = doc;
  op.group = group;
  PyCallShape shape;
  bool after_variadic = false;
  for (auto item : params) {
    ops::Param p = to_param(py::reinterpret_borrow<py::dict>(item), name);
    if (p.variadic) {
      after_variadic = true;
    } else {
      shape.keyword.push_back(after_variadic ? p.name : std::string());
      ++shape.num_fixed;
    }
    op.params.push_back(std::move(p));
  }
  op.kernel = python_kernel(hold(std::move(fn)), std::move(shape), outputs.size());
  vm::register_op(std::move(op), replace);
}

}  // namespace

void bind_custom_ops(py::module_& m) {
  m.def("register_op", &register_python_op, py::arg("name"), py::arg("params"), py::arg("outputs"), py::arg("doc"),
        py::arg("group"), py::arg("kernel"), py::arg("replace") = false,
        "Registers an op whose kernel calls a Python function (params as registry() lists them).");
}
