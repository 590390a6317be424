// Whisper's tokenizer (kind "whisper-bpe"), as transformers' WhisperTokenizer(Fast): the
// byte-level BPE of its tokenizer.json (the template there adds the task prompt,
// <|startoftranscript|> <|xx|> <|transcribe|> <|notimestamps|>, and <|endoftext|>), and
// Whisper's decode: with skip_special_tokens a previous-text prompt (<|startofprev|> ...)
// is dropped up to <|startoftranscript|>, and timestamps (<|1.24|>) never reach the text.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "text/tokenizer.h"

namespace text {

// `files`: tokenizer (tokenizer.json), config (tokenizer_config.json, optional).
std::unique_ptr<Tokenizer> load_whisper(const std::map<std::string, std::string>& files);

}  // namespace text
