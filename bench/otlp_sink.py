#!/usr/bin/env python3
"""An OTLP/HTTP collector for the benches: reads each export, answers 200,
prints the body's size (decoding is the receiver's job in tests/traces.rs,
and its CPU would not be the gateway's). Usage: otlp_sink.py PORT"""
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        n = int(self.headers.get("content-length", "0"))
        self.rfile.read(n)
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()
        sys.stdout.write(f"{n}\n")
        sys.stdout.flush()


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
