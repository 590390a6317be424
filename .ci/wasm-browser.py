#!/usr/bin/env python3
"""The browser half of .ci/wasm: examples/web/ in headless Chromium (selenium, chromedriver).

Serves the repository root with Python's static server (the page's one-line server), opens
examples/web/ on the demo program (the README's trained tiny Marian with its tokenizer),
types English sentences into the box, presses Translate, waits for the streamed translation
to finish and checks its text against the native `tensorvm-run PROGRAM translate`'s, character
for character; saves a screenshot. Run once per build (SIMD and scalar, forced with ?build=).
With --isolated the server is examples/web/serve.py's (COOP/COEP headers: the page is
cross-origin isolated), build `auto` lets the page pick (the threaded SIMD build there), and
the page must report more than one thread.
"""
from __future__ import annotations

import argparse
import functools
import http.server
import subprocess
import sys
import threading
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "web"))
from serve import Isolated  # noqa: E402

SOURCE = "I have twenty-one cats.\nWe see seventy-three dogs."


def native_text(native_run: str, prog: str, text: str, args: dict) -> str:
    """What the native command line prints for `text`: one line per input line."""
    cmd = [native_run, prog, "translate", "--text", text]
    for k, v in args.items():
        cmd += ["--arg", f"{k}={v}"]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = Isolated.extensions_map

    def log_message(self, *args):  # noqa: D102 - the test prints its own lines
        pass


class QuietIsolated(Isolated):
    def log_message(self, *args):  # noqa: D102
        pass


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--native-run", required=True)
    ap.add_argument("--program", required=True, help="the demo program directory (under the repository)")
    ap.add_argument("--screenshot", required=True, type=Path)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--builds", default="simd,scalar",
                    help="the builds to load, comma-separated (auto: the page's own pick)")
    ap.add_argument("--isolated", action="store_true",
                    help="serve with COOP/COEP (examples/web/serve.py) and require threads > 1")
    args = ap.parse_args()
    prog = Path(args.program).resolve()
    rel = prog.relative_to(ROOT)
    handler = QuietIsolated if args.isolated else QuietHandler
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(ROOT)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    opts = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1000,700"):
        opts.add_argument(flag)
    opts.binary_location = "/usr/bin/chromium"
    service = webdriver.ChromeService(executable_path="/usr/bin/chromedriver")
    driver = webdriver.Chrome(options=opts, service=service)
    failures = 0
    try:
        for beams in (1, 4):
            expected = native_text(args.native_run, str(prog), SOURCE, {"num_beams": beams, "max_new_tokens": 32})
            for build in args.builds.split(","):
                t0 = time.perf_counter()
                pick = "" if build == "auto" else f"build={build}&"
                driver.get(f"http://127.0.0.1:{port}/examples/web/?{pick}program=/{rel}")
                wait = WebDriverWait(driver, args.timeout)
                wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-state") in ("ready", "error"))
                src = driver.find_element(By.ID, "src")
                src.clear()
                src.send_keys(SOURCE)  # typed: the newline is Enter in the box
                b = driver.find_element(By.ID, "beams")
                b.clear()
                b.send_keys(str(beams))
                driver.find_element(By.ID, "go").click()
                wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-state") in ("done", "error"))
                out = driver.find_element(By.ID, "out")
                got = out.get_attribute("data-text")
                status = driver.find_element(By.ID, "status").text
                speed = driver.find_element(By.ID, "speed").text
                threads = int(driver.find_element(By.ID, "status").get_attribute("data-threads") or 0)
                ok = got == expected
                threaded = not args.isolated or threads > 1
                failures += not ok or not threaded
                print(f"   {build} build, beams {beams}: {'ok' if ok else 'MISMATCH'} ({time.perf_counter() - t0:.1f} s) "
                      f"{got!r}{'' if ok else f' != native {expected!r}: ' + out.text}\n      {status}\n      {speed}"
                      + ("" if threaded else f"\n      NOT THREADED: cross-origin isolated, yet {threads} thread(s)"))
                if build == args.builds.split(",")[0] and beams == 1:
                    args.screenshot.parent.mkdir(parents=True, exist_ok=True)
                    driver.save_screenshot(str(args.screenshot))
        logs = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        for e in logs:
            print(f"   browser console: {e['message']}")
    finally:
        driver.quit()
        server.shutdown()
    print(f"wasm-browser: screenshot {args.screenshot}")
    if failures:
        print(f"wasm-browser: {failures} page run(s) differ from the native build", file=sys.stderr)
        return 1
    print(f"wasm-browser: the page's translations equal the native build's text (builds {args.builds}, greedy and beam 4"
          + (", cross-origin isolated, threads > 1)" if args.isolated else ")"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
