#!/usr/bin/env python3
"""A static server for the page that makes it cross-origin isolated, so it gets threads.

A page may share memory between workers (SharedArrayBuffer, which Emscripten's pthreads need)
only when its responses carry these two headers; `python3 -m http.server` sends neither, and
the page then runs on one thread. Serve the repository root, then open
http://localhost:8000/examples/web/ (docs/web.md):
    python3 examples/web/serve.py [PORT] [--bind ADDR]
"""
import argparse
import functools
import http.server
import os


class Isolated(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".wasm": "application/wasm",
                      ".js": "text/javascript"}

    def end_headers(self):
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        super().end_headers()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("port", type=int, nargs="?", default=8000)
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--directory", default=os.getcwd(), help="the folder served (default: the current one)")
    args = ap.parse_args()
    handler = functools.partial(Isolated, directory=args.directory)
    http.server.test(HandlerClass=handler, port=args.port, bind=args.bind)
