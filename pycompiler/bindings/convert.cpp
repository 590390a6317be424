#include "convert.h"

#include <cstring>

#include <fmt/format.h>

namespace tvm_py {

static bool is_little_endian() {
  const uint16_t one = 1;
  unsigned char b;
  std::memcpy(&b, &one, 1);
  return b == 1;
}

vm::DType dtype_from_numpy(const py::dtype& dt) {
  const char kind = dt.kind();
  const auto size = dt.itemsize();
  if (kind == 'f' && size == 4) return vm::DType::f32;
  if (kind == 'i' && size == 8) return vm::DType::i64;
  if (kind == 'i' && size == 4) return vm::DType::i32;
  if (kind == 'b' && size == 1) return vm::DType::boolean;
  if (kind == 'i' && size == 1) return vm::DType::i8;
  if (kind == 'f' && size == 2) return vm::DType::f16;
  if (size == 2 && std::string(py::str(dt.attr("name"))) == "bfloat16") return vm::DType::bf16;  // ml_dtypes
  throw vm::Error(fmt::format("unsupported numpy dtype {} (tensorvm takes float32, int64, int32, bool, int8, float16, "
                              "ml_dtypes.bfloat16; cast first)",
                              std::string(py::str(dt))));
}

static py::dtype numpy_dtype(vm::DType t) {
  switch (t) {
    case vm::DType::f32: return py::dtype::of<float>();
    case vm::DType::i64: return py::dtype::of<int64_t>();
    case vm::DType::i32: return py::dtype::of<int32_t>();
    case vm::DType::boolean: return py::dtype::of<bool>();
    case vm::DType::i8: return py::dtype::of<int8_t>();
    case vm::DType::f16: return py::dtype("float16");
    // numpy has no bfloat16: ml_dtypes' (a dependency of the package) is the array type.
    case vm::DType::bf16: return py::dtype::from_args(py::module_::import("ml_dtypes").attr("bfloat16"));
  }
  throw vm::Error("unknown dtype");
}

vm::Tensor to_tensor(const py::array& in) {
  vm::DType dt = dtype_from_numpy(in.dtype());
  // A C-contiguous, aligned array in native byte order is wrapped as it is; anything
  // else is copied once into one (kernels read elements in place, so a big-endian or
  // unaligned buffer would be misread or trap).
  const char order = in.dtype().byteorder();
  const bool native_order = order == '=' || order == '|' ||
                            order == (is_little_endian() ? '<' : '>');
  const bool aligned = reinterpret_cast<uintptr_t>(in.data()) % vm::dtype_size(dt) == 0;
  py::array arr;
  if (native_order && aligned && (in.flags() & py::array::c_style)) {
    arr = in;
  } else {
    arr = py::module_::import("numpy").attr("require")(in, numpy_dtype(dt), py::make_tuple("C", "A"));
  }
  if (!arr) throw vm::Error("could not convert the array to a C-contiguous one");
  if (arr.ndim() > vm::kMaxDims) throw vm::Error(fmt::format("arrays have at most {} dimensions, got {}", vm::kMaxDims, arr.ndim()));
  vm::Shape shape;
  for (py::ssize_t i = 0; i < arr.ndim(); ++i) shape.push_back(arr.shape(i));
  // Hold the array through a heap copy of the handle; release it with the GIL held,
  // because the last tensor reference may die on a thread without it.
  auto* holder = new py::object(arr);
  std::shared_ptr<void> keep(holder, [](void* p) {
    py::gil_scoped_acquire gil;
    delete static_cast<py::object*>(p);
  });
  return vm::Tensor::external(const_cast<void*>(arr.data()), dt, shape, std::move(keep));
}

py::array from_tensor(const vm::Tensor& t0) {
  vm::Tensor t = t0.contiguous();
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  // The capsule owns a tensor copy, hence a reference on the buffer.
  auto* owner = new vm::Tensor(t);
  py::capsule cap(owner, [](void* p) { delete static_cast<vm::Tensor*>(p); });
  py::array arr(numpy_dtype(t.dtype()), shape, {}, t.raw(), cap);
  // A weight (or a view of one) is shared by every run, and mapped read-only: writing
  // through the array would change the program or fault. The capsule base has no
  // buffer to write through, so numpy refuses to make it writeable again.
  if (t.buffer()->is_weight()) arr.attr("flags").attr("writeable") = false;
  return arr;
}

vm::Value to_value(const py::handle& obj) {
  if (obj.is_none()) return vm::Value::none();
  if (py::isinstance<py::bool_>(obj)) return vm::Value::from_bool(obj.cast<bool>());
  if (py::isinstance<py::int_>(obj)) return vm::Value::from_int(obj.cast<int64_t>());
  if (py::isinstance<py::float_>(obj)) return vm::Value::from_float(obj.cast<double>());
  if (py::isinstance<py::str>(obj)) return vm::Value::from_str(obj.cast<std::string>());
  if (py::isinstance<PyObjectHandle>(obj)) return vm::Value(obj.cast<PyObjectHandle&>().obj);
  if (py::isinstance<py::array>(obj)) {
    auto arr = py::reinterpret_borrow<py::array>(obj);
    // numpy scalars arrive as 0-d arrays only when they are arrays; keep them tensors.
    return vm::Value(to_tensor(arr));
  }
  // numpy scalar types (np.int64(3), np.float32(1.5), np.bool_)
  if (py::hasattr(obj, "dtype") && py::hasattr(obj, "item") && !py::isinstance<py::list>(obj)) {
    return to_value(obj.attr("item")());
  }
  if (py::isinstance<py::list>(obj) || py::isinstance<py::tuple>(obj)) {
    auto seq = py::reinterpret_borrow<py::sequence>(obj);
    bool all_ints = seq.size() <= size_t(vm::kMaxDims);
    for (auto item : seq) all_ints = all_ints && py::isinstance<py::int_>(item) && !py::isinstance<py::bool_>(item);
    if (all_ints && py::isinstance<py::list>(obj)) {
      vm::Ints is;
      for (auto item : seq) is.push_back(item.cast<int64_t>());
      return vm::Value::from_ints(is);
    }
    vm::Tuple t;
    for (auto item : seq) t.push_back(to_value(item));
    return vm::Value::from_tuple(std::move(t));
  }
  throw vm::Error(fmt::format("cannot pass a Python {} to tensorvm", std::string(py::str(py::type::handle_of(obj).attr("__name__")))));
}

py::object from_value(const vm::Value& v) {
  switch (v.kind()) {
    case vm::Value::Kind::None: return py::none();
    case vm::Value::Kind::Int: return py::int_(v.as_int());
    case vm::Value::Kind::Float: return py::float_(v.as_float());
    case vm::Value::Kind::Bool: return py::bool_(v.as_bool());
    case vm::Value::Kind::Str: return py::str(v.as_str());
    case vm::Value::Kind::Tensor: return from_tensor(v.as_tensor());
    case vm::Value::Kind::Ints: {
      py::list l;
      for (int64_t x : v.as_ints_raw()) l.append(x);
      return l;
    }
    case vm::Value::Kind::Tuple: {
      const vm::Tuple& t = v.as_tuple();
      py::tuple out(t.size());
      for (size_t i = 0; i < t.size(); ++i) out[i] = from_value(t[i]);
      return out;
    }
    case vm::Value::Kind::Object: return py::cast(PyObjectHandle{v.as_object()});
  }
  return py::none();
}

const char* kind_name(vm::Instr::Kind k) {
  switch (k) {
    case vm::Instr::Kind::Kernel: return "op";
    case vm::Instr::Kind::Call: return "call";
    case vm::Instr::Kind::WhileLoop: return "while_loop";
    case vm::Instr::Kind::Cond: return "cond";
    case vm::Instr::Kind::Emit: return "emit";
    case vm::Instr::Kind::ParamIndexed: return "param";
    case vm::Instr::Kind::Return: return "return";
  }
  return "?";
}

}  // namespace tvm_py
