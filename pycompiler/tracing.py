"""Recording: traced values (Var), functions under construction (Trace), and how an
op call, a weight or a call becomes one instruction.

A trace is active while a program function's Python body runs under the builder.
Every value it produces is a Var owned by that trace; a Var can only be used inside
its own function (values cross function boundaries as arguments), which is checked
on every use so the mistake is reported where it happens.
Names are provisional while tracing (`<op>_<n>`, parameters keep their Python
names); `finalize` makes them avoid ops, functions, keywords and IR builtins.
"""
from __future__ import annotations

import keyword
import numbers
import re
from contextvars import ContextVar
from typing import Any, Optional, Union

from . import ir, registry
from .literals import INT64_MAX, INT64_MIN
from .types import compatible, infer_any, literal_type

_stack: ContextVar[tuple["Trace", ...]] = ContextVar("tensorvm_trace", default=())


class TracingError(TypeError):
    """Model code did something the tracer cannot record."""


def current() -> Optional["Trace"]:
    s = _stack.get()
    return s[-1] if s else None


def active() -> bool:
    return bool(_stack.get())


def push(trace: "Trace"):
    return _stack.set(_stack.get() + (trace,))


def pop(token) -> None:
    _stack.reset(token)


# ---------------------------------------------------------------- values


class Var:
    """A value of a function being traced: the result of an instruction or a parameter."""

    __slots__ = ("trace", "type", "name")

    def __init__(self, trace: "Trace", type_: str, name: str):
        self.trace = trace
        self.type = type_
        self.name = name

    def __repr__(self) -> str:
        return f"<tensorvm.Var {self.name}: {self.type} in {self.trace.name}()>"

    # Python control flow on a traced value would bake one branch into the program.
    def __bool__(self):
        raise TracingError(f"{self.name} is a traced value: Python 'if'/'while'/'and'/'or' cannot branch on it; "
                           "use tensorvm.cond(pred, then_fn, else_fn, ...) or tensorvm.while_loop(...)")

    def __iter__(self):
        raise TracingError(f"{self.name} is a traced value and cannot be iterated or unpacked")

    def __len__(self):
        raise TracingError(f"{self.name} is a traced value; its length is not known while tracing")

    def __index__(self):
        raise TracingError(f"{self.name} is a traced value; it has no Python int value while tracing")

    def __int__(self):
        return self.__index__()

    def __float__(self):
        raise TracingError(f"{self.name} is a traced value; it has no Python float value while tracing")

    # Without this numpy would turn a Var into an object array and compute elementwise.
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise TracingError(f"numpy.{ufunc.__name__} got the traced value {self.name}: numpy cannot compute on traced "
                           "values; use tensorvm ops, and make constant arrays weights (T.param)")

    def __array__(self, *a, **k):
        raise TracingError(f"{self.name} is a traced value; numpy cannot compute on it (use tensorvm ops)")

    def __getitem__(self, key):
        raise TracingError(f"{self.name} is a traced value; indexing is not recorded (use an op such as slice/gather)")

    # Operators are sugar for the ops of the same meaning, so the same model code
    # reads naturally in eager mode (numpy) and while tracing.
    def __add__(self, o): return _operator("add", self, o)
    def __radd__(self, o): return _operator("add", o, self)
    def __sub__(self, o): return _operator("sub", self, o)
    def __rsub__(self, o): return _operator("sub", o, self)
    def __mul__(self, o): return _operator("mul", self, o)
    def __rmul__(self, o): return _operator("mul", o, self)
    def __truediv__(self, o): return _operator("div", self, o)
    def __rtruediv__(self, o): return _operator("div", o, self)
    def __matmul__(self, o): return _operator("matmul", self, o)
    def __rmatmul__(self, o): return _operator("matmul", o, self)
    def __neg__(self): return _operator("neg", self)
    def __lt__(self, o): return _operator("lt", self, o)
    def __le__(self, o): return _operator("le", self, o)
    def __gt__(self, o): return _operator("gt", self, o)
    def __ge__(self, o): return _operator("ge", self, o)
    __hash__ = object.__hash__


def _operator(op: str, *args):
    # An operand is a Var, so the call is always recorded, never run eagerly.
    spec = registry.find(op)
    if spec is None:
        raise TracingError(f"operator needs the op '{op}', which the registry does not have")
    return trace_op(spec, args, {})


class TraceableFunction:
    """A Python function that becomes a function of the program (the builder's
    ProgramFunction); passed as an argument it stands for that function."""

    def ensure_traced(self, call_types: Optional[list[str]] = None) -> "Trace":
        raise NotImplementedError


class FuncRef:
    """A function of the program standing as an argument (while_loop/cond bodies)."""

    __slots__ = ("trace",)

    def __init__(self, trace: "Trace"):
        self.trace = trace


class ListArg:
    """An int list argument whose items may be int Vars (shapes such as [b, -1, h])."""

    __slots__ = ("items",)

    def __init__(self, items):
        self.items = tuple(items)


class Instr:
    __slots__ = ("targets", "callee", "args", "kwargs", "unpack")

    def __init__(self, targets, callee, args, kwargs, unpack=False):
        self.targets: list[Var] = targets
        self.callee: Union[str, "Trace"] = callee  # an op/builtin name, or the Trace of a program function
        self.args = args
        self.kwargs = kwargs
        self.unpack = unpack


class Trace:
    """One IR function being (or having been) recorded."""

    def __init__(self, builder, name: str, pyfn=None):
        self.builder = builder
        self.name = name
        self.pyfn = pyfn
        self.params: list[Var] = []
        self.body: list[Instr] = []
        self.returns: Optional[list] = None  # Vars and literals, set when the body returned
        self.return_types: list[str] = []
        # The IR says "-> tuple[...]" only for k > 1 values: a one-value function returns
        # its value bare in both the VM and the replay. `py_tuple` keeps what the Python
        # function returned (a 1-tuple or not) so traced callers get the same shape.
        self.returns_tuple = False
        self.py_tuple = False
        self.weights: list[tuple[str, Union[None, int, str]]] = []  # (template, index | None | "*")
        self._taken: set[str] = set()
        self._counters: dict[str, int] = {}

    @property
    def done(self) -> bool:
        return self.returns is not None

    def __repr__(self) -> str:
        return f"<tensorvm.Trace {self.name}>"

    def _fresh(self, base: str, numbered: bool) -> str:
        base = sanitize(base) or "v"
        if not numbered and base not in self._taken:
            self._taken.add(base)
            return base
        n = self._counters.get(base, 0 if numbered else 1)
        while f"{base}_{n}" in self._taken:
            n += 1
        self._counters[base] = n + 1
        name = f"{base}_{n}"
        self._taken.add(name)
        return name

    def add_param(self, name: str, type_: str) -> Var:
        v = Var(self, type_, self._fresh(name, numbered=False))
        self.params.append(v)
        return v

    def new_var(self, type_: str, hint: str, numbered: bool = True) -> Var:
        return Var(self, type_, self._fresh(hint, numbered))

    def set_returns(self, result: Any) -> None:
        if result is None:
            values, is_tuple = [], False
        elif isinstance(result, tuple):
            values, is_tuple = list(result), True
        elif isinstance(result, list):
            raise TracingError(f"{self.name}: return several values as a tuple, not a list")
        else:
            values, is_tuple = [result], False
        out, types = [], []
        for i, v in enumerate(values):
            a = to_arg(self, v, f"return value {i} of {self.name}()")
            if isinstance(a, FuncRef):
                raise TracingError(f"{self.name}: a function cannot be returned")
            out.append(a)
            types.append(arg_type(a))
        self.returns, self.return_types = out, types
        self.py_tuple = is_tuple
        self.returns_tuple = is_tuple and len(types) > 1

    # ------------------------------------------------------------ finalize

    def to_ir(self, reserved: set[str]) -> ir.Function:
        """The IR function, after renaming any local that would shadow a reserved name."""
        used = set()

        def settle(v: Var):
            if v.name in reserved or v.name in used or keyword.iskeyword(v.name):
                base, n = v.name, 1
                while f"{base}_{n}" in reserved or f"{base}_{n}" in used or f"{base}_{n}" in self._taken:
                    n += 1
                v.name = f"{base}_{n}"
                self._taken.add(v.name)
            used.add(v.name)

        for p in self.params:
            settle(p)
        for ins in self.body:
            for t in ins.targets:
                settle(t)
        params = [ir.Param(p.name, p.type) for p in self.params]
        body: list[ir.Stmt] = []
        for ins in self.body:
            callee = ins.callee if isinstance(ins.callee, str) else ins.callee.name
            body.append(ir.Assign([t.name for t in ins.targets], callee, [to_expr(a) for a in ins.args],
                                  [(k, to_expr(a)) for k, a in ins.kwargs], ins.unpack))
        if self.returns is None:
            raise TracingError(f"function '{self.name}' was never completely traced")
        body.append(ir.Return([to_expr(a) for a in self.returns]))
        return ir.Function(self.name, params, list(self.return_types), self.returns_tuple, body)


_SANITIZE = re.compile(r"[^A-Za-z0-9_]")


def sanitize(name: str) -> str:
    """A valid IR name from any Python name: ASCII word characters, no dunder, no leading digit."""
    s = _SANITIZE.sub("_", name)
    s = s.strip("_") if s.startswith("__") and s.endswith("__") else s
    if s and s[0].isdigit():
        s = "v" + s
    return s


# ---------------------------------------------------------------- arguments


def to_arg(trace: "Trace", value: Any, what: str):
    """A recordable argument: a Var of this trace, a literal, an int list or a function."""
    if isinstance(value, Var):
        check_owner(trace, value, what)
        return value
    if isinstance(value, TraceableFunction):
        return FuncRef(value.ensure_traced())
    if isinstance(value, FuncRef):
        return value
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, numbers.Integral):
        v = int(value)
        if not INT64_MIN <= v <= INT64_MAX:
            raise TracingError(f"{what}: integer {v} does not fit in int64")
        return v if not _is_np_bool(value) else bool(value)
    if _is_np_bool(value):
        return bool(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, (list, tuple)):
        items = []
        for x in value:
            if isinstance(x, Var):
                check_owner(trace, x, what)
                if x.type not in ("int", "Any"):
                    raise TracingError(f"{what}: list items must be ints, but {x.name} is {x.type}")
                items.append(x)
            elif isinstance(x, numbers.Integral) and not isinstance(x, bool):
                items.append(int(x))
            else:
                raise TracingError(f"{what}: lists in the IR hold ints (or int values), got {x!r}")
        if len(items) > 8:
            raise TracingError(f"{what}: lists in the IR have at most 8 items, got {len(items)}")
        return ListArg(items)
    if hasattr(value, "__array__") or type(value).__name__ in ("ndarray", "Tensor"):
        raise TracingError(f"{what}: a concrete array cannot be recorded in the program; constants are weights "
                           "(T.param(name) with the array in the ProgramBuilder's weights) or made by creation ops")
    raise TracingError(f"{what}: cannot record a Python {type(value).__name__} in the IR")


def _is_np_bool(value) -> bool:
    return type(value).__name__ == "bool_" and type(value).__module__ == "numpy"


def check_owner(trace: "Trace", v: Var, what: str) -> None:
    if v.trace is not trace:
        if v.trace.done:
            where = f"the finished trace of '{v.trace.name}'"
        else:
            where = f"function '{v.trace.name}'"
        raise TracingError(f"{what}: {v.name} belongs to {where} and cannot be used in '{trace.name}'; values "
                           "cross function boundaries only as arguments (pass it in, e.g. as a carried value)")


def arg_type(a) -> str:
    if isinstance(a, Var):
        return a.type
    if isinstance(a, ListArg):
        return "ints"
    if isinstance(a, FuncRef):
        return "function"
    return literal_type(a)


def to_expr(a) -> ir.Expr:
    if isinstance(a, Var):
        return ir.Name(a.name)
    if isinstance(a, FuncRef):
        return ir.Name(a.trace.name)
    if isinstance(a, ListArg):
        return ir.IntList(tuple(ir.Name(x.name) if isinstance(x, Var) else x for x in a.items))
    return a


def has_var(args, kwargs) -> bool:
    for a in args:
        if isinstance(a, Var) or (isinstance(a, (list, tuple)) and any(isinstance(x, Var) for x in a)):
            return True
    for a in kwargs.values():
        if isinstance(a, Var) or (isinstance(a, (list, tuple)) and any(isinstance(x, Var) for x in a)):
            return True
    return False


def require_trace(args=(), kwargs=None) -> "Trace":
    t = current()
    if t is None:
        for a in list(args) + list((kwargs or {}).values()):
            if isinstance(a, Var):
                raise TracingError(f"{a.name} is a value of the finished trace of '{a.trace.name}' and can no longer be used")
        raise TracingError("no function is being traced")
    return t


def emit(trace: "Trace", callee, args: list, kwargs: list, out_types: list[str], hint: str,
         unpack: bool = False, numbered: bool = True) -> list[Var]:
    """Appends one instruction; returns its target Vars."""
    targets = [trace.new_var(t, hint, numbered) for t in out_types]
    trace.body.append(Instr(targets, callee, args, kwargs, unpack))
    return targets


# ---------------------------------------------------------------- ops


_KIND_ACCEPTS = {
    "Tensor": ("Tensor",),
    "Tensor?": ("Tensor", "None"),
    "Tensor|scalar": ("Tensor", "int", "float", "bool"),
    "int": ("int",),
    "int?": ("int", "None"),
    "float": ("float", "int"),
    "bool": ("bool",),
    "str": ("str",),
    "ints": ("ints", "int"),
    "ints?": ("ints", "int", "None"),
}


def _check_kind(spec, pname: str, kind: str, a, what: str) -> None:
    accepts = _KIND_ACCEPTS.get(kind)
    if accepts is None:
        return  # Object, Any, or a kind this Python side does not know: the VM checks
    t = "None" if a is None else arg_type(a)
    if t == "Any" or t in accepts:
        return
    shown = f"{a.name} ({t})" if isinstance(a, Var) else f"{t} {a!r}" if not isinstance(a, ListArg) else "a list"
    raise TracingError(f"{spec.name}: argument '{pname}' takes {kind}, got {shown} ({what})")


def trace_op(spec, args: tuple, kwargs: dict):
    trace = require_trace(args, kwargs)
    sig = spec.python_signature()
    try:
        sig.bind(*args, **kwargs)
    except TypeError as e:
        raise TracingError(f"{spec.name}{sig}: {e}") from None
    rec_args = [to_arg(trace, a, f"{spec.name} argument {i}") for i, a in enumerate(args)]
    rec_kwargs = [(k, to_arg(trace, v, f"{spec.name} argument '{k}'")) for k, v in kwargs.items()]
    kinds = {p.name: p for p in spec.params}
    # Kind checks over the recorded form of each argument.
    for i, a in enumerate(rec_args):
        p = _param_for_position(spec, i)
        if p is not None:
            _check_kind(spec, p.name, p.kind, a, f"position {i}")
    for k, a in rec_kwargs:
        if k in kinds:
            _check_kind(spec, k, kinds[k].kind, a, "keyword")
    all_args = rec_args + [a for _, a in rec_kwargs]
    types = [arg_type(a) for a in all_args if a is not None]
    out_types = []
    for o in spec.outputs:
        if o == "same":
            out_types.append(arg_type(all_args[0]) if all_args and all_args[0] is not None else "Any")
        elif o == "Any":
            out_types.append(infer_any(spec.result, types))
        else:
            out_types.append(o)
    outs = emit(trace, spec.name, rec_args, rec_kwargs, out_types, spec.name)
    return outs[0] if len(outs) == 1 else tuple(outs)


def _param_for_position(spec, i: int):
    for j, p in enumerate(spec.params):
        if p.variadic:
            return p
        if j == i:
            return p
    return None


def trace_param(name: Any, index: Any = None) -> Var:
    trace = require_trace((name, index))
    if not isinstance(name, str):
        raise TracingError(f"param: the weight name must be a str, got {type(name).__name__}")
    holes = name.count("{}")
    if index is None:
        if holes:
            raise TracingError(f"param({name!r}): a name with '{{}}' needs an index, e.g. param({name!r}, layer)")
        rec_index, used = None, None
    else:
        if holes != 1:
            raise TracingError(f"param({name!r}, ...): an index needs exactly one '{{}}' in the name")
        rec_index = to_arg(trace, index, "param index")
        if isinstance(rec_index, Var):
            if rec_index.type not in ("int", "Any"):
                raise TracingError(f"param({name!r}, {rec_index.name}): the index must be an int, not {rec_index.type}")
            used = "*"
        elif isinstance(rec_index, int) and not isinstance(rec_index, bool):
            used = rec_index
        else:
            raise TracingError(f"param({name!r}, {index!r}): the index must be an int")
    trace.weights.append((name, used))
    args = [name] if rec_index is None else [name, rec_index]
    return emit(trace, "param", args, [], ["Tensor"], weight_hint(name), numbered=False)[0]


def weight_hint(name: str) -> str:
    """`model.decoder.layers.{}.fc1.weight` -> `fc1_weight`: readable and short."""
    parts = [p for p in name.replace("{}", "").split(".") if p and not p.isdigit()]
    base = "_".join(parts[-2:]) if parts else "w"
    return sanitize(base) or "w"


def check_types(what: str, expected: list[str], got: list[str]) -> None:
    if len(expected) != len(got):
        raise TracingError(f"{what}: expected {len(expected)} values, got {len(got)}")
    for i, (e, g) in enumerate(zip(expected, got)):
        if not compatible(e, g):
            raise TracingError(f"{what}: value {i} is {g}, expected {e}")
