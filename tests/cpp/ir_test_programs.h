// IR texts shared by the parser and printer tests.
#pragma once

namespace ir_test {

// Canonical text using every construct of docs/ir.md.
inline constexpr const char* kRichProgram = R"IR(# tensorvm ir 1
def ffn(x: Tensor, layer: int) -> Tensor:
    w1 = param("model.decoder.layers.{}.fc1.weight", layer)
    b1 = param("model.decoder.layers.{}.fc1.bias", layer)
    h = linear(x, w1, b1)
    a = silu(h)
    return a

def count_cond(i: int, acc: Tensor, limit: int) -> bool:
    c = lt(i, limit)
    return c

def count_body(i: int, acc: Tensor, limit: int) -> tuple[int, Tensor, int]:
    j = add(i, 1)
    acc2 = add(acc, 1.0)
    return j, acc2, limit

def count_to(limit: int) -> tuple[int, Tensor]:
    i0 = add(0, 0)
    acc0 = zeros([2, 3], dtype="f32")
    i, acc, n = while_loop(count_cond, count_body, i0, acc0, limit)
    return i, acc

def pick(p: bool, x: Tensor) -> Tensor:
    y = cond(p, ffn_zero, ffn_one, x)
    return y

def ffn_zero(x: Tensor) -> Tensor:
    y = ffn(x, 0)
    return y

def ffn_one(x: Tensor) -> Tensor:
    y = ffn(x, 1)
    return y

def literals(x: Tensor, n: int) -> tuple[Tensor]:
    a = f(x, -1, 9223372036854775807, -9223372036854775808, 0)
    b = f(a, 1.0, -0.0, 0.1, 1e-05, 1e+16, -2.5e-300, 5e-324, inf, -inf, nan)
    c = f(b, True, False, None, "s", "q\"\\\n\t\r\x01\x7f", "é'", "")
    d = reshape(c, [1, -1, n, 0, -9223372036854775808, 9223372036854775807, n, 2])
    e = reshape(d, [], k=[n], flag=True, scale=0.125, name="x", none=None, fn=ffn)
    r, = unpack_one(e)
    return r

def effects(cache: KVCache, x: Any) -> None:
    cache2 = kv_append(cache, 0, x, x)
    go = emit("tokens", x)
    return

def no_return(cache: KVCache) -> None:
    cache2 = kv_reset(cache)

def no_params() -> tuple[int, float, bool, str, Any]:
    a, b, c, d, e = constants()
    return a, 2.5, True, "done", None

def returns_literals() -> tuple[int, int]:
    return -3, 4
)IR";

// The example of docs/ir.md, which is not canonical only in using op names.
inline constexpr const char* kDocExample = R"IR(# tensorvm ir 1
def ffn(x: Tensor, layer: int) -> Tensor:
    w1 = param("model.decoder.layers.{}.fc1.weight", layer)
    b1 = param("model.decoder.layers.{}.fc1.bias", layer)
    h = linear(x, w1, b1)
    a = silu(h)
    w2 = param("model.decoder.layers.{}.fc2.weight", layer)
    b2 = param("model.decoder.layers.{}.fc2.bias", layer)
    y = linear(a, w2, b2)
    return y

def count_to(limit: int) -> tuple[int, Tensor]:
    i0 = add(0, 0)
    acc0 = zeros([2, 3], dtype="f32")
    i, acc = while_loop(count_cond, count_body, i0, acc0, limit)
    return i, acc

def count_cond(i: int, acc: Tensor, limit: int) -> bool:
    c = lt(i, limit)
    return c

def count_body(i: int, acc: Tensor, limit: int) -> tuple[int, Tensor]:
    j = add(i, 1)
    acc2 = add(acc, 1.0)
    return j, acc2
)IR";

}  // namespace ir_test
