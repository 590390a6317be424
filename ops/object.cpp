// Ops on objects (the KV cache) and on optional values. Ops that only mutate an
// object return the same handle, so the order of effects is visible in SSA.
#include "ops/registry.h"
#include "ops/select.h"
#include "core/kvcache.h"

namespace ops {

using vm::KVCache;

static void kv_cache(OpContext& ctx, const Args& a, Value* out) {
  out[0] = Value(vm::Ref<vm::Object>(new KVCache(a.i64(0), a.i64(1), a.i64(2), a.i64(3), a.i64(4), ctx.pool)));
}

static void kv_append(OpContext& ctx, const Args& a, Value* out) {
  auto [k, v] = a.object<KVCache>(0).append(a.i64(1), a.tensor(2), a.tensor(3), ctx.pool);
  out[0] = Value(std::move(k));
  out[1] = Value(std::move(v));
}

static void kv_reorder(OpContext& ctx, const Args& a, Value* out) {
  a.object<KVCache>(0).reorder(a.tensor(1), ctx.pool);
  out[0] = a[0];
}

static void kv_truncate(OpContext& ctx, const Args& a, Value* out) {
  a.object<KVCache>(0).truncate(a.i64(1), ctx.pool);
  out[0] = a[0];
}

static void kv_set_cross(OpContext&, const Args& a, Value* out) {
  a.object<KVCache>(0).set_cross(a.i64(1), a.tensor(2), a.tensor(3));
  out[0] = a[0];
}

static void kv_cross(OpContext&, const Args& a, Value* out) {
  auto [k, v] = a.object<KVCache>(0).cross(a.i64(1));
  out[0] = Value(std::move(k));
  out[1] = Value(std::move(v));
}

static void kv_length(OpContext&, const Args& a, Value* out) {
  out[0] = Value::from_int(a.object<KVCache>(0).length(a.i64(1)));
}

static void kv_reset(OpContext&, const Args& a, Value* out) {
  a.object<KVCache>(0).reset();
  out[0] = a[0];
}

static void if_none(OpContext&, const Args& a, Value* out) { out[0] = a.is_none(0) ? a[1] : a[0]; }

void register_object_ops(Registry& r) {
  r.add(TENSORVM_OP("kv_cache", kv_cache), "kv cache",
        {p_int("layers"), p_int("batch"), p_int("heads"), p_int("head_dim"), p_int("max_len")}, {"KVCache"},
        "A new KV cache: self-attention storage for max_len positions per layer ([batch, heads, max_len, head_dim], "
        "preallocated) and empty cross-attention slots.");
  r.add(TENSORVM_OP("kv_append", kv_append), "kv cache",
        {p_object("cache"), p_int("layer"), p_tensor("k"), p_tensor("v")}, {"Tensor", "Tensor"},
        "Writes k, v [batch, heads, t, head_dim] after the layer's filled positions and returns views of all filled "
        "positions, [batch, heads, length, head_dim] (strided: no copy). Error when max_len would be exceeded.");
  r.add(TENSORVM_OP("kv_reorder", kv_reorder), "kv cache", {p_object("cache"), p_tensor("index")}, {"KVCache"},
        "Beam reordering: self-attention row b of every layer becomes old row index[b]. Cross-attention K/V are not "
        "touched (they are per source sentence, shared by its beams). Returns the cache.");
  r.add(TENSORVM_OP("kv_truncate", kv_truncate), "kv cache", {p_object("cache"), p_int("length")}, {"KVCache"},
        "Keeps the first length self-attention positions of every layer and drops the rest (speculative decoding: "
        "after verifying k proposals at [p, p+k), keep p + accepted + 1). length == the filled length is a no-op; "
        "error when it is negative or beyond any layer's filled length. Cross-attention K/V are not touched. Views "
        "from earlier kv_append calls keep what they showed. Returns the cache.");
  r.add(TENSORVM_OP("kv_set_cross", kv_set_cross), "kv cache",
        {p_object("cache"), p_int("layer"), p_tensor("k"), p_tensor("v")}, {"KVCache"},
        "Stores the cross-attention K/V [batch, heads, source_len, head_dim] of a layer. Returns the cache.");
  r.add(TENSORVM_OP("kv_cross", kv_cross), "kv cache", {p_object("cache"), p_int("layer")}, {"Tensor", "Tensor"},
        "The cross-attention K/V stored for a layer.");
  r.add(TENSORVM_OP("kv_length", kv_length), "kv cache",
        {p_object("cache"), p_int("layer", 0)}, {"int"}, "Positions filled in a layer's self-attention cache.");
  r.add(TENSORVM_OP("kv_reset", kv_reset), "kv cache",
        {p_object("cache")}, {"KVCache"}, "Empties the cache (lengths 0, cross K/V dropped). Returns the cache.");
  r.add(TENSORVM_OP("if_none", if_none), "values", {p_any("x"), p_any("default")}, {"Any"},
        "x, or default when x is None.", ResultRule::FirstArg);
}

}  // namespace ops
