"""ONNX Runtime: encoder + cross-K/V + decoder-with-past graphs (onnx_export.py),
with the generation loop (greedy and beam search) in Python / numpy.

The loop re-implements transformers' ``generate()`` for Marian's default
processors (bad words = pad, min_new_tokens, forced EOS at max_length,
renormalize_logits) and transformers' vectorised beam search (2*num_beams
candidates, length_penalty, early_stopping=False heuristic), so its tokens can
be compared with transformers' exactly.

Cross-attention K/V are computed once per call and, for beam search, repeated
per beam (as optimum's decoder-with-past does); the self-attention cache comes
back from ORT as new arrays each step and is reordered with ``np.take``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from .base import Engine, EngineUnavailable, MarianIds, generation_defaults

NEG_INF = np.float32(-np.inf)


def _log_softmax(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0).astype(x.dtype)
    y = x - m
    with np.errstate(divide="ignore"):
        return y - np.log(np.exp(y).sum(axis=-1, keepdims=True))


class OnnxRuntimeEngine(Engine):
    name = "onnxruntime"
    precision = "float32"

    def _dir(self, cache_dir: Path) -> Path:
        return cache_dir / "onnx"

    def prepare(self, checkpoint_dir: Path, cache_dir: Path) -> dict:
        from . import onnx_export

        out = self._dir(cache_dir)
        stamp = out / "BENCH_SOURCE"
        import torch

        want = f"{checkpoint_dir.resolve()} export={onnx_export.EXPORT_VERSION} torch={torch.__version__}\n"
        if stamp.exists() and stamp.read_text() == want:
            return {"export_s": 0.0, "cached": True}
        info = onnx_export.export(checkpoint_dir, out)
        stamp.write_text(want)
        return {"export_s": info["export_s"], "cached": False, **info}

    def imports(self) -> None:
        try:
            import onnxruntime  # noqa: F401
        except ImportError as e:  # pragma: no cover
            raise EngineUnavailable(f"onnxruntime not installed: {e}") from e

    def load(self, checkpoint_dir: Path, cache_dir: Path, threads: int) -> float:
        try:
            import onnxruntime as ort
        except ImportError as e:  # pragma: no cover
            raise EngineUnavailable(f"onnxruntime not installed: {e}") from e
        self.ort = ort
        self.ids = MarianIds.from_checkpoint(checkpoint_dir)
        self.gen = generation_defaults(checkpoint_dir)
        d = self._dir(cache_dir)
        info = json.loads((d / "export_info.json").read_text())
        self.L, self.H, self.Dh = info["layers"], info["heads"], info["head_dim"]
        self.threads = threads
        t0 = time.perf_counter()
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        prov = ["CPUExecutionProvider"]
        self.encoder = ort.InferenceSession(str(d / "encoder.onnx"), so, providers=prov)
        self.cross = ort.InferenceSession(str(d / "cross_kv.onnx"), so, providers=prov)
        self.decoder = ort.InferenceSession(str(d / "decoder.onnx"), so, providers=prov)
        self.cross_names = [o.name for o in self.cross.get_outputs()]
        self.out_names = [o.name for o in self.decoder.get_outputs()]
        return time.perf_counter() - t0

    # -- model pieces -------------------------------------------------------

    def encode(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return self.encoder.run(None, {"input_ids": ids.astype(np.int64), "attention_mask": mask.astype(np.int64)})[0]

    def _cross_kv(self, enc: np.ndarray) -> tuple[list, list]:
        outs = dict(zip(self.cross_names, self.cross.run(None, {"encoder_hidden_states": enc})))
        return [outs[f"cross_k.{i}"] for i in range(self.L)], [outs[f"cross_v.{i}"] for i in range(self.L)]

    def _step(self, tokens, enc_mask, pk, pv, ck, cv):
        feed = {"input_ids": tokens.reshape(-1, 1).astype(np.int64), "encoder_attention_mask": enc_mask}
        for i in range(self.L):
            feed[f"past_k.{i}"] = pk[i]
            feed[f"past_v.{i}"] = pv[i]
            feed[f"cross_k.{i}"] = ck[i]
            feed[f"cross_v.{i}"] = cv[i]
        out = self.decoder.run(None, feed)
        return out[0], out[1 : 1 + self.L], out[1 + self.L :]

    # -- logits processors (transformers' order) ----------------------------

    def _process(self, scores: np.ndarray, cur_len: int, max_length: int, min_new_tokens: int, prompt_len: int):
        """NoBadWords(pad) -> MinNewTokens -> ForcedEOS -> (renormalize done by caller)."""
        for seq in self.gen["bad_words_ids"]:
            if len(seq) == 1:  # multi-token bad words never match single-token Marian configs
                scores[:, seq[0]] = NEG_INF
        if cur_len - prompt_len < (min_new_tokens or 0):
            scores[:, self.ids.eos] = NEG_INF
        feos = self.gen["forced_eos_token_id"]
        if feos is not None and cur_len == max_length - 1:
            scores[:, :] = NEG_INF
            scores[:, feos] = 0.0
        return scores

    # -- generation ------------------------------------------------------------

    def generate(self, ids, mask, num_beams, max_new_tokens, min_new_tokens=None):
        ids = ids.astype(np.int64)
        mask = mask.astype(np.int64)
        enc = self.encode(ids, mask)
        ck, cv = self._cross_kv(enc)
        if num_beams == 1:
            return self._greedy(mask, ck, cv, max_new_tokens, min_new_tokens)
        return self._beam(mask, ck, cv, num_beams, max_new_tokens, min_new_tokens)

    def _empty_cache(self, n: int):
        z = np.zeros((n, self.H, 0, self.Dh), dtype=np.float32)
        return [z] * self.L, [z] * self.L

    def _greedy(self, mask, ck, cv, max_new_tokens, min_new_tokens):
        B = mask.shape[0]
        pad, eos = self.ids.pad, self.ids.eos
        seqs = np.full((B, 1), self.ids.decoder_start, dtype=np.int64)
        max_length = 1 + max_new_tokens
        unfinished = np.ones(B, dtype=bool)
        pk, pv = self._empty_cache(B)
        while True:
            cur_len = seqs.shape[1]
            logits, pk, pv = self._step(seqs[:, -1], mask, pk, pv, ck, cv)
            scores = self._process(logits.astype(np.float32, copy=True), cur_len, max_length, min_new_tokens, 1)
            nxt = scores.argmax(axis=-1).astype(np.int64)
            nxt = np.where(unfinished, nxt, pad)
            seqs = np.concatenate([seqs, nxt[:, None]], axis=1)
            unfinished &= nxt != eos
            if not unfinished.any() or seqs.shape[1] >= max_length:
                return seqs

    def _beam(self, mask, ck, cv, num_beams, max_new_tokens, min_new_tokens):
        """transformers' GenerationMixin._beam_search (do_sample=False), in numpy."""
        B, K = mask.shape[0], num_beams
        pad, eos = self.ids.pad, self.ids.eos
        lp = float(self.gen["length_penalty"])
        early = self.gen["early_stopping"]
        prompt_len, max_length = 1, 1 + max_new_tokens
        keep = 2 * K  # one EOS token
        top_mask = np.arange(keep) < K

        # beams share the source: repeat its mask and cross K/V per beam
        mask_r = np.repeat(mask, K, axis=0)
        ck = [np.repeat(x, K, axis=0) for x in ck]
        cv = [np.repeat(x, K, axis=0) for x in cv]
        pk, pv = self._empty_cache(B * K)

        running = np.full((B, K, max_length), pad, dtype=np.int64)
        running[:, :, 0] = self.ids.decoder_start
        sequences = running.copy()
        running_scores = np.zeros((B, K), dtype=np.float32)
        running_scores[:, 1:] = -1e9
        beam_scores = np.full((B, K), -1e9, dtype=np.float32)
        finished = np.zeros((B, K), dtype=bool)
        improvable = np.ones((B, 1), dtype=bool)
        cur_len = prompt_len
        rows = np.arange(B)[:, None]
        while True:
            logits, pk, pv = self._step(running[:, :, cur_len - 1].reshape(-1), mask_r, pk, pv, ck, cv)
            logp = _log_softmax(logits.astype(np.float32))
            logp = self._process(logp, cur_len, max_length, min_new_tokens, prompt_len)
            if self.gen["renormalize_logits"]:
                logp = _log_softmax(logp)
            V = logp.shape[-1]
            acc = (logp.reshape(B, K, V) + running_scores[:, :, None]).reshape(B, K * V)
            # top-k continuations (sorted, like torch.topk)
            part = np.argpartition(-acc, keep - 1, axis=1)[:, :keep]
            order = np.argsort(-acc[rows, part], axis=1, kind="stable")
            top_idx = part[rows, order]
            top_lp = acc[rows, top_idx]
            src_beam = top_idx // V
            tok = top_idx % V
            top_seqs = running[rows, src_beam].copy()
            top_seqs[:, :, cur_len] = tok
            hits = (tok == eos) | (cur_len + 1 >= max_length)
            # running beams for the next step: best K that did not finish
            run_lp = top_lp + hits.astype(np.float32) * -1e9
            nxt = np.argsort(-run_lp, axis=1, kind="stable")[:, :K]
            running = top_seqs[rows, nxt]
            running_scores = run_lp[rows, nxt]
            next_src = src_beam[rows, nxt]
            # finished hypotheses
            just_done = hits & top_mask[None, :]
            fin_lp = top_lp / ((cur_len + 1 - prompt_len) ** lp)
            full = finished.all(axis=-1, keepdims=True) & (early is True)
            fin_lp = fin_lp + full * -1e9 + (~improvable) * -1e9 + (~just_done) * -1e9
            m_seqs = np.concatenate([sequences, top_seqs], axis=1)
            m_scores = np.concatenate([beam_scores, fin_lp.astype(np.float32)], axis=1)
            m_fin = np.concatenate([finished, just_done], axis=1)
            best = np.argsort(-m_scores, axis=1, kind="stable")[:, :K]
            sequences, beam_scores, finished = m_seqs[rows, best], m_scores[rows, best], m_fin[rows, best]
            # reorder the self-attention cache
            flat = (next_src + np.arange(B)[:, None] * K).reshape(-1)
            pk = [np.take(x, flat, axis=0) for x in pk]
            pv = [np.take(x, flat, axis=0) for x in pv]
            cur_len += 1
            # early-stop heuristic (early_stopping=False / True)
            if early == "never" and lp > 0.0:
                best_len = max_length - prompt_len
            else:
                best_len = cur_len - prompt_len
            best_possible = running_scores[:, :1] / (best_len**lp)
            worst_fin = np.where(finished, beam_scores.min(axis=1, keepdims=True), -1e9)
            improvable = improvable & (best_possible > worst_fin).any(axis=-1, keepdims=True)
            open_beam = not (finished.all() and early is True)
            if not (improvable.any() and open_beam and not hits.all()):
                break
        out = sequences[:, 0, :]
        # crop to the longest generated hypothesis
        gen_len = (out[:, prompt_len:] != pad).sum(axis=1).max()
        return out[:, : prompt_len + int(gen_len)]

    def info(self) -> dict:
        return {
            "onnxruntime": self.ort.__version__,
            "intra_op_num_threads": self.threads,
            "inter_op_num_threads": 1,
            "graph_optimization_level": "ORT_ENABLE_ALL",
        }
