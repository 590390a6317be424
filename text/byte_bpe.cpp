#include "text/byte_bpe.h"

#include "text/util.h"

namespace text {

std::unique_ptr<Tokenizer> load_byte_bpe(const std::map<std::string, std::string>&) {
  fail("byte-level BPE tokenizers are not implemented yet");
}

}  // namespace text
