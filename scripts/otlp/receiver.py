#!/usr/bin/env python3
"""A minimal OTLP/HTTP trace receiver for Spillway's trace tests.

Listens on 127.0.0.1 (port 0: the OS picks), prints `{"port": n}` on stdout,
then for every `POST /v1/traces` decodes the protobuf
`ExportTraceServiceRequest` with OpenTelemetry's own generated classes
(the `opentelemetry-proto` package) and prints one JSON line per span:
ids in hex, parent, name, kind, attributes, events, links, status,
resource attributes. A body that does not decode answers 400 and prints
an `error` line. Ends when stdin closes.
"""
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

LOCK = threading.Lock()


def emit(obj):
    with LOCK:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def value(v):
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in v.kvlist_value.values}
    if kind is None:
        return None
    return getattr(v, kind)


def attrs(kvs):
    return {kv.key: value(kv.value) for kv in kvs}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.path != "/v1/traces" or self.headers.get("content-type") != "application/x-protobuf":
            emit({"error": f"unexpected {self.path} {self.headers.get('content-type')}"})
            self.send_response(404)
            self.end_headers()
            return
        req = ExportTraceServiceRequest()
        try:
            req.ParseFromString(body)
        except Exception as e:  # a malformed body is the test's failure
            emit({"error": f"cannot decode: {e}"})
            self.send_response(400)
            self.end_headers()
            return
        for rs in req.resource_spans:
            resource = attrs(rs.resource.attributes)
            for ss in rs.scope_spans:
                for s in ss.spans:
                    emit({
                        "resource": resource,
                        "scope": ss.scope.name,
                        "trace_id": s.trace_id.hex(),
                        "span_id": s.span_id.hex(),
                        "parent_span_id": s.parent_span_id.hex(),
                        "trace_state": s.trace_state,
                        "flags": s.flags,
                        "name": s.name,
                        "kind": s.kind,
                        "start": s.start_time_unix_nano,
                        "end": s.end_time_unix_nano,
                        "attributes": attrs(s.attributes),
                        "events": [{"name": e.name, "time": e.time_unix_nano, "attributes": attrs(e.attributes)} for e in s.events],
                        "links": [{"trace_id": l.trace_id.hex(), "span_id": l.span_id.hex(), "attributes": attrs(l.attributes)} for l in s.links],
                        "status": {"code": s.status.code, "message": s.status.message},
                    })
        out = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    emit({"port": server.server_address[1]})
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()  # until the test closes it (or dies)
    server.shutdown()


if __name__ == "__main__":
    main()
