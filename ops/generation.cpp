// Ops for generation loops: a seeded random generator (rng, rand, multinomial), the
// candidates of prompt-lookup decoding (prompt_lookup), and two checks on run-time
// options (option_index, check), so that a program can take transformers-style options
// as inputs and reject the ones it cannot honour.
#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "ops/registry.h"
#include "ops/select.h"
#include "core/rng.h"

namespace ops {

using vm::Rng;

namespace {

void rng_op(OpContext&, const Args& a, Value* out) {
  out[0] = Value(vm::Ref<vm::Object>(new Rng(uint64_t(a.i64(0)))));
}

void rand_op(OpContext& ctx, const Args& a, Value* out) {
  Rng& g = a.object<Rng>(0);
  const Ints s = a.ints(1);
  for (int64_t d : s)
    if (d < 0) vm::fail("shape must not have negative dims, got {}", s.shape().str());
  Tensor y = ctx.empty(vm::DType::f32, s.shape());
  float* p = y.data<float>();
  for (int64_t i = 0, n = y.numel(); i < n; ++i) p[i] = g.next_float();
  out[0] = Value(std::move(y));
}

// One row: `n` draws without replacement, each by inverse CDF over the entries not
// drawn yet, summed in double from index 0 (the numpy reference does the same sums).
// Once every non-zero weight is drawn, further draws take the zero-weight indices in
// increasing order (torch.multinomial also returns zero-weight categories then).
void draw_row(const float* p, int64_t V, int64_t n, Rng& g, int64_t* dst, std::vector<uint8_t>& taken, int64_t row) {
  for (int64_t j = 0; j < V; ++j) {
    const float x = p[j];
    if (!(x >= 0.0f) || std::isinf(x)) vm::fail("probs must be finite and non-negative, got {} (row {}, index {})", x, row, j);
  }
  std::fill(taken.begin(), taken.end(), uint8_t(0));
  for (int64_t s = 0; s < n; ++s) {
    double total = 0.0;
    for (int64_t j = 0; j < V; ++j)
      if (!taken[size_t(j)]) total += double(p[j]);
    int64_t pick = -1;
    if (total > 0.0) {
      const double target = g.next_double() * total;
      double cum = 0.0;
      int64_t last = -1;
      for (int64_t j = 0; j < V; ++j) {
        if (taken[size_t(j)] || p[j] <= 0.0f) continue;
        cum += double(p[j]);
        last = j;
        if (cum > target) {
          pick = j;
          break;
        }
      }
      if (pick < 0) pick = last;  // target rounded up to the total
    } else {
      for (int64_t j = 0; pick < 0; ++j)
        if (!taken[size_t(j)]) pick = j;
    }
    taken[size_t(pick)] = 1;
    dst[s] = pick;
  }
}

void multinomial_op(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& probs = a.tensor(0);
  Rng& g = a.object<Rng>(1);
  const int64_t n = a.i64(2);
  if (probs.dtype() != vm::DType::f32 || (probs.ndim() != 1 && probs.ndim() != 2))
    vm::fail("probs must be a 1-D or 2-D f32 tensor, got {}", probs.describe());
  const int64_t rows = probs.ndim() == 2 ? probs.shape()[0] : 1;
  const int64_t V = probs.shape()[probs.ndim() - 1];
  if (n < 1 || n > V) vm::fail("num_samples must be in [1, {}] (the number of categories), got {}", V, n);
  Tensor y = probs.ndim() == 2 ? ctx.empty(vm::DType::i64, {rows, n}) : ctx.empty(vm::DType::i64, {n});
  std::vector<uint8_t> taken(size_t(V), 0);
  const float* p = probs.data<float>();
  int64_t* dst = y.data<int64_t>();
  for (int64_t r = 0; r < rows; ++r) draw_row(p + r * V, V, n, g, dst + r * n, taken, r);
  out[0] = Value(std::move(y));
}

// ---- prompt lookup

// transformers' PromptLookupCandidateGenerator rule: for n from min(max_ngram_size, L - 1)
// down to 1, the leftmost earlier occurrence of the last n tokens whose continuation is not
// empty; its next (at most num_tokens) tokens. Their loop costs up to L x n^2 comparisons
// per call on hostile rows, so the kernel finds the same answer in linear time: suffix[e]
// is how many tokens ending at e agree with the row's end (a Z-function of the reversed
// row); the chosen n is the largest min(suffix[e], n_max) over the ends e <= L - 2 (a match
// ending at L - 1 is the query itself, with nothing after it), and the chosen match the
// leftmost end reaching it.
void prompt_lookup_op(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& t = a.tensor(0);
  const int64_t max_ngram = a.i64(1), num_tokens = a.i64(2);
  if (t.dtype() != vm::DType::i64 || t.ndim() != 1) vm::fail("tokens must be a 1-D i64 tensor, got {}", t.describe());
  if (max_ngram < 1) vm::fail("max_ngram_size must be at least 1, got {}", max_ngram);
  if (num_tokens < 0) vm::fail("num_tokens must not be negative, got {}", num_tokens);
  const Tensor c = t.contiguous();
  const int64_t* x = c.data<int64_t>();
  const int64_t L = t.numel();
  const int64_t n_max = std::min(max_ngram, L - 1);
  int64_t best_n = 0, best_end = -1;
  if (n_max >= 1 && num_tokens >= 1) {
    // z[i]: the longest common prefix of r and r[i..], r the reversed row (r[i] = x[L-1-i])
    std::vector<int64_t> z(size_t(L), 0);
    auto r = [&](int64_t i) { return x[L - 1 - i]; };
    for (int64_t i = 1, lo = 0, hi = 0; i < L; ++i) {
      int64_t k = i < hi ? std::min(hi - i, z[size_t(i - lo)]) : 0;
      while (i + k < L && r(k) == r(i + k)) ++k;
      z[size_t(i)] = k;
      if (i + k > hi) lo = i, hi = i + k;
    }
    for (int64_t e = 0; e + 1 < L; ++e) {  // an end at e is r's index L - 1 - e >= 1
      const int64_t n = std::min(z[size_t(L - 1 - e)], n_max);
      if (n > best_n) best_n = n, best_end = e;
    }
  }
  const int64_t start = best_end + 1;
  const int64_t count = best_n > 0 ? std::min(num_tokens, L - start) : 0;
  Tensor y = ctx.empty(vm::DType::i64, {count});
  std::copy(x + start, x + start + count, y.data<int64_t>());
  out[0] = Value(std::move(y));
}

// ---- options

bool same_option(const Value& x, const Value& c) {
  if (x.is_none() || c.is_none()) return x.is_none() && c.is_none();
  if (x.is_bool() || c.is_bool()) return x.is_bool() && c.is_bool() && x.as_bool() == c.as_bool();
  if (x.is_str() || c.is_str()) return x.is_str() && c.is_str() && x.as_str() == c.as_str();
  if (x.is_int() && c.is_int()) return x.as_int() == c.as_int();
  if ((x.is_int() || x.is_float()) && (c.is_int() || c.is_float())) return x.as_float() == c.as_float();
  return false;
}

std::string literal(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return v.as_bool() ? "True" : "False";
    case Value::Kind::Int: return std::to_string(v.as_int());
    case Value::Kind::Float: return fmt::format("{}", v.as_float());
    case Value::Kind::Str: return "\"" + v.as_str() + "\"";
    default: return v.describe();
  }
}

void option_index_op(OpContext&, const Args& a, Value* out) {
  const Value& x = a[0];
  const int n = a.variadic_count();
  std::string shown;
  for (int k = 0; k < n; ++k) {
    if (same_option(x, a.variadic(k))) {
      out[0] = Value::from_int(k);
      return;
    }
    shown += (k ? ", " : "") + literal(a.variadic(k));
  }
  vm::fail("{} must be one of {}, got {}", a.str(1), shown, literal(x));
}

void check_op(OpContext&, const Args& a, Value* out) {
  const Value& ok = a[0];
  bool good;
  if (ok.is_bool()) {
    good = ok.as_bool();
  } else if (ok.is_tensor() && ok.as_tensor().dtype() == vm::DType::boolean && ok.as_tensor().numel() == 1) {
    good = *static_cast<const uint8_t*>(ok.as_tensor().contiguous().raw()) != 0;
  } else {
    vm::fail("ok must be a bool or a one-element bool tensor, got {}", ok.describe());
  }
  if (!good) vm::fail("{}", a.str(1));
  out[0] = Value::from_bool(true);
}

}  // namespace

void register_generation_ops(Registry& r) {
  r.add(TENSORVM_OP("rng", rng_op), "random", {p_int("seed")}, {"Rng"},
        "A new random generator seeded with `seed` (splitmix64: 64-bit counter, bijective mix). The stream is a pure "
        "function of the seed, the same on every run and machine, and the numpy reference draws the same numbers; it "
        "is not torch's stream.");
  r.add(TENSORVM_OP("rand", rand_op), "random", {p_object("rng"), p_ints("shape")}, {"Tensor"},
        "f32 numbers uniform in [0, 1) of `shape` from the generator (24 random bits each, row-major order); advances "
        "the generator in place.");
  r.add(TENSORVM_OP("multinomial", multinomial_op), "random",
        {p_tensor("probs"), p_object("rng"), p_int("num_samples", 1)}, {"Tensor"},
        "Indices drawn from the rows of f32 probs [rows, V] (or [V]) without replacement (like torch.multinomial with "
        "replacement=False): i64 [rows, num_samples] in draw order. Weights need not sum to 1; each draw is u * total "
        "against a running sum in double from index 0, u from the generator (53 bits), skipping drawn indices; once "
        "every non-zero weight is drawn, the rest are the zero-weight indices in increasing order (no draw). A negative "
        "or non-finite weight, or num_samples above the number of categories, is an error.");
  r.add(TENSORVM_OP("prompt_lookup", prompt_lookup_op), "generation",
        {p_tensor("tokens"), p_int("max_ngram_size"), p_int("num_tokens")}, {"Tensor"},
        "Prompt-lookup candidates (transformers' PromptLookupCandidateGenerator): for n from min(max_ngram_size, "
        "L - 1) down to 1, the leftmost earlier occurrence in tokens (i64 [L]) of its last n tokens that has tokens "
        "after it, and those tokens, at most num_tokens: i64 [count], empty when nothing matches. Linear time in L. "
        "max_ngram_size < 1 or num_tokens < 0 is an error.");
  Param choices = p_any("choices");
  choices.variadic = true;
  r.add(TENSORVM_OP("option_index", option_index_op), "values", {p_any("x"), choices, p_str("what", "value")}, {"int"},
        "The position of x among the choices (same kind and value: None, bool, int/float, str), e.g. "
        "option_index(early_stopping, False, True, \"never\", what=\"early_stopping\"); an error naming `what` and the "
        "choices when none matches.")
      .raises = true;
  r.add(TENSORVM_OP("check", check_op), "values", {p_any("ok"), p_str("message")}, {"bool"},
        "True if ok (a bool or a one-element bool tensor) holds; otherwise an error with `message`. Validates run-time "
        "options inside a program.")
      .raises = true;
}

}  // namespace ops
