#include "ops/registry.h"

namespace ops {

void register_reduce_ops(Registry&) {}

}  // namespace ops
