"""Reference implementations of every op, in plain numpy.

Each function here has the same name, parameters and defaults as the C++ op in the
registry (tests check this), and is what `tensorvm.replay` binds the IR's op names to.
"""
from .ops import *  # noqa: F401,F403
from .ops import OPS  # noqa: F401
from .kvcache import *  # noqa: F401,F403,E402  (registers the kv_* ops in OPS)
from .generation import *  # noqa: F401,F403,E402  (registers rng/rand/multinomial/prompt_lookup/option_index/check in OPS)
