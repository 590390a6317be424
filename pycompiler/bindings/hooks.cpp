// The interpreter's hooks for Python: the Profiler (`tensorvm profile`,
// Program.profile) and a watched run that hands every instruction's results to a
// Python callback (`tensorvm diff`).
#include <pybind11/stl.h>

#include "convert.h"
#include "vm/profiler.h"
#include "vm/vm.h"

namespace py = pybind11;
using namespace tvm_py;

namespace {

py::dict stats(const vm::OpStats& s) {
  py::dict d;
  d["count"] = s.count;
  d["seconds"] = s.seconds;
  d["macs"] = s.macs;
  d["weight_macs"] = s.weight_macs;
  d["bytes_in"] = s.bytes_in;
  d["bytes_out"] = s.bytes_out;
  d["weight_bytes"] = s.weight_bytes;
  return d;
}

py::dict stats_dict(const std::map<std::string, vm::OpStats>& by_name) {
  py::dict out;
  for (const auto& [name, s] : by_name) out[py::str(name)] = stats(s);
  return out;
}

py::list instructions(const vm::Profiler& p) {
  py::list out;
  for (const vm::InstrStats& s : p.instructions()) {
    py::dict d = stats(s);
    d["function"] = s.fn->name;
    d["line"] = s.ins->line;
    d["op"] = s.ins->callee;
    d["kind"] = kind_name(s.ins->kind);
    d["text"] = s.ins->text;
    out.append(d);
  }
  return out;
}

// Hands each instruction's results to `callback(function, line, op, names, values)`
// with the GIL held. Values are the VM's own (tensors share its buffers): the
// callback copies what it keeps, since caches change under the program.
class Watcher : public vm::Hook {
 public:
  explicit Watcher(py::function callback) : callback_(std::move(callback)) {}
  void before(const vm::Function&, const vm::Instr&, const vm::Value*) override {}
  void after(const vm::Function& fn, const vm::Instr& ins, const vm::Value* regs) override {
    // return moves values already seen; param hands out a weight unchanged
    if (ins.kind == vm::Instr::Kind::Return || ins.kind == vm::Instr::Kind::ParamIndexed) return;
    py::gil_scoped_acquire gil;
    try {
      py::tuple names(ins.outs.size()), values(ins.outs.size());
      for (size_t i = 0; i < ins.outs.size(); ++i) {
        names[i] = py::str(fn.reg_names[ins.outs[i]]);
        values[i] = from_value(regs[ins.outs[i]]);
      }
      callback_(fn.name, ins.line, ins.callee, names, values);
    } catch (py::error_already_set& e) {
      raised = std::make_unique<py::error_already_set>(std::move(e));
      throw vm::Error("the watch callback raised an exception");
    }
  }
  std::unique_ptr<py::error_already_set> raised;

 private:
  py::function callback_;
};

py::list run_watched(vm::Session& s, const std::string& fn, const py::list& args, py::function callback) {
  std::vector<vm::Value> in;
  for (auto a : args) in.push_back(to_value(a));
  Watcher watcher(std::move(callback));
  struct Restore {
    vm::Session& s;
    vm::Hook* saved;
    ~Restore() { s.set_hook(saved); }
  } restore{s, s.hook()};
  s.set_hook(&watcher);
  std::vector<vm::Value> out;
  try {
    py::gil_scoped_release nogil;
    out = vm::run(s, fn, std::move(in));
  } catch (const vm::Error&) {
    if (watcher.raised) {
      watcher.raised->restore();
      throw py::error_already_set();
    }
    throw;
  }
  py::list result;
  for (const vm::Value& v : out) result.append(from_value(v));
  return result;
}

}  // namespace

void bind_hooks(py::module_& m) {
  py::class_<vm::Profiler>(m, "Profiler")
      .def(py::init([](bool trace, bool cpu_time) {
             vm::ProfilerOptions o;
             o.trace = trace;
             o.cpu_time = cpu_time;
             return std::make_unique<vm::Profiler>(o);
           }),
           py::arg("trace") = false, py::arg("cpu_time") = false)
      .def("reset", &vm::Profiler::reset)
      .def("report", &vm::Profiler::report, py::arg("top") = 20)
      .def("op_table", &vm::Profiler::op_table)
      .def("call_table", &vm::Profiler::call_table)
      .def("instruction_table", &vm::Profiler::instruction_table, py::arg("top") = 20)
      .def("ops", [](const vm::Profiler& p) { return stats_dict(p.ops()); })
      .def("calls", [](const vm::Profiler& p) { return stats_dict(p.calls()); })
      .def("instructions", &instructions, "Every instruction that ran: function, line, op, kind, text and its totals.")
      .def_property_readonly("run_seconds", &vm::Profiler::run_seconds)
      .def_property_readonly("runs", &vm::Profiler::runs)
      .def_property_readonly("trace_events", &vm::Profiler::trace_events)
      .def_property_readonly("dropped_events", &vm::Profiler::dropped_events)
      .def("trace_json", &vm::Profiler::trace_json)
      .def("write_trace", &vm::Profiler::write_trace, py::arg("path"), py::call_guard<py::gil_scoped_release>());

  m.def("run_watched", &run_watched, py::arg("session"), py::arg("function"), py::arg("args"), py::arg("callback"),
        "Runs `function` calling callback(function, line, op, names, values) after each instruction "
        "(not return or param); the session's own hook is put back afterwards.");
}
