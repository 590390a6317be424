#include "core/kvcache.h"

#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace vm {

KVCache::KVCache(int64_t layers, int64_t batch, int64_t heads, int64_t head_dim, int64_t max_len, Pool* pool)
    : layers_(layers), batch_(batch), heads_(heads), head_dim_(head_dim), max_len_(max_len) {
  if (layers < 1 || batch < 0 || heads < 1 || head_dim < 1 || max_len < 0)
    fail("invalid cache dimensions: layers {}, batch {}, heads {}, head_dim {}, max_len {}", layers, batch, heads, head_dim,
         max_len);
  for (int64_t l = 0; l < layers; ++l) {
    k_.push_back(Tensor::empty(DType::f32, {batch, heads, max_len, head_dim}, pool));
    v_.push_back(Tensor::empty(DType::f32, {batch, heads, max_len, head_dim}, pool));
  }
  len_.assign(size_t(layers), 0);
  cross_k_.resize(size_t(layers));
  cross_v_.resize(size_t(layers));
}

std::string KVCache::describe() const {
  return fmt::format("KVCache(layers={}, batch={}, heads={}, head_dim={}, max_len={}, length={})", layers_, batch_, heads_,
                     head_dim_, max_len_, len_.empty() ? 0 : len_[0]);
}

void KVCache::check_layer(int64_t layer) const {
  if (layer < 0 || layer >= layers_) fail("layer {} out of range: the cache has {} layers", layer, layers_);
}

std::pair<Tensor, Tensor> KVCache::views(int64_t layer) const {
  const int64_t n = len_[size_t(layer)];
  const Shape shape{batch_, heads_, n, head_dim_};
  const Shape strides{heads_ * max_len_ * head_dim_, max_len_ * head_dim_, head_dim_, 1};
  return {k_[size_t(layer)].view(shape, strides, 0), v_[size_t(layer)].view(shape, strides, 0)};
}

std::pair<Tensor, Tensor> KVCache::append(int64_t layer, const Tensor& k, const Tensor& v, Pool* pool) {
  check_layer(layer);
  for (const Tensor* t : {&k, &v}) {
    if (t->dtype() != DType::f32 || t->ndim() != 4 || t->size(0) != batch_ || t->size(1) != heads_ ||
        t->size(3) != head_dim_)
      fail("k and v must be f32[{}, {}, t, {}], got {} and {}", batch_, heads_, head_dim_, k.describe(), v.describe());
  }
  if (k.shape() != v.shape()) fail("k and v must have the same shape, got {} and {}", k.describe(), v.describe());
  const int64_t t = k.size(2), at = len_[size_t(layer)];
  if (at + t > max_len_) fail("the cache is full: layer {} holds {} of {} positions, cannot append {}", layer, at, max_len_, t);
  const Tensor kc = k.contiguous(pool), vc = v.contiguous(pool);
  float* kd = k_[size_t(layer)].data<float>();
  float* vd = v_[size_t(layer)].data<float>();
  const size_t run = size_t(t * head_dim_) * sizeof(float);
  for (int64_t bh = 0; bh < batch_ * heads_; ++bh) {
    const int64_t dst = (bh * max_len_ + at) * head_dim_, src = bh * t * head_dim_;
    std::memcpy(kd + dst, kc.data<float>() + src, run);
    std::memcpy(vd + dst, vc.data<float>() + src, run);
  }
  len_[size_t(layer)] = at + t;
  return views(layer);
}

void KVCache::reorder(const Tensor& index, Pool* pool) {
  if ((index.dtype() != DType::i64 && index.dtype() != DType::i32) || index.ndim() != 1 || index.size(0) != batch_)
    fail("index must be an int tensor [{}] (one source row per cache row), got {}", batch_, index.describe());
  std::vector<int64_t> rows(static_cast<size_t>(batch_));
  for (int64_t b = 0; b < batch_; ++b) {
    rows[size_t(b)] = index.dtype() == DType::i64 ? index.data<int64_t>()[b] : index.data<int32_t>()[b];
    if (rows[size_t(b)] < 0 || rows[size_t(b)] >= batch_) fail("index {} out of range [0, {})", rows[size_t(b)], batch_);
  }
  // Rows that keep their own history (most, in a beam search) need no copy. Rows that
  // are overwritten while another row still needs their history are saved first.
  std::vector<int64_t> saved_slot(size_t(batch_), -1);
  int64_t saved = 0, moved = 0;
  for (int64_t b = 0; b < batch_; ++b) {
    const int64_t src = rows[size_t(b)];
    if (src == b) continue;
    ++moved;
    if (rows[size_t(src)] != src && saved_slot[size_t(src)] < 0) saved_slot[size_t(src)] = saved++;
  }
  if (moved == 0) return;
  // Where head h of cache row b starts in a layer's [batch, heads, max_len, head_dim] store.
  const auto at = [this](float* store, int64_t b, int64_t h) { return store + (b * heads_ + h) * max_len_ * head_dim_; };
  for (int64_t l = 0; l < layers_; ++l) {
    const int64_t n = len_[size_t(l)];
    const size_t run = size_t(n * head_dim_) * sizeof(float);
    for (Tensor* store : {&k_[size_t(l)], &v_[size_t(l)]}) {
      float* d = store->data<float>();
      // A view handed out by append() or views() that is still alive must keep what it
      // showed: then the rows go to fresh storage, as a functional op would.
      if (store->buffer()->use_count() > 1) {
        Tensor fresh = Tensor::empty(DType::f32, store->shape(), pool);
        for (int64_t b = 0; b < batch_; ++b)
          for (int64_t h = 0; h < heads_; ++h) std::memcpy(at(fresh.data<float>(), b, h), at(d, rows[size_t(b)], h), run);
        *store = std::move(fresh);
        continue;
      }
      // The saved rows, [saved, heads, n, head_dim] (none: nothing to allocate).
      Tensor keep = saved > 0 ? Tensor::empty(DType::f32, {saved, heads_, n, head_dim_}, pool) : Tensor();
      const auto kept = [&](int64_t slot, int64_t h) { return keep.data<float>() + (slot * heads_ + h) * n * head_dim_; };
      for (int64_t b = 0; b < batch_; ++b)
        if (saved_slot[size_t(b)] >= 0)
          for (int64_t h = 0; h < heads_; ++h) std::memcpy(kept(saved_slot[size_t(b)], h), at(d, b, h), run);
      for (int64_t b = 0; b < batch_; ++b) {
        const int64_t src = rows[size_t(b)];
        if (src == b) continue;
        for (int64_t h = 0; h < heads_; ++h)
          std::memcpy(at(d, b, h), saved_slot[size_t(src)] >= 0 ? kept(saved_slot[size_t(src)], h) : at(d, src, h), run);
      }
    }
  }
}

void KVCache::truncate(int64_t length, Pool* pool) {
  if (length < 0) fail("length {} is negative", length);
  for (int64_t l = 0; l < layers_; ++l)
    if (length > len_[size_t(l)])
      fail("length {} is beyond the filled length: layer {} holds {} positions", length, l, len_[size_t(l)]);
  const size_t run = size_t(length * head_dim_) * sizeof(float);
  for (int64_t l = 0; l < layers_; ++l) {
    if (length == len_[size_t(l)]) continue;
    len_[size_t(l)] = length;
    for (Tensor* store : {&k_[size_t(l)], &v_[size_t(l)]}) {
      // The next append overwrites the dropped positions. A view handed out earlier that is
      // still alive shows them: it must keep what it showed, so the kept prefix moves to
      // fresh storage (as in reorder). With no view alive, truncating copies nothing.
      if (store->buffer()->use_count() == 1) continue;
      Tensor fresh = Tensor::empty(DType::f32, store->shape(), pool);
      const float* d = store->data<float>();
      for (int64_t bh = 0; bh < batch_ * heads_; ++bh)
        std::memcpy(fresh.data<float>() + bh * max_len_ * head_dim_, d + bh * max_len_ * head_dim_, run);
      *store = std::move(fresh);
    }
  }
}

void KVCache::set_cross(int64_t layer, const Tensor& k, const Tensor& v) {
  check_layer(layer);
  if (k.dtype() != DType::f32 || k.ndim() != 4 || k.shape() != v.shape() || v.dtype() != DType::f32)
    fail("cross k and v must be f32 [batch, heads, source_len, head_dim] of one shape, got {} and {}", k.describe(),
         v.describe());
  cross_k_[size_t(layer)] = k;
  cross_v_[size_t(layer)] = v;
}

std::pair<Tensor, Tensor> KVCache::cross(int64_t layer) const {
  check_layer(layer);
  if (!cross_k_[size_t(layer)].defined()) fail("no cross-attention K/V set for layer {}", layer);
  return {cross_k_[size_t(layer)], cross_v_[size_t(layer)]};
}

int64_t KVCache::length(int64_t layer) const {
  check_layer(layer);
  return len_[size_t(layer)];
}

void KVCache::reset() {
  std::fill(len_.begin(), len_.end(), 0);
  for (auto& t : cross_k_) t = Tensor();
  for (auto& t : cross_v_) t = Tensor();
}

}  // namespace vm
