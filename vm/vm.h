// The embedding API in one include:
//   auto program = vm::Program::load("model.tvm");
//   vm::Session session(program);
//   auto outputs = vm::run(session, "generate", {vm::Value(ids)});
#pragma once

#include "core/arena.h"
#include "vm/memory_report.h"
#include "vm/program.h"
#include "vm/session.h"
#include "vm/session_pool.h"
#include "core/tensor.h"
#include "core/value.h"
