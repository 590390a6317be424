// The facts the registry keeps about each op beyond its signature (OpDef::result and
// OpDef::raises): the Python tracer and passes read them instead of op-name tables of
// their own, so every op must state them and the registry refuses an op that does not.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "test_helpers.h"
#include "vm/custom_ops.h"

using test_helpers::error_of;

namespace {

void identity(ops::OpContext&, const ops::Args& args, vm::Value* outs) { outs[0] = args[0]; }

ops::OpDef def_with(const std::string& name, std::vector<std::string> outputs, ops::ResultRule rule) {
  ops::OpDef d;
  d.name = name;
  d.params = {ops::p_any("x")};
  d.outputs = std::move(outputs);
  d.result = rule;
  d.kernel = &identity;
  return d;
}

bool has_any_output(const ops::OpDef& op) {
  return std::find(op.outputs.begin(), op.outputs.end(), "Any") != op.outputs.end();
}

}  // namespace

TEST_CASE("every built-in op with an Any output has a result rule, and only those", "[registry]") {
  int with_rule = 0;
  for (const ops::OpDef* op : ops::Registry::get().all()) {
    if (!op->builtin) continue;
    INFO(op->name);
    CHECK(has_any_output(*op) == (op->result != ops::ResultRule::Declared));
    with_rule += op->result != ops::ResultRule::Declared;
  }
  CHECK(with_rule > 0);
  CHECK(ops::Registry::get().find("div")->result == ops::ResultRule::Float);
  CHECK(ops::Registry::get().find("eq")->result == ops::ResultRule::Bool);
  CHECK(ops::Registry::get().find("if_none")->result == ops::ResultRule::FirstArg);
}

TEST_CASE("the ops that exist to fail are marked raises", "[registry]") {
  for (const char* name : {"check", "option_index"}) CHECK(ops::Registry::get().find(name)->raises);
  CHECK_FALSE(ops::Registry::get().find("add")->raises);
}

TEST_CASE("register_op refuses a result rule that does not match the outputs", "[registry]") {
  const std::string missing = error_of(
      [] { ops::Registry::register_op(def_with("test_facts_no_rule", {"Any"}, ops::ResultRule::Declared), false); });
  CHECK(missing.find("op 'test_facts_no_rule' has an Any output but no result rule") != std::string::npos);
  const std::string stray = error_of(
      [] { ops::Registry::register_op(def_with("test_facts_stray", {"Tensor"}, ops::ResultRule::Bool), false); });
  CHECK(stray.find("op 'test_facts_stray' has result rule 'bool' but no Any output") != std::string::npos);
  CHECK(ops::Registry::get().find("test_facts_no_rule") == nullptr);
  CHECK(ops::Registry::get().find("test_facts_stray") == nullptr);
}

TEST_CASE("an app's op with an Any output is typed as arithmetic", "[registry]") {
  vm::CustomOp op;
  op.name = "test_facts_custom_any";
  op.params = {ops::p_any("x")};
  op.outputs = {"Any"};
  op.kernel = &identity;
  CHECK(vm::register_op(op).result == ops::ResultRule::Promote);
  op.name = "test_facts_custom_tensor";
  op.outputs = {"Tensor"};
  CHECK(vm::register_op(op).result == ops::ResultRule::Declared);
}
