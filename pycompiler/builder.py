"""ProgramBuilder: turns Python model functions into an IR program.

    pb = ProgramBuilder(weights=state_dict, meta={"model": "tiny"})

    @pb.function
    def layer(x: Tensor, i: int) -> Tensor: ...

    @pb.function
    def forward(x: Tensor) -> Tensor:
        return layer(layer(x, 0), 1)      # traced once, called twice

    print(pb.program()); pb.save("model.tvm")

A program function is traced the first time it is needed (by program() for entry
functions, or when a traced function calls it) and is then a call instruction
wherever it is called. Outside tracing, calling it just runs the Python.
"""
from __future__ import annotations

import inspect
import keyword
import re
from typing import Any, Callable, Mapping, Optional, Sequence, Union

from . import ir, modes, registry, tracing
from .export import export
from .ir_check import RESERVED
from .tracing import TraceableFunction, Trace, TracingError
from .types import VALUE_TYPES, return_type_names, type_name


def reserved_names() -> set[str]:
    """Names no function or local of a program may take (docs/ir.md, NAME)."""
    return (set(registry.ops()) | set(RESERVED) | set(VALUE_TYPES) | registry.object_types()
            | set(keyword.kwlist) | {"tuple", "Tensor"})


class ProgramFunction(TraceableFunction):
    """A Python function registered with a builder (see the module doc)."""

    def __init__(self, builder: "ProgramBuilder", fn: Callable, arg_types=None, name: Optional[str] = None):
        if not callable(fn):
            raise TypeError(f"ProgramBuilder.function needs a function, got {fn!r}")
        self.builder = builder
        self.fn = fn
        self.arg_types = arg_types
        self.requested_name = name or getattr(fn, "__name__", None) or "fn"
        self.trace: Optional[Trace] = None
        self._tracing = False
        self._sig = inspect.signature(fn)
        for p in self._sig.parameters.values():
            if p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD):
                raise TypeError(f"{self.requested_name}: program functions take positional parameters only "
                                f"('{p.name}' is keyword-only)")
        self.__name__ = self.requested_name
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__wrapped__ = fn

    def __repr__(self) -> str:
        return f"<tensorvm program function {self.name}>"

    @property
    def name(self) -> str:
        return self.trace.name if self.trace else self.requested_name

    # ------------------------------------------------------------ types

    def _declared_types(self, count: Optional[int]) -> list[Optional[str]]:
        """The IR type of each positional parameter, None where only a call can tell."""
        params = [p for p in self._sig.parameters.values() if p.kind != p.VAR_POSITIONAL]
        has_var = any(p.kind == p.VAR_POSITIONAL for p in self._sig.parameters.values())
        n = len(params) if count is None else count
        if count is not None and count > len(params) and not has_var:
            raise TracingError(f"{self.name} takes {len(params)} arguments, got {count}")
        at = self.arg_types
        out: list[Optional[str]] = []
        for i in range(n):
            t = None
            p = params[i] if i < len(params) else None
            if isinstance(at, Mapping) and p is not None and p.name in at:
                t = type_name(at[p.name], f"{self.name}({p.name}): ")
            elif isinstance(at, Sequence) and not isinstance(at, (str, Mapping)) and i < len(at):
                t = type_name(at[i], f"{self.name} argument {i}: ")
            elif p is not None and p.annotation is not inspect.Parameter.empty:
                t = type_name(p.annotation, f"{self.name}({p.name}): ")
            out.append(t)
        return out

    def _param_names(self, count: int) -> list[str]:
        names = [p.name for p in self._sig.parameters.values() if p.kind != p.VAR_POSITIONAL]
        var = next((p.name for p in self._sig.parameters.values() if p.kind == p.VAR_POSITIONAL), "arg")
        return names[:count] + [f"{var}_{i}" for i in range(len(names), count)]

    def _annotated_count(self) -> int:
        if isinstance(self.arg_types, Sequence) and not isinstance(self.arg_types, (str, Mapping)):
            return len(self.arg_types)
        return len([p for p in self._sig.parameters.values() if p.kind != p.VAR_POSITIONAL])

    def ensure_traced(self, call_types: Optional[list[str]] = None) -> Trace:
        """Traces the function unless done; `call_types` fill in types the annotations leave open."""
        if self.trace is not None:
            if call_types is not None:
                declared = [p.type for p in self.trace.params]
                tracing.check_types(f"call of {self.name}()", declared, call_types)
            return self.trace
        if self._tracing:
            raise TracingError(f"{self.name}() calls itself: recursion is not allowed (loops are tensorvm.while_loop)")
        count = len(call_types) if call_types is not None else self._annotated_count()
        declared = self._declared_types(count)
        types = []
        for i, t in enumerate(declared):
            if t is None:
                if call_types is None:
                    pname = self._param_names(count)[i]
                    raise TracingError(f"cannot trace {self.name}(): parameter '{pname}' has no type; annotate it "
                                       "(x: Tensor, n: int, ...) or pass arg_types=")
                t = call_types[i]
            types.append(t)
        if call_types is not None:
            tracing.check_types(f"call of {self.name}()", types, call_types)
        self._tracing = True
        try:
            self.trace = self.builder._trace(self.fn, types, self.requested_name, self._param_names(count),
                                             declared_return=self._sig.return_annotation)
        finally:
            self._tracing = False
        return self.trace

    # ------------------------------------------------------------ calls

    def __call__(self, *args, **kwargs):
        if not (tracing.active() or tracing.has_var(args, kwargs)):
            if self.builder.weights:
                with modes.weights(self.builder.weights):
                    return self.fn(*args, **kwargs)
            return self.fn(*args, **kwargs)
        caller = tracing.require_trace(args, kwargs)
        if caller.builder is not self.builder:
            raise TracingError(f"{self.name}() belongs to another ProgramBuilder than the function being traced")
        try:
            bound = self._sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TracingError(f"{self.name}{self._sig}: {e}") from None
        bound.apply_defaults()
        flat: list[Any] = []
        for p in self._sig.parameters.values():
            if p.kind == p.VAR_POSITIONAL:
                flat.extend(bound.arguments.get(p.name, ()))
            else:
                flat.append(bound.arguments[p.name])
        rec = [tracing.to_arg(caller, a, f"argument {i} of {self.name}()") for i, a in enumerate(flat)]
        trace = self.ensure_traced([tracing.arg_type(a) for a in rec])
        if self._tracing or trace is caller:
            raise TracingError(f"{self.name}() calls itself: recursion is not allowed (loops are tensorvm.while_loop)")
        return call_trace(caller, trace, rec)


def call_trace(caller: Trace, callee: Trace, rec_args: list):
    """Emits a call of a traced function; returns what the Python function returned."""
    if not callee.return_types:
        # A statement binds at least one name, so a call must return something.
        raise TracingError(f"{callee.name}() returns nothing, so it cannot be called from another function of the "
                           "program; return the value (or object) it produces")
    outs = tracing.emit(caller, callee, rec_args, [], list(callee.return_types), callee.name)
    return tuple(outs) if callee.py_tuple else outs[0]


class ProgramBuilder:
    """Collects program functions, traces them, and prints or saves the program."""

    def __init__(self, weights: Optional[Mapping[str, Any]] = None, meta: Optional[Mapping[str, Any]] = None):
        self.weights = weights if weights is not None else {}
        self.meta = dict(meta or {})
        self._entries: list[ProgramFunction] = []
        self._traces: list[Trace] = []
        self._function_names: set[str] = set()
        self._helpers: dict[tuple, Trace] = {}

    def function(self, fn: Optional[Callable] = None, *, arg_types=None, name: Optional[str] = None):
        """Registers `fn` as a function of the program; usable as `@pb.function` or `@pb.function(arg_types=...)`.

        arg_types: a list (by position) or dict (by name) of types overriding the
        annotations: Tensor, int, float, bool, str, "Any" or an object type name.
        """
        if fn is None:
            return lambda f: self.function(f, arg_types=arg_types, name=name)
        if isinstance(fn, ProgramFunction):
            return fn
        pf = ProgramFunction(self, fn, arg_types, name)
        self._entries.append(pf)
        return pf

    @property
    def functions(self) -> dict[str, ProgramFunction]:
        """The registered functions by their Python names (call them eagerly or from traced code)."""
        return {pf.requested_name: pf for pf in self._entries}

    # ------------------------------------------------------------ tracing

    def _reserve_name(self, requested: str, role: str) -> str:
        base = tracing.sanitize(requested) if requested.isidentifier() else ""
        if not base:
            base = role  # lambdas, partials
        reserved = reserved_names()
        name, n = base, 1
        while name in reserved or name in self._function_names:
            name = f"{base}_{n}"
            n += 1
        self._function_names.add(name)
        return name

    def _trace(self, fn: Callable, types: list[str], requested_name: str, param_names: list[str],
               declared_return: Any = inspect.Signature.empty, role: str = "fn") -> Trace:
        trace = Trace(self, self._reserve_name(requested_name, role), fn)
        self._traces.append(trace)
        for pname, t in zip(param_names, types):
            trace.add_param(pname, t)
        token = tracing.push(trace)
        try:
            result = fn(*trace.params)
        finally:
            tracing.pop(token)
        trace.set_returns(result)
        if declared_return is not inspect.Signature.empty:
            want, want_tuple = return_type_names(declared_return, f"{trace.name} return: ")
            tracing.check_types(f"{trace.name}() returns", want, trace.return_types)
            # Declared types win over inferred "Any".
            trace.py_tuple = trace.py_tuple or want_tuple
            trace.return_types = [w if g == "Any" else g for w, g in zip(want, trace.return_types)]
        return trace

    def trace_helper(self, fn: Callable, types: list[str], role: str) -> Trace:
        """Traces a loop or branch body for the given parameter types (once per function and types)."""
        if isinstance(fn, ProgramFunction):
            if fn.builder is not self:
                raise TracingError(f"{fn.name}() belongs to another ProgramBuilder")
            return fn.ensure_traced(list(types))
        if not callable(fn):
            raise TracingError(f"{role}: expected a function, got {fn!r}")
        key = (fn, tuple(types))
        if key in self._helpers:
            return self._helpers[key]
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            sig = None
        names = []
        if sig is not None:
            fixed = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            var = next((p for p in sig.parameters.values() if p.kind == p.VAR_POSITIONAL), None)
            required = [p for p in fixed if p.default is inspect.Parameter.empty]
            if len(required) > len(types) or (len(fixed) < len(types) and var is None):
                raise TracingError(f"{role} {getattr(fn, '__name__', fn)!r} takes {len(fixed)} parameters, "
                                   f"but it is called with {len(types)} values")
            names = [p.name for p in fixed[:len(types)]]
            base = var.name if var is not None else "arg"
            names += [f"{base}_{i}" for i in range(len(names), len(types))]
        else:
            names = [f"arg_{i}" for i in range(len(types))]
        declared = sig.return_annotation if sig is not None else inspect.Signature.empty
        name = getattr(fn, "__name__", "") or role
        trace = self._trace(fn, list(types), name, names, declared_return=declared, role=role)
        self._helpers[key] = trace
        return trace

    # ------------------------------------------------------------ output

    def program(self) -> ir.Module:
        """Traces every registered function not traced yet; returns the IR module (str() is the text)."""
        # Functions typed only by their call sites are traced when first called.
        deferred = []
        for pf in list(self._entries):
            if pf.trace is None and None in pf._declared_types(pf._annotated_count()):
                deferred.append(pf)
            else:
                pf.ensure_traced()
        for pf in deferred:
            pf.ensure_traced()
        reserved = reserved_names() | {t.name for t in self._traces}
        return ir.Module([t.to_ir(reserved) for t in self._traces])

    def text(self) -> str:
        return str(self.program())

    def used_weights(self) -> list[str]:
        """The weight names the program's param() instructions read, in order of first use."""
        self.program()
        names: list[str] = []
        seen: set[str] = set()
        missing: list[str] = []

        def add(n: str):
            if n not in seen:
                seen.add(n)
                names.append(n)

        for t in self._traces:
            for template, index in t.weights:
                if index is None or isinstance(index, int):
                    n = template if index is None else template.replace("{}", str(index))
                    (add if n in self.weights else missing.append)(n)
                else:
                    pat = re.compile(re.escape(template).replace(re.escape("{}"), "(0|[1-9][0-9]*)") + r"\Z")
                    hits = sorted((int(m.group(1)), k) for k in self.weights if (m := pat.match(k)))
                    if not hits:
                        missing.append(template)
                    for _, k in hits:
                        add(k)
        if missing:
            shown = ", ".join(repr(m) for m in missing[:5]) + (" ..." if len(missing) > 5 else "")
            raise KeyError(f"the program uses weights the builder does not have: {shown}")
        return names

    def save(self, path) -> "Any":
        """Writes the program directory (program.py, weights.safetensors, meta.json) atomically."""
        return export(self, path)
