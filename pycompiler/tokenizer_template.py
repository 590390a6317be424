"""The special tokens transformers 5 puts around a text where its tokenizer class builds
them at load instead of running tokenizer.json's post_processor, as meta.json's
tokenizer "template" ({"prefix": [ids], "suffix": [ids]}) for the C++ text library:

- WhisperTokenizer always: <|startoftranscript|>, the language and task of
  tokenizer_config.json, <|notimestamps|> unless predict_timestamps, then the eos token;
- RobertaTokenizer (BART) always: cls_token before, sep_token after.

The other classes run tokenizer.json's post_processor (transformers 5 drops
tokenizer_config.json's add_bos_token / add_eos_token when there is a tokenizer.json).

    template_ids("whisper-bpe", tj, config)   # {"prefix": [50258, 50363], "suffix": [50257]}
    entry = with_template(checkpoint_dir, entry)  # tokenizer_files' entry, "template" added

None when tokenizer.json's post_processor stands; TemplateRefused with the reason where
transformers would take something the files do not hold (a token the vocabulary lacks)
or refuse the files itself (an unknown language or task).
"""
from __future__ import annotations

_GENERIC = ("PreTrainedTokenizerFast", "TokenizersBackend", "")
_ROBERTA = ("RobertaTokenizer", "RobertaTokenizerFast", "BartTokenizer", "BartTokenizerFast")


class TemplateRefused(ValueError):
    """The files ask transformers for special tokens the text library cannot reproduce."""


def with_template(checkpoint_dir, entry: dict) -> dict:
    """tokenizer_files' meta.json `entry`, with "template" added where the checkpoint's
    tokenizer class builds its special tokens at load; TemplateRefused with the reason."""
    from pathlib import Path

    from .tokenizer_files import _read_json

    ckpt = Path(checkpoint_dir)
    config, tj = _read_json(ckpt / "tokenizer_config.json"), _read_json(ckpt / "tokenizer.json")
    cls = str(config.get("tokenizer_class") or "") if isinstance(config, dict) else ""
    if (entry["kind"] in ("byte-level-bpe", "sentencepiece", "whisper-bpe") and isinstance(tj, dict)
            and tj.get("decoder") is None and cls not in _GENERIC):
        # The model classes build their own decoder at load; only the generic class runs
        # tokenizer.json's, whose null the library follows (tokens joined with spaces).
        raise TemplateRefused(f"tokenizer.json has no decoder, but transformers' {cls} builds its own at load "
                              "(the text library follows tokenizer.json)")
    template = template_ids(entry["kind"], tj if isinstance(tj, dict) else {},
                            config if isinstance(config, dict) else {})
    return entry if template is None else {**entry, "template": template}


def template_ids(kind: str, tj: dict, config: dict) -> dict | None:
    """meta.json's "template" for tokenizer.json `tj` and tokenizer_config.json `config`
    (both parsed; config {} when absent), or None (tokenizer.json's post_processor stands)."""
    if kind not in ("byte-level-bpe", "sentencepiece", "whisper-bpe"):
        return None
    lookup = _Ids(tj)
    if kind == "whisper-bpe":
        return _whisper(lookup, config)
    if str(config.get("tokenizer_class") or "") in _ROBERTA:
        return {"prefix": [lookup.id_of(_token(config, "cls_token", "<s>"), "cls_token")],
                "suffix": [lookup.id_of(_token(config, "sep_token", "</s>"), "sep_token")]}
    # The other classes run tokenizer.json's post_processor: transformers 5 drops
    # tokenizer_config.json's add_bos_token / add_eos_token when there is a tokenizer.json
    # (PreTrainedTokenizerBase.from_pretrained), and a missing post_processor becomes an
    # empty template (update_post_processor with both off), as the library reads none.
    return None


def _whisper(lookup: "_Ids", config: dict) -> dict:
    """WhisperTokenizer.prefix_tokens + [eos], as transformers 5 sets them at load."""
    from transformers.models.whisper.tokenization_whisper import LANGUAGES, TASK_IDS, TO_LANGUAGE_CODE

    sot = lookup.id_of("<|startoftranscript|>", "the start token")
    prefix = [sot]
    language = config.get("language")
    if language is not None:
        language = str(language).lower()
        code = TO_LANGUAGE_CODE.get(language, language if language in TO_LANGUAGE_CODE.values() else None)
        if code is None:
            raise TemplateRefused(f"tokenizer_config.json's language {language!r} is not one transformers knows")
        prefix.append(sot + 1 + list(LANGUAGES).index(code))  # transformers counts from the start token
    task = config.get("task")
    if task is not None:
        if task not in TASK_IDS:
            raise TemplateRefused(f"tokenizer_config.json's task {task!r} is not one of {TASK_IDS}")
        prefix.append(lookup.id_of(f"<|{task}|>", "the task token"))
    if not config.get("predict_timestamps", False):
        prefix.append(lookup.id_of("<|notimestamps|>", "<|notimestamps|>"))
    return {"prefix": prefix, "suffix": [lookup.id_of(_token(config, "eos_token", "<|endoftext|>"), "eos_token")]}


def _token(config: dict, key: str, default):
    value = config.get(key, default)
    return value.get("content") if isinstance(value, dict) else value


class _Ids:
    """convert_tokens_to_ids over tokenizer.json: its added tokens, then its vocabulary."""

    def __init__(self, tj: dict):
        model = tj.get("model") if isinstance(tj.get("model"), dict) else {}
        self.ids = dict(model.get("vocab") or {}) if isinstance(model.get("vocab"), dict) else {}
        for t in tj.get("added_tokens") or []:
            if isinstance(t, dict) and isinstance(t.get("content"), str):
                self.ids[t["content"]] = t.get("id")

    def id_of(self, token, what: str) -> int:
        i = self.ids.get(token) if isinstance(token, str) else None
        if not isinstance(i, int) or isinstance(i, bool):
            raise TemplateRefused(f"{what} {token!r} is not in tokenizer.json (transformers would add it at load "
                                  "with a new id)")
        return i
