// tensorvm._C.Tokenizer: the text library (text/) for Python, when this build has it
// (_C.has_text). program.tokenizer (pycompiler/program.py) loads one lazily.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#ifdef TENSORVM_HAVE_TEXT
#include "text/tokenizer.h"
#endif

namespace py = pybind11;

void bind_text(py::module_& m) {
#ifdef TENSORVM_HAVE_TEXT
  m.attr("has_text") = true;
  // Bad input (invalid UTF-8, an id outside the vocabulary, a missing tokenizer) is a
  // ValueError, as transformers raises for it.
  py::register_exception<text::Error>(m, "TextError", PyExc_ValueError);
  py::class_<text::Tokenizer, std::shared_ptr<text::Tokenizer>>(m, "Tokenizer")
      .def_static("load",
                  [](const std::string& dir) { return std::shared_ptr<text::Tokenizer>(text::load_tokenizer(dir)); },
                  py::arg("program_dir"), "The tokenizer a program directory carries (meta.json's \"tokenizer\").")
      .def_static("has_tokenizer", &text::has_tokenizer, py::arg("program_dir"))
      .def(
          "encode",
          [](const text::Tokenizer& t, const std::string& s, const std::optional<std::string>& src_lang) {
            py::gil_scoped_release nogil;
            return src_lang ? t.encode_from(s, *src_lang) : t.encode(s);
          },
          py::arg("text"), py::arg("src_lang") = py::none(),
          "The token ids of `text`, special tokens added as transformers' tokenizer adds them; src_lang "
          "(M2M100, NLLB) replaces the source language the program was imported with.")
      .def(
          "encode_batch",
          [](const text::Tokenizer& t, const std::vector<std::string>& texts, const std::optional<std::string>& src_lang) {
            py::gil_scoped_release nogil;
            std::vector<std::vector<int64_t>> out;
            out.reserve(texts.size());
            for (const std::string& s : texts) out.push_back(src_lang ? t.encode_from(s, *src_lang) : t.encode(s));
            return out;
          },
          py::arg("texts"), py::arg("src_lang") = py::none())
      .def("language_id", &text::Tokenizer::language_id, py::arg("lang"),
           "The id of a language's token (M2M100 'fr', NLLB 'fra_Latn'): generate's forced_bos_token_id for it.")
      .def(
          "decoder_prompt",
          [](const text::Tokenizer& t, const std::optional<std::string>& language,
             const std::optional<std::string>& task) { return t.decoder_prompt(language.value_or(""), task.value_or("")); },
          py::arg("language"), py::arg("task") = py::none(),
          "Whisper: the decoder prompt ids for `language` ('fr', 'french') and `task` ('transcribe', "
          "'translate'; None: transcribe), as WhisperForConditionalGeneration.generate builds them; with language "
          "None, -1 where generate puts the language it detects (the program's detect_language gives it).")
      .def(
          "decode",
          [](const text::Tokenizer& t, const std::vector<int64_t>& ids, bool skip) {
            py::gil_scoped_release nogil;
            return t.decode(ids, skip);
          },
          py::arg("ids"), py::arg("skip_special_tokens") = true)
      .def(
          "decode_batch",
          [](const text::Tokenizer& t, const std::vector<std::vector<int64_t>>& rows, bool skip) {
            py::gil_scoped_release nogil;
            std::vector<std::string> out;
            out.reserve(rows.size());
            for (const auto& r : rows) out.push_back(t.decode(r, skip));
            return out;
          },
          py::arg("rows"), py::arg("skip_special_tokens") = true)
      .def_property_readonly("kind", &text::Tokenizer::kind)
      .def("__repr__", [](const text::Tokenizer& t) { return "<tensorvm Tokenizer " + t.kind() + ">"; });
#else
  m.attr("has_text") = false;
#endif
}
