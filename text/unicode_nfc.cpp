#include "text/unicode_nfc.h"

#ifdef TENSORVM_TEXT_HAVE_ICU
#include <unicode/normalizer2.h>
#include <unicode/unistr.h>
#endif

#include "text/util.h"

namespace text {

namespace {
// Every code point below U+0300 is already NFC (none composes with what precedes it),
// and such text is the common case: skip the conversion for it.
bool below_u0300(std::string_view s) {
  for (unsigned char c : s)
    if (c >= 0xcc) return false;
  return true;
}
}  // namespace

#ifdef TENSORVM_TEXT_HAVE_ICU
bool nfc_available() { return true; }

std::string nfc(std::string_view s) {
  if (below_u0300(s)) return std::string(s);
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = icu::Normalizer2::getNFCInstance(status);
  if (U_FAILURE(status)) fail("NFC: ICU has no NFC normalizer ({})", u_errorName(status));
  const auto in = icu::UnicodeString::fromUTF8(icu::StringPiece(s.data(), int32_t(s.size())));
  const icu::UnicodeString out = n->normalize(in, status);
  if (U_FAILURE(status)) fail("NFC: {}", u_errorName(status));
  std::string r;
  out.toUTF8String(r);
  return r;
}
#else
bool nfc_available() { return false; }

std::string nfc(std::string_view s) {
  if (below_u0300(s)) return std::string(s);
  fail("NFC: this build of the text library has no ICU (libicu-dev)");
}
#endif

}  // namespace text
