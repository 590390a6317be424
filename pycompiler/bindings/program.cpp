// Program, Session and the IR round-trip helper for Python.
#include <pybind11/stl.h>

#include "convert.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "vm/profiler.h"  // Session.profiler returns one
#include "vm/vm.h"

namespace py = pybind11;
using namespace tvm_py;

namespace {

// Runs `run(inputs, callback)` with the GIL released; `on_emit` (None for none) is
// called with the GIL held for each emit as on_emit(channel, value) and answers
// "continue" unless it returns False. An exception it raises ends the run and is raised
// again, as it was.
template <typename Run>
py::list run_released(const py::list& args, const py::object& on_emit, Run&& run) {
  std::vector<vm::Value> in;
  for (auto a : args) in.push_back(to_value(a));
  std::vector<vm::Value> out;
  std::unique_ptr<py::error_already_set> raised;
  vm::EmitCallback cb;
  if (!on_emit.is_none()) {
    cb = [&on_emit, &raised](const std::string& channel, const vm::Value& value) {
      py::gil_scoped_acquire gil;
      try {
        py::object answer = on_emit(channel, from_value(value));
        return !(py::isinstance<py::bool_>(answer) && !answer.cast<bool>());
      } catch (py::error_already_set& e) {
        raised = std::make_unique<py::error_already_set>(std::move(e));
        throw vm::Error("the emit callback raised an exception");
      }
    };
  }
  try {
    py::gil_scoped_release nogil;
    out = run(std::move(in), std::move(cb));
  } catch (const vm::Error&) {
    if (raised) {
      raised->restore();
      throw py::error_already_set();
    }
    throw;
  }
  py::list result;
  for (const vm::Value& v : out) result.append(from_value(v));
  return result;
}

py::list run_session(vm::Session& s, const std::string& fn, const py::list& args, const py::object& on_emit) {
  return run_released(args, on_emit, [&](std::vector<vm::Value> in, vm::EmitCallback cb) {
    return vm::run(s, fn, std::move(in), std::move(cb));
  });
}

py::list run_pooled(vm::SessionPool& pool, const std::string& fn, const py::list& args, const py::object& on_emit) {
  return run_released(args, on_emit, [&](std::vector<vm::Value> in, vm::EmitCallback cb) {
    return pool.run(fn, std::move(in), std::move(cb));
  });
}

py::dict function_info(const vm::Function& f) {
  py::dict d;
  d["name"] = f.name;
  d["params"] = f.param_names;
  d["param_types"] = f.param_types;
  d["return_types"] = f.return_types;
  d["instructions"] = f.code.size();
  py::dict counts;
  for (const vm::Instr& ins : f.code) {
    if (ins.kind == vm::Instr::Kind::Return) continue;
    py::str key(ins.callee);
    counts[key] = (counts.contains(key) ? counts[key].cast<int>() : 0) + 1;
  }
  d["op_counts"] = counts;
  return d;
}

// Session(arena_bytes=..., arena_buffer=...): the arena of a session, or null.
vm::Ref<vm::Arena> make_arena(size_t arena_bytes, const py::object& buffer) {
  if (buffer.is_none()) return arena_bytes ? vm::Arena::with_budget(arena_bytes) : vm::Ref<vm::Arena>();
  if (arena_bytes) throw vm::Error("Session: give arena_bytes or arena_buffer, not both");
  py::buffer_info info = py::reinterpret_borrow<py::buffer>(buffer).request(/*writable=*/true);
  if (info.ndim < 1 || info.strides.back() != info.itemsize ||
      size_t(info.size * info.itemsize) != size_t(info.shape[0]) * size_t(info.strides[0]))
    throw vm::Error("Session: arena_buffer must be a writable contiguous buffer");
  // The arena holds the buffer export (which holds the object) until it goes, so the
  // memory cannot move under it: resizing a bytearray meanwhile raises BufferError. The
  // arena may go on a thread without the GIL (a tensor viewed from Python dies last):
  // the deleter takes it to release the export.
  vm::ArenaRegion region{info.ptr, size_t(info.size * info.itemsize), 0, "buffer"};
  auto owner = std::shared_ptr<void>(new py::buffer_info(std::move(info)), [](void* p) {
    py::gil_scoped_acquire gil;
    delete static_cast<py::buffer_info*>(p);
  });
  return vm::Arena::over({std::move(region)}, std::move(owner));
}

py::dict memory_stats(vm::Session& s) {
  py::dict d;
  if (vm::Arena* a = s.arena()) {
    d["capacity"] = a->capacity();
    d["in_use"] = a->in_use();
    d["peak_in_use"] = a->peak_in_use();
    d["arena_bytes"] = a->arena_bytes();
    d["largest"] = a->largest_allocation();
    d["allocations"] = a->allocations();
    py::list regions;
    for (const auto& r : a->stats()) {
      py::dict rd;
      rd["name"] = r.name;
      rd["capacity"] = r.capacity;
      rd["in_use"] = r.in_use;
      rd["peak_in_use"] = r.peak_in_use;
      rd["high_water"] = r.high_water;
      regions.append(rd);
    }
    d["regions"] = regions;
    return d;
  }
  const vm::Pool& p = s.pool();
  d["live"] = p.live_bytes();
  d["peak_live"] = p.peak_live_bytes();
  d["peak_held"] = p.peak_held_bytes();
  d["cached"] = p.cached_bytes();
  d["allocations"] = p.allocations();
  d["fresh_allocations"] = p.fresh_allocations();
  d["evictions"] = p.evictions();  // cached blocks freed to keep held near live
  return d;
}

void bind_program_class(py::module_& m) {
  py::class_<vm::Program, std::shared_ptr<vm::Program>>(m, "Program")
      .def_static("load",
                  [](const std::string& dir, bool copy_weights) {
                    vm::LoadOptions o;
                    o.copy_weights = copy_weights;
                    return std::const_pointer_cast<vm::Program>(vm::Program::load(dir, o));
                  },
                  py::arg("path"), py::arg("copy_weights") = false, py::call_guard<py::gil_scoped_release>())
      .def_static("from_text",
                  [](const std::string& text, const std::string& weights) {
                    return std::const_pointer_cast<vm::Program>(vm::Program::from_text(text, weights));
                  },
                  py::arg("text"), py::arg("weights_path") = "")
      .def_static("from_memory",
                  [](const std::string& text, const py::object& weights, const std::string& meta) {
                    // Copied: the Program must not depend on a Python buffer's lifetime.
                    vm::LoadOptions o;
                    o.copy_weights = true;
                    if (weights.is_none())
                      return std::const_pointer_cast<vm::Program>(vm::Program::from_memory(text, nullptr, 0, meta, o));
                    py::buffer_info info = py::reinterpret_borrow<py::buffer>(weights).request();
                    if (info.ndim != 1 || info.itemsize != 1 || info.strides[0] != 1)
                      throw vm::Error("from_memory: weights must be bytes or a contiguous byte buffer");
                    py::gil_scoped_release nogil;
                    return std::const_pointer_cast<vm::Program>(
                        vm::Program::from_memory(text, info.ptr, size_t(info.size), meta, o));
                  },
                  py::arg("text"), py::arg("weights") = py::none(), py::arg("meta") = "",
                  "A program from its text, weights (safetensors bytes, copied) and meta.json text.")
      .def("functions", [](const vm::Program& p) {
        std::vector<std::string> names;
        for (const auto& f : p.functions()) names.push_back(f.name);
        return names;
      })
      .def("function_info", [](const vm::Program& p, const std::string& name) { return function_info(p.function(name)); })
      .def_property_readonly("text", &vm::Program::text)
      .def_property_readonly("meta_json", &vm::Program::meta_json)
      .def_property_readonly("weight_bytes", &vm::Program::weight_bytes);
}

void bind_session(py::module_& m) {
  py::class_<vm::Session>(m, "Session")
      .def(py::init([](std::shared_ptr<vm::Program> p, int num_threads, uint64_t max_instructions, bool profile,
                       bool profile_trace, size_t arena_bytes, py::object arena_buffer) {
             vm::SessionOptions o;
             o.num_threads = num_threads;
             o.max_instructions = max_instructions;
             o.profile = profile;
             o.profile_trace = profile_trace;
             o.arena = make_arena(arena_bytes, arena_buffer);
             return std::make_unique<vm::Session>(p, o);
           }),
           py::arg("program"), py::arg("num_threads") = 1, py::arg("max_instructions") = 0, py::arg("profile") = false,
           py::arg("profile_trace") = false, py::arg("arena_bytes") = 0, py::arg("arena_buffer") = py::none(),
           "arena_bytes: carve every tensor of a run from an arena of that many bytes; arena_buffer: from this "
           "writable buffer (bytearray, numpy array), held while the arena lives. Neither: the session's pool.")
      .def("run", &run_session, py::arg("function"), py::arg("args"), py::arg("on_emit") = py::none())
      .def("run_named",
           [](vm::Session& s, const std::string& fn, const py::dict& kwargs) {
             std::vector<std::pair<std::string, vm::Value>> named;
             for (auto item : kwargs) named.emplace_back(item.first.cast<std::string>(), to_value(item.second));
             std::vector<vm::Value> out;
             {
               py::gil_scoped_release nogil;
               out = s.run_named(fn, named);
             }
             py::list result;
             for (const vm::Value& v : out) result.append(from_value(v));
             return result;
           },
           py::arg("function"), py::arg("kwargs"), "Inputs by parameter name; `Any` parameters left out are None.")
      .def_property("num_threads", &vm::Session::num_threads, &vm::Session::set_num_threads)
      .def_property("max_instructions", &vm::Session::max_instructions, &vm::Session::set_max_instructions,
                    "The most instructions one run may execute (0: no limit).")
      .def_property_readonly("instructions_executed", &vm::Session::instructions_executed)
      .def_property_readonly("fresh_allocations", [](vm::Session& s) { return s.pool().fresh_allocations(); })
      .def("memory_stats", &memory_stats,
           "The session's memory counters: its pool's (live, peak_live, peak_held, cached bytes) or, with an "
           "arena, the arena's (capacity, in_use, peak_in_use, arena_bytes, largest, allocations, regions).")
      .def("reset_memory_peak", [](vm::Session& s) {
        if (s.arena()) s.arena()->reset_peak();
        s.pool().reset_peak();
      })
      .def("set_profiler", [](vm::Session& s, vm::Profiler* p) { s.set_hook(p); }, py::arg("profiler").none(true),
           py::keep_alive<1, 2>(), "Installs a Profiler (None removes it); the session keeps it alive.")
      .def_property_readonly("profiler", &vm::Session::profiler, py::return_value_policy::reference_internal,
                             "The session's own Profiler (Session(..., profile=True)), else None.");
}

void bind_session_pool(py::module_& m) {
  py::class_<vm::SessionPool>(m, "SessionPool")
      .def(py::init([](std::shared_ptr<vm::Program> p, int num_threads, uint64_t max_instructions, size_t arena_bytes) {
             vm::SessionOptions o;
             o.num_threads = num_threads;
             o.max_instructions = max_instructions;
             return std::make_unique<vm::SessionPool>(p, o, arena_bytes);
           }),
           py::arg("program"), py::arg("num_threads") = 1, py::arg("max_instructions") = 0, py::arg("arena_bytes") = 0,
           "Sessions for one Program shared by threads (vm/session_pool.h): each run checks one out, runs with "
           "the GIL released and gives it back. arena_bytes: each Session gets an arena of its own of that size.")
      .def("run", &run_pooled, py::arg("function"), py::arg("args"), py::arg("on_emit") = py::none(),
           "As Session.run, on a Session of the pool's for this run only.")
      .def_property_readonly("sessions_made", &vm::SessionPool::sessions_made,
                             "Sessions made so far: the most runs that were under way at once.")
      .def_property_readonly("idle", &vm::SessionPool::idle, "Sessions checked in now.");
}

}  // namespace

void bind_program(py::module_& m) {
  bind_program_class(m);
  bind_session(m);
  bind_session_pool(m);
  m.def("measure_memory",
        [](std::shared_ptr<vm::Program> p, const std::string& function, const py::list& args, int num_threads) {
          std::vector<vm::Value> inputs;
          for (const auto& a : args) inputs.push_back(to_value(a));
          vm::MemoryReport r;
          {
            py::gil_scoped_release nogil;
            r = vm::measure_memory(p, function, std::move(inputs), num_threads);
          }
          py::list outputs;
          for (const vm::Value& v : r.outputs) outputs.append(from_value(v));
          py::dict d;
          d["arena_bytes"] = r.arena_bytes;
          d["peak_bytes"] = r.peak_bytes;
          d["largest_tensor"] = r.largest_tensor;
          d["allocations"] = r.allocations;
          d["instructions"] = r.instructions;
          d["high_water_at"] = r.high_water_at;
          d["outputs"] = outputs;
          return d;
        },
        py::arg("program"), py::arg("function"), py::arg("args"), py::arg("num_threads") = 1,
        "Runs function under a measuring arena (vm/memory_report.h): the arena size it needs, its peak, ...");

  m.def("parse_and_print", [](const std::string& text) {
    try {
      return ir::print(ir::parse(text));
    } catch (const ir::ParseError& e) {
      throw vm::Error(e.what());
    }
  });
}
