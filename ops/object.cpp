#include "ops/registry.h"

namespace ops {

void register_object_ops(Registry&) {}

}  // namespace ops
