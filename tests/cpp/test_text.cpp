// The text library (text/): UTF-8 checks, loading from a program directory, and a
// byte-level BPE small enough to follow by hand. The parity with transformers'
// tokenizers is tested in tests/python/test_text_marian.py and test_text_bpe.py.
#include <catch2/catch.hpp>

#ifdef TENSORVM_HAVE_TEXT
#include <cstdio>
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

namespace {

// tokenizer.json of a sentencepiece-style BPE ("▁" for spaces) with the normalizer and
// decoder steps given.
std::string spm_bpe_json(const std::string& normalizers, const std::string& decoders) {
  return R"({"normalizer": {"type": "Sequence", "normalizers": [)" + normalizers +
         R"(]}, "pre_tokenizer": null, "post_processor": null,
             "decoder": {"type": "Sequence", "decoders": [)" + decoders + R"(]},
             "model": {"type": "BPE", "vocab": {"<unk>": 0, "\u2581": 1, "a": 2}, "merges": [], "unk_token": "<unk>"}})";
}
const char* kSpmBpeEntry = R"(, "tokenizer": {"kind": "sentencepiece", "files": {"tokenizer": "tokenizer.json"}})";
const char* kSpaceToMarker = R"({"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"})";
// "▁" -> 16 "▁": three of them make a text 4096 times longer.
std::string marker_times_16() {
  std::string many;
  for (int i = 0; i < 16; ++i) many += "\\u2581";
  return R"({"type": "Replace", "pattern": {"String": "\u2581"}, "content": ")" + many + R"("})";
}

}  // namespace

TEST_CASE("a tokenizer file may be a symlink inside the program directory, not out of it", "[text]") {
  // A well-formed tokenizer.json outside the program: loading must still refuse it.
  char tmpl[] = "/tmp/tensorvm_text_outside_XXXXXX";
  const std::string outside = ::mkdtemp(tmpl);
  std::ofstream(outside + "/tokenizer.json") << kTinyBpe;
  {
    TempProgram p(kBpeEntry);
    REQUIRE(::symlink((outside + "/tokenizer.json").c_str(), (p.dir + "/tokenizer.json").c_str()) == 0);
    const std::string err = error_of([&] { text::load_tokenizer(p.dir); });
    CHECK_THAT(err, Catch::Contains("tokenizer.json") && Catch::Contains("outside the program directory"));
  }
  {
    TempProgram p(kBpeEntry, kTinyBpe);  // tokenizer.json -> real.json, both inside
    REQUIRE(std::rename((p.dir + "/tokenizer.json").c_str(), (p.dir + "/real.json").c_str()) == 0);
    REQUIRE(::symlink("real.json", (p.dir + "/tokenizer.json").c_str()) == 0);
    CHECK(text::load_tokenizer(p.dir)->encode("aaa b") == std::vector<int64_t>{3, 0, 4});
    std::remove((p.dir + "/real.json").c_str());
  }
  std::remove((outside + "/tokenizer.json").c_str());
  ::rmdir(outside.c_str());
}

TEST_CASE("a tokenizer file over the size cap is an error, not a read", "[text]") {
  TempProgram p(kBpeEntry, kTinyBpe);
  // Sparse: 200 MiB that take no disk and, refused by size, are never read.
  REQUIRE(::truncate((p.dir + "/tokenizer.json").c_str(), off_t(200) << 20) == 0);
  CHECK_THAT(error_of([&] { text::load_tokenizer(p.dir); }),
             Catch::Contains("tokenizer.json: 209715200 bytes, over the 128 MiB limit"));
}

TEST_CASE("sentencepiece BPE: a Strip step must strip one character a counted number of times", "[text]") {
  // An empty content matched forever: decode never returned.
  for (const char* strip : {R"({"type": "Strip", "content": "", "start": -1, "stop": 0})",
                            R"({"type": "Strip", "content": "", "start": 1, "stop": 0})",
                            R"({"type": "Strip", "content": "ab", "start": 1, "stop": 0})"}) {
    TempProgram p(kSpmBpeEntry, spm_bpe_json(kSpaceToMarker, strip));
    CHECK_THAT(error_of([&] { text::load_tokenizer(p.dir); }), Catch::Contains("decoder Strip: content must be one character"));
  }
  TempProgram p(kSpmBpeEntry, spm_bpe_json(kSpaceToMarker, R"({"type": "Strip", "content": " ", "start": -1, "stop": 0})"));
  CHECK_THAT(error_of([&] { text::load_tokenizer(p.dir); }), Catch::Contains("decoder Strip: start must be a count"));
  TempProgram ok(kSpmBpeEntry,
                 spm_bpe_json(kSpaceToMarker, R"({"type": "Strip", "content": "\u2581", "start": 1, "stop": 0})"));
  CHECK(text::load_tokenizer(ok.dir)->decode({1, 2, 1, 2}) == "aa");
}

TEST_CASE("sentencepiece BPE: Replace steps that compound are an error past 16 times the text", "[text]") {
  const std::string grow = marker_times_16();
  TempProgram p(kSpmBpeEntry, spm_bpe_json(std::string(kSpaceToMarker) + ", " + grow + ", " + grow + ", " + grow, ""));
  const auto tok = text::load_tokenizer(p.dir);
  // 100 spaces: 300 bytes of "▁", then 4800 (within 16 x 100 + 4096), then 76800 (not).
  CHECK_THAT(error_of([&] { tok->encode(std::string(100, ' ')); }),
             Catch::Contains("step 3 of tokenizer.json's normalizer would grow a text of 100 bytes to 76800 bytes"));
  CHECK(tok->encode("a").size() == 1);
  TempProgram d(kSpmBpeEntry, spm_bpe_json(kSpaceToMarker, grow + ", " + grow + ", " + grow));
  const auto dec = text::load_tokenizer(d.dir);
  CHECK_THAT(error_of([&] { dec->decode(std::vector<int64_t>(100, 1)); }),
             Catch::Contains("step 2 of tokenizer.json's decoder would grow a text of 300 bytes to 76800 bytes"));
  CHECK(dec->decode({2}) == "a");
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
