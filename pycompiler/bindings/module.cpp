// The extension module tensorvm._C: thin bindings over the C++ runtime.
#include <pybind11/stl.h>

#include "convert.h"
#include "ops/cpu.h"
#include "ops/gemm_library.h"
#include "ops/w8a8_amx.h"
#include "ops/registry.h"

namespace py = pybind11;
using namespace tvm_py;

void bind_program(py::module_& m);     // program.cpp
void bind_text(py::module_& m);        // text.cpp
void bind_hooks(py::module_& m);       // hooks.cpp
void bind_custom_ops(py::module_& m);  // custom_ops.cpp
void bind_resolved(py::module_& m);    // resolved.cpp
void bind_cli(py::module_& m);         // cli.cpp

static py::object call_op(const std::string& name, py::args args, py::kwargs kwargs) {
  const ops::OpDef* op = ops::Registry::get().find(name);
  if (!op) throw vm::Error(fmt::format("unknown op '{}'", name));
  std::vector<vm::Value> pos;
  for (auto a : args) pos.push_back(to_value(a));
  std::vector<std::pair<std::string, vm::Value>> kw;
  for (auto item : kwargs) kw.emplace_back(item.first.cast<std::string>(), to_value(item.second));
  std::vector<vm::Value> outs;
  {
    py::gil_scoped_release nogil;
    ops::OpContext ctx;
    outs = ops::call(*op, pos, kw, ctx);
  }
  if (outs.size() == 1) return from_value(outs[0]);
  py::tuple t(outs.size());
  for (size_t i = 0; i < outs.size(); ++i) t[i] = from_value(outs[i]);
  return t;
}

static py::list registry() {
  py::list out;
  for (const ops::OpDef* def : ops::Registry::get().all()) {
    const ops::OpDef& op = *def;
    py::list params;
    for (const ops::Param& p : op.params) {
      py::dict d;
      d["name"] = p.name;
      d["kind"] = std::string(ops::kind_name(p.kind));
      d["variadic"] = p.variadic;
      d["has_default"] = p.has_default;
      d["default"] = p.has_default ? from_value(p.default_value) : py::none();
      params.append(d);
    }
    py::dict d;
    d["name"] = op.name;
    d["group"] = op.group;
    d["params"] = params;
    d["outputs"] = op.outputs;
    d["doc"] = op.doc;
    d["signature"] = op.signature();
    d["builtin"] = op.builtin;
    d["result"] = std::string(ops::result_rule_name(op.result));
    d["raises"] = op.raises;
    out.append(d);
  }
  return out;
}

PYBIND11_MODULE(_C, m) {
  m.doc() = "tensorvm C++ runtime";
  py::register_exception<vm::Error>(m, "VMError", PyExc_RuntimeError);
  py::class_<PyObjectHandle>(m, "Object")
      .def_property_readonly("type_name", [](const PyObjectHandle& h) { return std::string(h.obj->type_name()); })
      .def("__repr__", [](const PyObjectHandle& h) { return "<tensorvm " + h.obj->describe() + ">"; });
  m.def("call_op", &call_op, "Run one op eagerly on the C++ kernels.");
  m.def("registry", &registry, "Every op: name, group, params, outputs, doc, result rule, raises.");
  m.def("cpu_info", [] {
    const ops::CpuInfo& c = ops::cpu_info();
    py::dict d;
    d["arch"] = c.arch;
    d["model"] = c.model;
    d["features"] = c.features;
    d["variants_built"] = ops::built_kernel_variants();
    d["variants_supported"] = ops::supported_kernel_variants();
    d["active"] = std::string(ops::kernel_table().name);
    d["w8a8"] = std::string(ops::kernel_table().w8a8_name);
    d["gemm"] = ops::library_gemm_active() ? ops::library_gemm_name() : std::string("own");
    d["amx"] = ops::amx_active();
    return d;
  }, "The CPU, its features, the kernel variants built and supported, the active one, and linear's GEMM backend "
     "past 32 rows (own, or the library's name).");
  m.def("set_gemm_backend", [](const std::string& name) { ops::set_gemm_backend(name); },
        "linear's GEMM past 32 rows: auto (oneDNN with the CPU's best variant, when built with it), own or onednn.");
  m.def("set_amx", [](bool on) { ops::set_amx(on); },
        "linear_w8a8's AMX kernel past 16 rows on/off (on by default; it also needs the CPU, the OS and the best "
        "kernel variant: cpu_info()['amx'] says whether it runs).");
  m.def("describe_cpu", &ops::describe_cpu, "cpu_info() as text, one fact per line (tensorvm info).");
  m.def("set_kernel_variant", [](const std::string& name) { ops::set_kernel_variant(name); },
        "Force a kernel variant (scalar, avx2, avx512, avx512_vnni, neon, neon_dotprod, or auto) for the whole process.");
  bind_hooks(m);
  bind_program(m);
  bind_text(m);
  bind_custom_ops(m);
  bind_resolved(m);
  bind_cli(m);
}
