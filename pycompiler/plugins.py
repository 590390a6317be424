"""Loading the modules that register architectures of one's own (tensorvm.register_architecture)
before a checkpoint is imported:

    tensorvm import-hf CKPT -o P --plugin my_models.neox     # a module on sys.path
    tensorvm import-hf CKPT -o P --plugin ./neox_plugin.py   # a file: its folder goes on sys.path
    TENSORVM_PLUGINS=my_models.neox:./other.py tensorvm import-hf CKPT -o P

import_hf loads TENSORVM_PLUGINS itself, so a Python caller gets them too. A module is
imported once per process (Python's module cache), so its registrations run once.
"""
from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

ENV = "TENSORVM_PLUGINS"


class PluginError(ImportError):
    """A plugin module could not be found or failed while importing."""


def load_plugin(name: str):
    """Imports the plugin `name`: a module name, or the path of a .py file (its folder is
    put first on sys.path, as for a script, so it can import the model file beside it)."""
    if name.endswith(".py") or os.sep in name:
        path = Path(name).expanduser().resolve()
        if not path.is_file() or path.suffix != ".py":
            raise PluginError(f"import_hf: plugin '{name}' is not a .py file")
        if str(path.parent) not in sys.path:
            sys.path.insert(0, str(path.parent))
        module = path.stem
        loaded = sys.modules.get(module)
        if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() != path:
            raise PluginError(f"import_hf: plugin '{name}': a module named '{module}' is imported already "
                              f"(from {getattr(loaded, '__file__', None) or 'no file'}); rename the file")
    else:
        module = name
    try:
        return importlib.import_module(module)
    except Exception as e:  # noqa: BLE001 -- whatever the plugin raises, name the plugin
        raise PluginError(f"import_hf: plugin '{name}' failed to import: {type(e).__name__}: {e}") from e


def load_plugins(names=()) -> None:
    """Imports every plugin of `names`, then those of TENSORVM_PLUGINS (os.pathsep-separated)."""
    env = [n for n in os.environ.get(ENV, "").split(os.pathsep) if n.strip()]
    for name in [*names, *env]:
        load_plugin(name.strip())
