"""A small REST service for the location-backed tools (t/loctool.t,
t/loctool_inspector.t), on Python's standard library.  Every request is appended to LOGFILE as one
JSON line: method, the raw request target as it arrived, headers, body.

  /orders/ID       JSON {"id", "method", "target", "body"} (body parsed)
  /echo?...        the same, for query strings
  /status/CODE     that status, with a body naming an internal detail
  /slow/SECONDS    answers after SECONDS unless the client goes first;
                   a client that goes is logged as {"event": "disconnected"}
  /big/MB          MB megabytes of text/plain, with a Content-Length
  /chunked/MB      MB megabytes of text/plain, chunked, slowly; a client
                   that goes is logged as {"event": "disconnected"}
  /image           a 1x1 PNG (image/png)
  /audio           a short WAV (audio/wav)
  /text            text/plain
  /binary          application/octet-stream that is not UTF-8
  /array           application/json that is an array, not an object

    python3 rest_upstream.py PORT LOGFILE
"""

import base64
import json
import select
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
LOG = sys.argv[2]

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAF"
    "BQIAX8jx0gAAAABJRU5ErkJggg==")
WAV = base64.b64decode(
    "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==")


def record(entry):
    with open(LOG, "a") as f:
        f.write(json.dumps(entry) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, ctype, body):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("latin-1")
        entry = {"method": self.command, "target": self.path,
                 "headers": {k.lower(): v for k, v in self.headers.items()},
                 "body": body}
        record(entry)
        path = self.path.split("?", 1)[0]
        parts = path.split("/")

        if parts[1] in ("orders", "echo"):
            out = {"id": parts[2] if len(parts) > 2 else None,
                   "method": self.command, "target": self.path, "body": body}
            self.send(200, "application/json; charset=utf-8",
                      json.dumps(out).encode())
        elif parts[1] == "status":
            self.send(int(parts[2]), "text/plain",
                      b"internal detail: db host 10.1.2.3")
        elif parts[1] == "slow":
            self.slow(float(parts[2]))
        elif parts[1] == "big":
            mb = float(parts[2])
            self.send(200, "text/plain", b"x" * int(mb * 1024 * 1024))
        elif parts[1] == "chunked":
            self.chunked(float(parts[2]))
        elif parts[1] == "image":
            self.send(200, "image/png", PNG)
        elif parts[1] == "audio":
            self.send(200, "audio/wav", WAV)
        elif parts[1] == "text":
            self.send(200, "text/plain; charset=utf-8",
                      "plain text \u00e9\u6f22".encode())
        elif parts[1] == "binary":
            self.send(200, "application/octet-stream", b"\xff\xfe\x00\x01")
        elif parts[1] == "array":
            self.send(200, "application/json", b"[1, 2, 3]")
        else:
            self.send(404, "text/plain", b"no such thing")

    def chunked(self, mb):
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk = b"y" * 65536
        try:
            for _ in range(int(mb * 16)):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
                time.sleep(0.01)
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            record({"event": "disconnected", "target": self.path})
            self.close_connection = True

    def slow(self, seconds):
        """Waits, watching the connection: EOF means the client left."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            r, _, _ = select.select([self.connection], [], [], 0.05)
            if r:
                data = self.connection.recv(1, 0x2)   # MSG_PEEK
                if not data:
                    record({"event": "disconnected", "target": self.path})
                    self.close_connection = True
                    return
        self.send(200, "text/plain", b"slow reply")

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
