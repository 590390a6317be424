// Whisper's tokenizer (kind "whisper-bpe"), as transformers' WhisperTokenizer(Fast): the
// byte-level BPE of its tokenizer.json (the template there adds the task prompt,
// <|startoftranscript|> <|xx|> <|transcribe|> <|notimestamps|>, and <|endoftext|>), and
// Whisper's decode: with skip_special_tokens a previous-text prompt (<|startofprev|> ...)
// is dropped up to <|startoftranscript|>, and timestamps (<|1.24|>) never reach the text.
// With meta.json's "prompt" entry (import-hf writes it from generation_config.json), it also
// builds the decoder prompt for a language and task chosen at run time (decoder_prompt).
#pragma once

#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "text/tokenizer.h"

namespace text {

// `files`: tokenizer (tokenizer.json), config (tokenizer_config.json, optional).
// `prompt`: null, or {"languages": ["<|en|>", ...] (generation_config's lang_to_id),
// "tasks": ["transcribe", ...] (task_to_id), "no_timestamps": bool, "multilingual": bool,
// "language_names": [["french", "fr"], ...] (transformers' TO_LANGUAGE_CODE)}.
// `template_ids`: as load_byte_bpe's (transformers' WhisperTokenizer builds its prefix from
// tokenizer_config.json's language, task and predict_timestamps).
std::unique_ptr<Tokenizer> load_whisper(const std::map<std::string, std::string>& files,
                                        const nlohmann::json& prompt = nullptr,
                                        const nlohmann::json& template_ids = nullptr);

}  // namespace text
