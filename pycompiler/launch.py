"""The `tensorvm-run` console script: replaces itself with the packaged C++ executable.

pip puts console scripts on PATH but installs a package's other files inside the
package, so this launcher bridges the two as the cmake and ninja wheels do. os.execv
keeps the process: arguments, stdin/stdout/stderr, signals and the exit status are
the executable's own.
"""
from __future__ import annotations

import os
import sys

from .locations import NotInstalledError, get_tensorvm_run


def main() -> None:
    try:
        exe = get_tensorvm_run()
    except NotInstalledError as e:
        print(f"tensorvm-run: error: {e}", file=sys.stderr)
        sys.exit(1)
    sys.stdout.flush()
    os.execv(exe, [exe, *sys.argv[1:]])


if __name__ == "__main__":
    main()
