// The attention cache of an encoder-decoder, as a first-class value. Self-attention
// K/V live in storage preallocated for max_len positions per layer, so a decode step
// appends one position (no re-concatenation of the prefix) and reads the filled prefix
// as a strided view. Cross-attention K/V are computed once per source and stored here,
// one row per source sentence: beams of a sentence share them.
#pragma once

#include <vector>

#include "core/value.h"

namespace vm {

class KVCache : public Object {
 public:
  static constexpr const char* kTypeName = "KVCache";
  KVCache(int64_t layers, int64_t batch, int64_t heads, int64_t head_dim, int64_t max_len, Pool* pool);

  std::string_view type_name() const override { return kTypeName; }
  std::string describe() const override;

  // Writes k, v [batch, heads, t, head_dim] at the layer's current length and returns
  // views of everything filled so far, [batch, heads, length, head_dim].
  // A strided k or v is first copied into `pool` (the global pool when null).
  std::pair<Tensor, Tensor> append(int64_t layer, const Tensor& k, const Tensor& v, Pool* pool = nullptr);
  // Row b of every layer's self-attention state becomes old row index[b] (beam search).
  void reorder(const Tensor& index, Pool* pool);
  // Every layer keeps its first `length` self-attention positions (speculative decoding
  // drops rejected proposals). Cross-attention K/V do not depend on positions: untouched.
  void truncate(int64_t length, Pool* pool);
  void set_cross(int64_t layer, const Tensor& k, const Tensor& v);
  std::pair<Tensor, Tensor> cross(int64_t layer) const;
  int64_t length(int64_t layer) const;
  void reset();

  int64_t layers() const { return layers_; }
  int64_t batch() const { return batch_; }
  int64_t max_len() const { return max_len_; }

 private:
  void check_layer(int64_t layer) const;
  std::pair<Tensor, Tensor> views(int64_t layer) const;
  int64_t layers_, batch_, heads_, head_dim_, max_len_;
  std::vector<Tensor> k_, v_;  // [batch, heads, max_len, head_dim] per layer
  std::vector<int64_t> len_;
  std::vector<Tensor> cross_k_, cross_v_;
};

}  // namespace vm
