"""The long run of Whisper's long-form transcription (issue 30; CI runs the short clips of
tests/python/test_whisper_longform.py): 1 to 10 minutes of speech spoken by espeak-ng through a
seeded random whisper-tiny-shaped checkpoint (d_model 384, 4 + 4 layers, 6 heads, 30-s windows;
the vocabulary is the test tokenizer's), its timestamps biased (tf.bias_timestamps) or plain,
segment for segment against transformers' WhisperForConditionalGeneration.generate, greedy and
beams, with and without condition_on_prev_tokens. Prints each run's windows, segments and
times; exits 1 on a difference.

    PYTHONPATH=build/dev/pkg python tests/whisper_longform_long.py [--minutes 1 3 10] [--beams 1 4]
        [--plain] [--max-new-tokens 64] [--work DIR]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent / "python"
sys.path.insert(0, str(HERE))


def tiny_checkpoint(root: Path, biased: bool) -> Path:
    import torch
    from transformers import GenerationConfig, WhisperConfig, WhisperForConditionalGeneration, WhisperTokenizer
    from transformers.models.whisper.tokenization_whisper import LANGUAGES

    import text_fixtures as tf
    sys.path.insert(0, str(HERE.parent / "fixtures"))
    from random_checkpoints import _randomize

    tok_dir = tf.make_whisper_tokenizer(root / "tok")
    tok = WhisperTokenizer.from_pretrained(tok_dir)
    sot, eot = tok.convert_tokens_to_ids(["<|startoftranscript|>", "<|endoftext|>"])
    config = WhisperConfig(vocab_size=len(tok), d_model=384, encoder_layers=4, decoder_layers=4,
                           encoder_attention_heads=6, decoder_attention_heads=6, encoder_ffn_dim=1536,
                           decoder_ffn_dim=1536, num_mel_bins=80, max_source_positions=1500,
                           max_target_positions=448, decoder_start_token_id=sot, eos_token_id=eot, pad_token_id=eot,
                           bos_token_id=eot)
    torch.manual_seed(7)
    model = WhisperForConditionalGeneration(config).eval()
    _randomize(model, 7)
    g = GenerationConfig(decoder_start_token_id=sot, eos_token_id=eot, pad_token_id=eot, bos_token_id=eot,
                         max_length=448, suppress_tokens=[5, 17, 40], begin_suppress_tokens=[220])
    g.lang_to_id = {f"<|{c}|>": tok.convert_tokens_to_ids(f"<|{c}|>") for c in LANGUAGES}
    g.task_to_id = {t: tok.convert_tokens_to_ids(f"<|{t}|>") for t in ("transcribe", "translate")}
    g.no_timestamps_token_id = tok.convert_tokens_to_ids("<|notimestamps|>")
    g.prev_sot_token_id = tok.convert_tokens_to_ids("<|startofprev|>")
    g.is_multilingual = True
    model.generation_config = g
    out = root / ("tiny-biased" if biased else "tiny-plain")
    model.save_pretrained(out)
    for f in Path(tok_dir).iterdir():  # tokenizer.json and its config, as import-hf reads them
        if f.is_file():
            (out / f.name).write_bytes(f.read_bytes())
    if biased:
        tf.bias_timestamps(out, slope=0.00064)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, nargs="+", default=[1.0])
    p.add_argument("--beams", type=int, nargs="+", default=[1, 4])
    p.add_argument("--plain", action="store_true", help="no timestamp bias (random weights: few timestamps)")
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--work", type=Path, default=None)
    a = p.parse_args(argv)

    import tensorvm
    from tensorvm.pycompiler.import_hf import import_hf
    from transformers import WhisperForConditionalGeneration

    import text_fixtures as tf
    from test_whisper_longform import TEXT, _hf, _ours

    root = a.work or Path(tempfile.mkdtemp(prefix="longform-"))
    ckpt = tiny_checkpoint(root, not a.plain)
    prog = tensorvm.load(import_hf(ckpt, root / "tiny.tvm"))
    model = WhisperForConditionalGeneration.from_pretrained(ckpt).eval()
    speech = tf.espeak_speech(TEXT * int(10 + 12 * max(a.minutes)), root / "speech.wav", 150)
    if speech is None:
        print("espeak-ng is not installed (apt-get install espeak-ng)")
        return 2
    failed = 0
    for minutes in a.minutes:
        audio = speech[:int(minutes * 60 * 16000)]
        for beams in a.beams:
            for condition in (False, True):
                kw = dict(language="en", max_new_tokens=a.max_new_tokens, num_beams=beams,
                          condition_on_prev_tokens=condition)
                windows = []
                t0 = time.perf_counter()
                ours = _ours(prog, audio, windows, **kw)
                t1 = time.perf_counter()
                want = _hf(model, audio, **kw)
                t2 = time.perf_counter()
                same = ours == want
                failed += not same
                print(f"{len(audio) / 16000:7.1f} s  beams {beams}  condition {condition!s:5}  windows {len(windows):3}  "
                      f"segments {len(ours):4}  tensorvm {t1 - t0:7.1f} s  transformers {t2 - t1:7.1f} s  "
                      f"{'EQUAL' if same else 'DIFFERENT'}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
