// Rules for what may stand as a NAME in the IR (docs/ir.md, "Grammar").
#pragma once

#include <string_view>

namespace ir {

// True for Python's hard keywords (soft keywords like `match` are ordinary names).
bool is_python_keyword(std::string_view s);

// `__x__`: Python gives these special meaning, so the IR forbids them everywhere.
bool is_dunder(std::string_view s);

// Names the IR itself gives a meaning (builtins and float literals): a function,
// parameter or local of that name would shadow it in the Python replay.
bool is_reserved_name(std::string_view s);

// The callees the IR itself defines (besides ops and the program's functions).
bool is_builtin_callee(std::string_view s);

// Types every program may name (object types such as KVCache come from the op
// registry); a function of that name would shadow the type in the Python replay.
bool is_value_type(std::string_view s);

}  // namespace ir
