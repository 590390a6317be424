// Loading a sentencepiece model (text/spm_files.h): its normalisation rules are checked
// before libsentencepiece, which walks them unchecked, sees them (text/spm_model_check.h),
// and whatever the library throws is an Error. Real models (the nmt_nfkc tables of the
// trained ones) load in tests/python/test_text_*.py.
#include <catch2/catch.hpp>

#ifdef TENSORVM_HAVE_TEXT
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "test_helpers.h"
#include "text/spm_files.h"
#include "text/spm_model_check.h"
#include "text/tokenizer.h"

namespace {

std::string varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out += char(0x80 | (v & 0x7f));
  return out + char(v);
}

std::string length_delimited(int field, const std::string& payload) {
  return varint(uint64_t(field) << 3 | 2) + varint(payload.size()) + payload;
}

// A ModelProto holding only a normalizer_spec (3) with `charsmap` (field 2).
std::string model_with_charsmap(const std::string& charsmap) {
  return length_delimited(3, length_delimited(2, charsmap));
}

// A precompiled_charsmap: the trie's byte size, its units, then the replacements.
std::string charsmap(const std::vector<uint32_t>& units, const std::string& replacements) {
  std::string out;
  auto put = [&](uint32_t v) {
    for (int i = 0; i < 4; ++i) out += char((v >> (8 * i)) & 0xff);
  };
  put(uint32_t(units.size() * 4));
  for (uint32_t u : units) put(u);
  return out + replacements;
}

// darts-clone's unit fields: the label (the byte that leads to it), the offset to its
// children's block (stored as is below 2^21), a leaf flag, and a leaf's value.
uint32_t edge(uint32_t label, uint32_t offset, bool leaf) { return offset << 10 | (leaf ? 1u << 8 : 0) | label; }
uint32_t leaf_value(uint32_t value) { return 1u << 31 | value; }

constexpr uint32_t kNoEdge = 1u << 31;  // a leaf unit's flag: its label never matches a byte

// A root whose children's block is block 1, then `links` blocks chained by "a" (block k's
// "a" leads to block k + 1), a leaf (a rule for "a" repeated k times) on the first
// `leaves` links: a text of many "a" matches min(links, leaves) rules.
std::vector<uint32_t> chain(int links, int leaves) {
  std::vector<uint32_t> units(size_t(links + 2) * 256, kNoEdge);
  units[0] = edge(0xff, 256, false);
  for (uint32_t k = 1; k <= uint32_t(links); ++k) {
    const uint32_t at = 256 * k ^ 'a', next = 256 * (k + 1);
    units[at] = edge('a', at ^ next, int(k) <= leaves);
    units[next] = leaf_value(0);  // the value a leaf's search reads at the child's base
  }
  return units;
}

}  // namespace

TEST_CASE("spm_model_problem accepts sound rules and names what is wrong with broken ones", "[text]") {
  CHECK(text::spm_model_problem("").empty());
  CHECK(text::spm_model_problem(model_with_charsmap("")).empty());  // no rules: the identity
  CHECK(text::spm_model_problem(model_with_charsmap(charsmap(chain(32, 32), std::string("x\0", 2)))).empty());
  CHECK(text::spm_model_problem(model_with_charsmap(charsmap(chain(40, 32), std::string("x\0", 2)))).empty());

  auto problem = [](const std::string& map) { return text::spm_model_problem(model_with_charsmap(map)); };
  CHECK_THAT(problem(std::string("\x08\0\0", 3)), Catch::Contains("shorter than their header"));
  CHECK_THAT(problem(std::string("\x10\0\0\0", 4) + "abcd"), Catch::Contains("claim a trie of 16 bytes in 4 bytes"));
  CHECK_THAT(problem(charsmap({edge(0, 0, false)}, "")), Catch::Contains("start outside their trie"));
  std::vector<uint32_t> block(256, kNoEdge);
  block[0] = edge(0xff, 0, false);  // the root, its children in its own block
  CHECK(problem(charsmap(block, "")).empty());
  block['a'] = edge('a', 1u << 12, false);  // to a block past the end
  CHECK_THAT(problem(charsmap(block, "")), Catch::Contains("lead outside their trie"));
  block['a'] = edge('a', 'a', false);  // back to the root's block
  CHECK_THAT(problem(charsmap(block, "")), Catch::Contains("loop"));
  CHECK_THAT(problem(charsmap(chain(33, 33), std::string("x\0", 2))), Catch::Contains("more than 32 rules"));
  CHECK_THAT(problem(charsmap(chain(2, 2), "")), Catch::Contains("point past their replacement strings"));
  // The denormalizer's rules (denormalizer_spec, field 5) are checked too.
  CHECK_THAT(text::spm_model_problem(length_delimited(5, length_delimited(2, charsmap({edge(0, 0, false)}, "")))),
             Catch::Contains("its denormalisation rules"));
  CHECK_THAT(text::spm_model_problem("\x1a\x05\x12"), Catch::Contains("truncated protobuf"));
}

// The model of a fuzz_spm input in tests/fuzz/findings/ (a kind byte, the text, a NUL,
// then the model), in a temporary file.
namespace {
struct FindingModel {
  std::string path = "/tmp/tensorvm_spm_XXXXXX";
  explicit FindingModel(const std::string& finding) {
    const std::string input = test_helpers::source_file("tests/fuzz/findings/" + finding);
    const size_t nul = input.find('\0', 1);
    REQUIRE(nul != std::string::npos);
    const int fd = ::mkstemp(path.data());
    REQUIRE(fd >= 0);
    ::close(fd);
    std::ofstream(path, std::ios::binary) << input.substr(nul + 1);
  }
  ~FindingModel() { std::remove(path.c_str()); }
};
}  // namespace

// Found by fuzz_spm (tests/fuzz/findings.md): a leaf's value past the replacement
// strings made libsentencepiece's normaliser read outside the model at encode time
// (a heap-buffer-overflow in Normalizer::NormalizePrefix).
TEST_CASE("load_spm refuses a model whose normalisation rules point outside it", "[text]") {
  FindingModel model("spm_charsmap_value.bin");
  CHECK_THROWS_WITH(text::load_spm(model.path, "t"),
                    Catch::Contains("cannot load the sentencepiece model") &&
                        Catch::Contains("normalisation rules (precompiled_charsmap) point past their replacement"));
}

// Found by fuzz_spm: a piece "\0" made the library's trie builder throw its own
// exception (Darts::Details::Exception) out of Load, past callers that catch text::Error.
TEST_CASE("load_spm reports what the library throws as an Error", "[text]") {
  FindingModel model("spm_nul_piece.bin");
  CHECK_THROWS_AS(text::load_spm(model.path, "t"), text::Error);
  CHECK_THROWS_WITH(text::load_spm(model.path, "t"), Catch::Contains("t: cannot load the sentencepiece model") &&
                                                         Catch::Contains("zero-length key"));
}

#endif  // TENSORVM_HAVE_TEXT
