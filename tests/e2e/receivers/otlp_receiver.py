"""The e2e tests' OTLP/HTTP receiver, and their slow receiver (--slow).

OTLP: answers POST /v1/metrics (application/x-protobuf, gzip or not) by decoding the body as an
ExportMetricsServiceRequest, appending MessageToDict of it as one JSON line to DIR/requests.jsonl,
and answering 200 with an empty ExportMetricsServiceResponse, as a collector does. A body that does
not decode is answered 400 and recorded as {"undecodable": ERROR, "bytes": N}; another content type
415, recorded as {"unsupported_content_type": TYPE}.

Slow: answers any method on any path with 204, appending a line to DIR/hits per request.

Both sleep --delay seconds before answering (recording first, on arrival). The port it listens on
(127.0.0.1, picked by the system) is written to DIR/port once it listens.
"""

import argparse
import gzip
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

parser = argparse.ArgumentParser()
parser.add_argument("--dir", required=True)
parser.add_argument("--delay", type=float, default=0.0)
parser.add_argument("--slow", action="store_true")
args = parser.parse_args()

if not args.slow:
    from google.protobuf.json_format import MessageToDict
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceRequest,
        ExportMetricsServiceResponse,
    )

lock = threading.Lock()


def record(name, line):
    with lock, open(os.path.join(args.dir, name), "a", encoding="utf-8") as out:
        out.write(line + "\n")


class Handler(BaseHTTPRequestHandler):
    # Keep-alive, as a collector: the exporters' clients reuse their connections.
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def answer(self, status, body=b"", content_type=None):
        time.sleep(args.delay)
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def any_request(self):
        data = self.body()
        if args.slow:
            record("hits", json.dumps({"method": self.command, "path": self.path}))
            return self.answer(204)
        if self.command != "POST" or self.path != "/v1/metrics":
            return self.answer(404)
        content_type = self.headers.get("Content-Type", "")
        if content_type.split(";")[0].strip().lower() != "application/x-protobuf":
            record("requests.jsonl", json.dumps({"unsupported_content_type": content_type}))
            return self.answer(415)
        try:
            if self.headers.get("Content-Encoding", "").lower() == "gzip":
                data = gzip.decompress(data)
            request = ExportMetricsServiceRequest.FromString(data)
        except (DecodeError, OSError, EOFError) as e:
            record("requests.jsonl", json.dumps({"undecodable": str(e), "bytes": len(data)}))
            return self.answer(400, str(e).encode(), "text/plain")
        record("requests.jsonl", json.dumps(MessageToDict(request)))
        self.answer(200, ExportMetricsServiceResponse().SerializeToString(), "application/x-protobuf")

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = any_request


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
port_file = os.path.join(args.dir, "port")
with open(port_file + ".tmp", "w", encoding="utf-8") as out:
    out.write(str(server.server_address[1]))
# Renamed whole: the test never reads half a port.
os.replace(port_file + ".tmp", port_file)
server.serve_forever()
