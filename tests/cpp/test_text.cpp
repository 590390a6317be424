// The text library (text/): UTF-8 checks, loading from a program directory, and a
// byte-level BPE small enough to follow by hand. The parity with transformers'
// tokenizers is tested in tests/python/test_text_marian.py and test_text_bpe.py.
#include <catch2/catch.hpp>

#ifdef TENSORVM_HAVE_TEXT
#include <cstdlib>
#include <functional>
#include <fstream>
#include <string>
#include <unistd.h>

#include "text/tokenizer.h"

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const text::Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A program directory holding only meta.json and a tokenizer.json.
struct TempProgram {
  std::string dir;
  explicit TempProgram(const std::string& tokenizer_entry, const std::string& tokenizer_json = "") {
    char tmpl[] = "/tmp/tensorvm_text_XXXXXX";
    dir = ::mkdtemp(tmpl);
    std::ofstream(dir + "/meta.json") << R"({"format": "tensorvm-ir", "version": 1)" << tokenizer_entry << "}";
    if (!tokenizer_json.empty()) std::ofstream(dir + "/tokenizer.json") << tokenizer_json;
  }
  ~TempProgram() {
    std::remove((dir + "/meta.json").c_str());
    std::remove((dir + "/tokenizer.json").c_str());
    ::rmdir(dir.c_str());
  }
};

// "Ġ" (U+0120) is GPT-2's stand-in for the space byte.
const char* kTinyBpe = R"({
  "added_tokens": [{"id": 5, "content": "<|eot|>", "special": true}],
  "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
  "post_processor": null,
  "decoder": {"type": "ByteLevel"},
  "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "\u0120": 2, "aa": 3, "\u0120b": 4},
            "merges": ["a a", ["\u0120", "b"]]}
})";
const char* kBpeEntry = R"(, "tokenizer": {"kind": "byte-level-bpe", "files": {"tokenizer": "tokenizer.json"}})";

}  // namespace

TEST_CASE("check_utf8 accepts UTF-8 and names the first bad byte", "[text]") {
  text::check_utf8("", "t");
  text::check_utf8("plain, caf\xc3\xa9, \xe6\x9d\xb1, \xf0\x9f\x99\x82", "t");
  CHECK_THAT(error_of([] { text::check_utf8("ab\xff", "enc"); }), Catch::Contains("enc: the text is not valid UTF-8 (byte 2"));
  CHECK_THAT(error_of([] { text::check_utf8("\xc3", "t"); }), Catch::Contains("cut short"));
  CHECK_THAT(error_of([] { text::check_utf8("\xc0\xaf", "t"); }), Catch::Contains("invalid sequence"));      // overlong
  CHECK_THAT(error_of([] { text::check_utf8("\xed\xa0\x80", "t"); }), Catch::Contains("invalid sequence"));  // surrogate
  CHECK_THAT(error_of([] { text::check_utf8("\xf4\x90\x80\x80", "t"); }), Catch::Contains("invalid sequence"));
}

TEST_CASE("load_tokenizer says what is missing or wrong", "[text]") {
  CHECK_THAT(error_of([] { text::load_tokenizer("/nonexistent/dir"); }), Catch::Contains("no meta.json"));
  {
    TempProgram p("");
    CHECK_FALSE(text::has_tokenizer(p.dir));
    CHECK_THAT(error_of([&] { text::load_tokenizer(p.dir); }), Catch::Contains("has no tokenizer"));
  }
  {
    TempProgram p(R"(, "tokenizer": {"kind": "byte-level-bpe", "files": {"tokenizer": "../tokenizer.json"}})");
    CHECK_THAT(error_of([&] { text::load_tokenizer(p.dir); }), Catch::Contains("inside the program directory"));
  }
  {
    TempProgram p(R"(, "tokenizer": {"kind": "wordpiece", "files": {}})");
    CHECK_THAT(error_of([&] { text::load_tokenizer(p.dir); }), Catch::Contains("kind 'wordpiece' is not supported"));
  }
  {
    TempProgram p(R"(, "tokenizer": "yes")");
    CHECK_THAT(error_of([&] { text::load_tokenizer(p.dir); }), Catch::Contains("must be {\"kind\""));
  }
}

TEST_CASE("byte-level BPE: words by the regex, merges by rank, special tokens whole", "[text]") {
  TempProgram p(kBpeEntry, kTinyBpe);
  REQUIRE(text::has_tokenizer(p.dir));
  const auto tok = text::load_tokenizer(p.dir);
  CHECK(tok->kind() == "byte-level-bpe");
  // "aaa b" -> words "aaa", " b"; "aaa" merges its leftmost pair: aa, a; " b" -> Ġb.
  CHECK(tok->encode("aaa b") == std::vector<int64_t>{3, 0, 4});
  CHECK(tok->encode("b<|eot|>a") == std::vector<int64_t>{1, 5, 0});
  CHECK(tok->encode("").empty());
  CHECK(tok->decode({3, 0, 4}) == "aaa b");
  CHECK(tok->decode({1, 5, 0}, true) == "ba");
  CHECK(tok->decode({1, 5, 0}, false) == "b<|eot|>a");
  CHECK_THAT(error_of([&] { tok->encode("c"); }), Catch::Contains("no token for the byte character 'c'"));
  CHECK_THAT(error_of([&] { tok->encode("a\xff"); }), Catch::Contains("not valid UTF-8"));
  CHECK_THAT(error_of([&] { tok->decode({99}); }), Catch::Contains("token id 99 is outside the vocabulary"));
}

// Found by fuzz_tokenizer_json (tests/fuzz/findings.md): the merge table's hash multiplied
// the ids as int64, a signed overflow for ids past 2^63 / 1000003 (UBSan stops the
// sanitizer build's run of this test; the others wrapped silently).
TEST_CASE("byte-level BPE: merges of ids anywhere in int64", "[text]") {
  TempProgram p(kBpeEntry, R"({
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
    "model": {"type": "BPE", "vocab": {"a": 4611686018427387904, "b": -4611686018427387904, "ab": 9223372036854775807},
              "merges": ["a b"]}
  })");
  const auto tok = text::load_tokenizer(p.dir);
  CHECK(tok->encode("ab") == std::vector<int64_t>{9223372036854775807});
  CHECK(tok->encode("ba") == std::vector<int64_t>{-4611686018427387904, 4611686018427387904});
  CHECK(tok->decode({9223372036854775807}) == "ab");
}

// Found by fuzz_tokenizer_json (tests/fuzz/findings.md): a float id (2.27e+109 in the
// vocabulary) went through nlohmann's get<int64_t>, a cast undefined past int64's range
// (UBSan) that elsewhere gave some id silently; 1.5 became 1.
TEST_CASE("BPE: an id that is not an integer is refused, naming the file", "[text]") {
  for (const char* vocab : {R"({"a": 2.27e109, "b": 1})", R"({"a": 1.5, "b": 1})", R"({"a": 18446744073709551615})"}) {
    INFO(vocab);
    TempProgram p(kBpeEntry, std::string(R"({"pre_tokenizer": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": )") +
                                 vocab + R"(, "merges": []}})");
    CHECK_THAT(error_of([&] { text::load_tokenizer(p.dir); }),
               Catch::Contains("tokenizer.json: [json.exception.type_error.302] an id must be an integer within int64"));
  }
}

#endif  // TENSORVM_HAVE_TEXT
