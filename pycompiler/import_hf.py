"""Import a Hugging Face checkpoint directory into a tensorvm program.

    tensorvm.import_hf("opus-mt-en-fr/", "opus-mt-en-fr.tvm")
    tensorvm import-hf opus-mt-en-fr/ -o opus-mt-en-fr.tvm [--no-optimize] [--plugin MODULE]

config.json's model_type picks the architecture (importers/__init__.py, and those that
plugin modules register: plugins.py). The checkpoint is read with transformers' own
`from_pretrained`, so whatever it loads (safetensors or bin, tied or untied heads) we import. Everything in the config that
changes the computation is honoured or refused, never silently ignored.
"""
from __future__ import annotations

import json
from pathlib import Path

from .draft_merge import check_compatible, merge_draft
from .export import export
from .modes import as_array
from .generation.processors import import_fields, token_list_defaults
from .generation.search import generate_inputs
from .importers import UnsupportedConfig, architecture
from .importers.common import load_config, load_weights
from .passes import optimize_program
from .plugins import load_plugins
from .schemes import Plan, check_group_size, scheme as find_scheme, with_tables
from .tokenizer_attach import attach_tokenizer

__all__ = ["import_hf", "UnsupportedConfig"]


def _model_type(path: Path) -> str:
    config = path / "config.json"
    if not config.is_file():
        raise FileNotFoundError(f"import_hf: {path} is not a transformers checkpoint directory (no config.json)")
    try:
        return str(json.loads(config.read_text(encoding="utf-8")).get("model_type", ""))
    except (ValueError, UnicodeDecodeError) as e:
        raise UnsupportedConfig(f"import_hf: {config} is not valid JSON: {e}") from None


def _check_quantize(quantize, group_size, keep_f32, tables=None):
    """(scheme or None, group size, keep_f32 patterns) checked before any weight is read;
    `tables`: another scheme's table storage for the token tables and output projection."""
    keep_f32 = (keep_f32,) if isinstance(keep_f32, str) else tuple(keep_f32 or ())
    if quantize is None:
        if group_size is not None or keep_f32 or tables is not None:
            raise UnsupportedConfig("import_hf: group_size, keep_f32 and tables need a quantize= scheme")
        return None, None, ()
    if not all(isinstance(p, str) and p for p in keep_f32):
        raise UnsupportedConfig(f"import_hf: keep_f32 must be fnmatch patterns (non-empty str), got {keep_f32!r}")
    try:
        scheme = find_scheme(quantize)
        if tables is not None:
            scheme = with_tables(scheme, find_scheme(tables, "import_hf: tables"))
        return scheme, check_group_size(scheme, group_size), keep_f32
    except ValueError as e:
        raise UnsupportedConfig(str(e)) from None


def _build(path: Path, quantize, group_size, keep_f32, tables):
    """(ProgramBuilder, config) of the checkpoint at `path` with the quantization asked for."""
    scheme, group_size, keep_f32 = _check_quantize(quantize, group_size, keep_f32, tables)
    arch = architecture(_model_type(path))
    config, gen = load_config(path)
    spec = arch.spec_from_config(config, gen)
    state, model = load_weights(path, arch.model_class, config)
    # weights the state dict does not hold, made from the loaded model (rotary inv_freq)
    extra = (arch.from_model(spec, model) if arch.from_model is not None else None) or {}
    tied = {n: c for n, (c, _) in state.items() if n != c}
    weights = {**arch.weights(spec, state), **extra}
    del state, model
    weights.update(token_list_defaults(spec.generation))
    plan = None if scheme is None else Plan(scheme, weights, group_size, keep_f32,
                                               linears=set(arch.linear_weights(spec, weights)))
    spec.quantize = plan
    generation = spec.generation
    meta = {
        "model_type": config.model_type,
        "is_encoder_decoder": bool(getattr(config, "is_encoder_decoder", False)),
        "source": str(path.resolve()),
        **arch.meta(spec),
        "max_length": generation["max_length"], "num_beams": generation["num_beams"],
        "generation": {k: v for k, v in generation.items() if k not in import_fields()},
        "bad_words_ids": generation["bad_words_ids"], "forced_eos_token_id": generation["forced_eos_token_id"],
        "renormalize_logits": generation["renormalize_logits"],
        # generate's True/False options, by name: the command line reads --arg NAME=1 as True
        "bool_options": [i.name for i in generate_inputs() if i.kind == "bool"],
        "tied_weights": tied,
        "quantize": quantize,
    }
    if plan is not None:
        meta.update(group_size=group_size, keep_f32=list(keep_f32), tables=tables or quantize)
    pb = arch.build(spec, weights, meta)
    if plan is not None:
        pb.used_weights()  # traces every function, so the plan has seen every matrix
        if plan.unmatched():
            raise UnsupportedConfig(f"import_hf: keep_f32 pattern(s) {plan.unmatched()} match no matrix the "
                                    "scheme quantizes (fnmatch on weight names, e.g. 'lm_head.weight', "
                                    "'model.layers.*.mlp.*')")
    return pb, config


def _with_draft(dpb, transform):
    """export's transform: the draft's program merged in (draft_merge.py), then `transform`."""
    def merged(text, weights):
        dweights = {n: as_array(dpb.weights[n]) for n in dpb.used_weights()}
        text, weights = merge_draft(text, weights, dpb.text(), dweights)
        return (text, weights) if transform is None else transform(text, weights)
    return merged


def import_hf(checkpoint_dir, out_path, quantize: str | None = None, optimize: bool = True,
              tokenizer: bool = True, plugins=(), group_size: int | None = None, keep_f32=(),
              tables: str | None = None, draft: str | None = None, draft_model=None) -> Path:
    """Reads a checkpoint directory of a supported architecture and writes a program
    directory, after the graph passes (folding, CSE, DCE, fusions) unless not `optimize`.
    The checkpoint's tokenizer comes along (tokenizer_attach.py): a tokenizer the text
    library cannot read exactly refuses the import, unless not `tokenizer`. `plugins`
    (module names or .py paths) and TENSORVM_PLUGINS are imported first: they may
    register architectures (tensorvm.register_architecture). `quantize` (a scheme of
    schemes.py), `group_size` (4-bit schemes), `keep_f32` (fnmatch patterns of
    matrices left f32) and `tables` (another scheme for the token tables and the output
    projection) are docs/quantization.md's.
    `draft` (a scheme) and `draft_model` (a checkpoint of the same vocabulary) put a draft
    model for speculative decoding in the same program: the same checkpoint at `draft`
    (self-speculation), or `draft_model` at `draft` (f32 when not given);
    generate(use_draft=True) then runs it (docs/generation.md)."""
    load_plugins(plugins)
    path = Path(checkpoint_dir)
    if draft is not None:
        _check_quantize(draft, None, ())
    pb, config = _build(path, quantize, group_size, keep_f32, tables)
    attach_tokenizer(pb, path, config.model_type, tokenizer)
    transform = optimize_program if optimize else None
    if draft is not None or draft_model is not None:
        draft_path = path if draft_model is None else Path(draft_model)
        dpb, _ = _build(draft_path, draft, None, (), None)
        check_compatible(pb.meta, dpb.meta)
        pb.meta["draft"] = {"source": str(draft_path.resolve()), "quantize": draft}
        transform = _with_draft(dpb, transform)
    export(pb, out_path, transform)
    return Path(out_path)
