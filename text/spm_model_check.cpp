#include "text/spm_model_check.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "text/protobuf_wire.h"
#include "text/util.h"

namespace text {
namespace {

// sentencepiece's Normalizer::kMaxTrieResultsSize: the matches it keeps at one place.
constexpr int kMaxResults = 32;

// darts-clone's unit (third_party/darts_clone/darts.h, DoubleArrayUnit).
bool has_leaf(uint32_t u) { return (u >> 8) & 1; }
uint32_t value(uint32_t u) { return u & ((1u << 31) - 1); }
uint32_t label(uint32_t u) { return u & ((1u << 31) | 0xFF); }
uint32_t offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }

// What is wrong with a precompiled_charsmap (a uint32 trie size, the trie's units, then
// the NUL-terminated replacements the leaves point into); empty when it is sound.
//
// commonPrefixSearch reads units[base ^ c] for each byte c of the text, from the root's
// base (units[0]'s offset) on, follows a unit whose label is c to the base
// unit ^ offset(unit), and for a unit with a leaf reads the value at that base. So
// every base a text can reach needs its block of 256 units inside the trie, every
// value must point into the replacements, and no path may pass more than 32 leaves.
// The walk visits each base once (a depth-first search with an explicit stack, since a
// hostile trie can be deep), and a base that leads back to itself is refused: a text
// repeating that loop would match without end.
std::string charsmap_problem(std::string_view blob) {
  if (blob.empty()) return "";
  uint32_t trie_bytes = 0;
  if (blob.size() < 4) return "are shorter than their header";
  std::memcpy(&trie_bytes, blob.data(), 4);
  if (trie_bytes > blob.size() - 4)
    return fmt::format("claim a trie of {} bytes in {} bytes", trie_bytes, blob.size() - 4);
  const size_t n = trie_bytes / 4, replacements = blob.size() - 4 - trie_bytes;
  const char* trie = blob.data() + 4;
  auto unit = [trie](size_t i) {
    uint32_t u;
    std::memcpy(&u, trie + 4 * i, 4);
    return u;
  };
  if (n == 0) return "have an empty trie";
  auto inside = [n](uint32_t base) { return (size_t(base) | 0xFF) < n; };

  enum : uint8_t { kUnseen, kOnPath, kDone };
  std::vector<uint8_t> seen(n, kUnseen), most(n, 0);  // most: leaves on a path from this base (capped)
  struct Frame {
    uint32_t base;
    int next_label = 0;
    int best = 0;
    int pending_leaf = 0;  // of the edge to the child being walked
  };
  const uint32_t root = offset(unit(0));
  if (!inside(root)) return "start outside their trie";
  std::vector<Frame> stack = {{root}};
  seen[root] = kOnPath;
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.next_label == 256) {
      seen[f.base] = kDone;
      most[f.base] = uint8_t(f.best);
      stack.pop_back();
      if (!stack.empty()) {
        Frame& parent = stack.back();
        parent.best = std::max(parent.best, parent.pending_leaf + most[f.base]);
        if (parent.best > kMaxResults) return fmt::format("match more than {} rules at one place", kMaxResults);
      }
      continue;
    }
    const uint32_t c = uint32_t(f.next_label++);
    const uint32_t at = f.base ^ c, u = unit(at);
    if (label(u) != c) continue;
    const uint32_t child = at ^ offset(u);
    if (!inside(child)) return "lead outside their trie";
    const int leaf = has_leaf(u) ? 1 : 0;
    if (leaf && value(unit(child)) >= replacements) return "point past their replacement strings";
    if (seen[child] == kOnPath) return "loop (a repeated text would match without end)";
    if (seen[child] == kDone) {
      f.best = std::max(f.best, leaf + most[child]);
      if (f.best > kMaxResults) return fmt::format("match more than {} rules at one place", kMaxResults);
      continue;
    }
    f.pending_leaf = leaf;
    seen[child] = kOnPath;
    stack.push_back({child});
  }
  return "";
}

}  // namespace

std::string spm_model_problem(std::string_view model) {
  // ModelProto.normalizer_spec (3) and denormalizer_spec (5), each a NormalizerSpec whose
  // precompiled_charsmap is field 2. As protobuf merges a message field given twice,
  // the last charsmap of each wins.
  std::string_view charsmaps[2];
  try {
    Wire w(model);
    uint32_t field, type;
    while (w.next(field, type)) {
      if ((field == 3 || field == 5) && type == 2) {
        Wire spec(w.bytes());
        uint32_t f, t;
        while (spec.next(f, t)) {
          if (f == 2 && t == 2) charsmaps[field == 5] = spec.bytes();
          else spec.skip(t);
        }
      } else {
        w.skip(type);
      }
    }
  } catch (const Error& e) {
    return e.what();
  }
  for (int k = 0; k < 2; ++k) {
    const std::string problem = charsmap_problem(charsmaps[k]);
    if (!problem.empty())
      return fmt::format("its {}normalisation rules (precompiled_charsmap) {}", k ? "de" : "", problem);
  }
  return "";
}

}  // namespace text
