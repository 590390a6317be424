"""The generation library: transformers' generate() written once as program
functions over a small model interface, and its Python front end.

    model.py       the interface a model provides (EncoderDecoder, DecoderOnly, TokenIds)
    processors.py  the logits processors: one function each, registered once, run as a chain
    sequence_bias.py  bad_words_ids and sequence_bias (token sequences matched against each row)
    end_tokens.py  eos_token_id, one or several end tokens
    search.py      generate's search inputs; build_generation(pb, model, defaults) puts the parts below together
    context.py     what the searches share: the model's cache, prompt and logits steps, the processors
    chain.py       the `process` program function: the processor chain over one step's scores
    branches.py    small cond / while_loop branches the searches share
    greedy.py      greedy search and sampling
    beam.py        beam search and beam sampling
    entry.py       the program's `generate`: inputs checked and resolved, then a search
    inputs.py      generate's keywords and their Python-side checks
    config_fields.py  every transformers GenerationConfig field: honoured, refused (why) or not applicable
    frontend.py    Program.generate: checks the keywords, runs the program's generate
    final_tokens.py  streaming, program side: what each step makes final, emitted to the host
    streaming.py   streaming, host side: transformers' streamer protocol, the CLI's printout
    whisper_tasks.py  Whisper's transcribe and detect_language, around its network and generate

docs/extending.md says how to add a model or a processor.
"""
from .frontend import GenerateOutput, generate
from .model import DecoderOnly, EncoderDecoder, TokenIds
from .processors import Processor, register
from .search import build_generation, input_names

__all__ = ["generate", "GenerateOutput", "EncoderDecoder", "DecoderOnly", "TokenIds", "Processor", "register",
           "build_generation", "input_names"]
