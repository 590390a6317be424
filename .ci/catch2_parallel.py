#!/usr/bin/env python3
"""Runs a Catch2 binary's test cases several at a time, one process per test case.

The sanitizer and emulator stages of CI run tensorvm_tests as one process, one test after
the other, on a 2-core machine; one process per test case, two at a time, takes about half
the time, and a crash or sanitizer abort names the test it happened in.

    python3 .ci/catch2_parallel.py [--jobs N] [--spec SPEC] -- COMMAND...
    python3 .ci/catch2_parallel.py --spec "[threads]" -- build/tsan/tensorvm_tests
    python3 .ci/catch2_parallel.py -- qemu-aarch64 -L /usr/aarch64-linux-gnu build/arm64/tensorvm_tests

COMMAND is the test binary, with an emulator before it if need be. The environment
(ASAN_OPTIONS, TENSORVM_ISA, ...) passes through. Exits non-zero if any test case fails
or no test case matches SPEC.
"""
import argparse
import concurrent.futures
import os
import subprocess
import sys
import time

# Catch2 v2 reads these as test-spec syntax in a name given on its command line.
SPECIAL = set('\\,[]"*~')


def escape(name: str) -> str:
    return "".join("\\" + c if c in SPECIAL else c for c in name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--spec", default="", help="Catch2 test spec choosing the test cases (default: all)")
    parser.add_argument("command", nargs="+")
    args = parser.parse_args()
    spec = [args.spec] if args.spec else []
    listing = subprocess.run(args.command + ["--list-test-names-only"] + spec, capture_output=True, text=True)
    # Catch2 v2 exits with the number of test cases it listed; only a signal is a failure.
    if listing.returncode < 0:
        sys.stderr.write(listing.stdout + listing.stderr)
        print(f"catch2_parallel: listing the tests of {' '.join(args.command)} failed", file=sys.stderr)
        return 1
    names = [line for line in listing.stdout.splitlines() if line.strip()]
    if not names:
        print(f"catch2_parallel: no test case matches {args.spec!r}", file=sys.stderr)
        return 1

    def run(name: str):
        t0 = time.monotonic()
        # -w NoTests: a name that matches nothing fails instead of passing silently.
        done = subprocess.run(args.command + ["-w", "NoTests", escape(name)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, errors="replace")
        return name, done.returncode, done.stdout, time.monotonic() - t0

    t0 = time.monotonic()
    failed, times = [], []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for name, rc, out, seconds in pool.map(run, names):
            times.append((seconds, name))
            if rc != 0:
                failed.append(name)
                sys.stdout.write(f"---- FAILED (exit {rc}): {name}\n{out[-20000:]}\n")
    wall = time.monotonic() - t0
    times.sort(reverse=True)
    print(f"catch2_parallel: {len(names) - len(failed)} of {len(names)} test cases passed, {args.jobs} at a time, "
          f"in {wall:.0f} s; slowest: " + "; ".join(f"{s:.0f} s {n[:60]}" for s, n in times[:3]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
