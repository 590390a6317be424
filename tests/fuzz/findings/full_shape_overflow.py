# tensorvm ir 1
def f(x: Tensor) -> Tensor:
    a = full([1, 9223372036854775807], 39, dtype="i64")
    return a
