// A seeded random generator as a first-class value (sampling in generate).
//
// splitmix64 (Steele, Lea, Flood 2014): the state is a 64-bit counter advanced by a
// fixed odd constant per draw and each output is a bijective mix of the counter, so
// the stream is a pure function of the seed: the same on every run, machine and
// compiler (only integer arithmetic; floats are made from the top bits exactly).
// reference/generation.py computes the same stream in numpy, so a replay of a
// program draws the same numbers as the VM. It is NOT torch's generator: a seed does
// not reproduce torch.manual_seed's samples.
#pragma once

#include <cstdint>

#include "core/value.h"

namespace vm {

class Rng : public Object {
 public:
  static constexpr const char* kTypeName = "Rng";
  static constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;

  explicit Rng(uint64_t seed) : state_(seed) {}
  std::string_view type_name() const override { return kTypeName; }
  std::string describe() const override;

  static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t next_u64() { return mix(state_ += kGamma); }
  // Uniform in [0, 1): 53 random bits (double) or 24 (float), exactly representable.
  double next_double() { return double(next_u64() >> 11) * 0x1.0p-53; }
  float next_float() { return float(next_u64() >> 40) * 0x1.0p-24f; }
  uint64_t state() const { return state_; }

 private:
  uint64_t state_;
};

}  // namespace vm
