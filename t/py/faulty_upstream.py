"""An MCP server that misbehaves on purpose, for the gateway tests, on
Python's standard library.  initialize, notifications and ping are
answered properly on every path; what tools/list and tools/call get
depends on the path:

  /xaccel     X-Accel-Redirect, -Limit-Rate, -Buffering, -Charset headers
  /slow       tools/call answered after 3 s
  /http10     tools/call answered as HTTP/1.0, no length, then close
  /badchunk   tools/call with a broken chunked body
  /midclose   tools/call: Content-Length 1000, 10 bytes, then close
  /garbage    tools/call: no HTTP at all
  /bigheader  tools/call: a 70 KB header line
  /big[/MB]   tools/list: MB megabytes of tools (default 5), chunked;
              tools/call: 5 MB text result with a Content-Length
  /big-sse    the same tools/list as an SSE event
  /big-length tools/list with a Content-Length
  /stream[/MB] tools/list of MB megabytes made as they are sent
  /flood[/MB] tools/list: one tool, "x"; tools/call: an SSE reply of MB
              megabytes of progress notifications (default 64), written
              as fast as they are read, then the result

Every message it receives is appended to LOGFILE as one JSON line.

    python3 faulty_upstream.py PORT LOGFILE
"""

import json
import socket
import socketserver
import sys
import time
from urllib.parse import urlsplit

PORT = int(sys.argv[1])
LOG = sys.argv[2]


def record(path, msg):
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
    with open(LOG, "a") as f:
        f.write(json.dumps({"path": path, "method": msg.get("method"),
                            "tool": params.get("name")}) + "\n")


def tools_json(mb):
    """A tools/list result of about mb megabytes."""
    n = max(1, int(mb * 1024 * 1024 / 1100))
    return [{"name": "tool_%d" % i, "description": "d" * 1000,
             "inputSchema": {"type": "object"}} for i in range(n)]


class Handler(socketserver.StreamRequestHandler):

    def read_request(self):
        line = self.rfile.readline()
        if not line:
            return None
        method, target, _ = line.decode("latin-1").split(" ", 2)
        headers = {}
        while True:
            h = self.rfile.readline().decode("latin-1")
            if h in ("\r\n", "\n", ""):
                break
            k, v = h.split(":", 1)
            headers[k.strip().lower()] = v.strip()
        body = self.rfile.read(int(headers.get("content-length", 0)))
        return method, target, headers, body

    def send(self, status, body=b"", ctype="application/json", extra=""):
        self.wfile.write(("HTTP/1.1 %s\r\nContent-Type: %s\r\n"
                          "Content-Length: %d\r\n%s\r\n"
                          % (status, ctype, len(body), extra)).encode()
                         + body)

    def handle(self):
        while True:
            req = self.read_request()
            if req is None:
                return
            method, target, headers, body = req
            url = urlsplit(target)
            path = url.path
            parts = path.split("/")
            if len(parts) > 2 and parts[2]:
                # /big/40: the kind, then its size in megabytes
                path, url = "/" + parts[1], {"mb": parts[2]}
            if method != "POST":
                self.send("405 Method Not Allowed")
                continue
            msg = json.loads(body)
            record(path, msg)
            if "id" not in msg:
                self.send("202 Accepted")
                continue
            m = msg.get("method")
            extra = ""
            if path == "/xaccel":
                extra = ("X-Accel-Redirect: /internal-only\r\n"
                         "X-Accel-Limit-Rate: 1\r\n"
                         "X-Accel-Buffering: yes\r\nX-Accel-Charset: koi8-r\r\n")
            if m == "initialize":
                res = {"protocolVersion": "2025-11-25",
                       "capabilities": {"tools": {}},
                       "serverInfo": {"name": "faulty", "version": "1"}}
                self.send("200 OK", json.dumps(
                    {"jsonrpc": "2.0", "id": msg["id"], "result": res}).encode(),
                    extra=extra + "Mcp-Session-Id: faulty-1\r\n")
                continue
            if self.fault(path, url, msg, extra):
                return
            self.send("200 OK", json.dumps(
                {"jsonrpc": "2.0", "id": msg["id"], "result": {}}).encode(),
                extra=extra)

    def fault(self, path, url, msg, extra):
        """Answers msg the path's way; True when the connection is done."""
        m, rid = msg.get("method"), msg["id"]
        w = self.wfile
        if path == "/stream" and m == "tools/list":
            # MB megabytes of tools, made as they are sent (1 GB is fine)
            mb = float(url.get("mb", "5") if isinstance(url, dict) else "5")
            w.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n")
            head = ('{"jsonrpc":"2.0","id":%s,"result":{"tools":['
                    % json.dumps(rid)).encode()
            tool = json.dumps({"name": "tool_x", "description": "d" * 1000,
                               "inputSchema": {"type": "object"}}).encode()
            block = b",".join([tool] * 60) + b","
            try:
                w.write(b"%x\r\n%s\r\n" % (len(head), head))
                for _ in range(int(mb * 1024 * 1024 / len(block))):
                    w.write(b"%x\r\n%s\r\n" % (len(block), block))
                tail = tool + b"]}}"
                w.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(tail), tail))
            except OSError:
                pass
            return True
        if path.startswith("/big") and m == "tools/list":
            mb = float(url.get("mb", "5") if isinstance(url, dict) else "5")
            text = json.dumps({"jsonrpc": "2.0", "id": rid,
                               "result": {"tools": tools_json(mb)}})
            if path == "/big-sse":
                text = "event: message\ndata: " + text + "\n\n"
                ctype = "text/event-stream"
            else:
                ctype = "application/json"
            data = text.encode()
            if path == "/big-length":
                self.send("200 OK", data, ctype)
                return False
            w.write(("HTTP/1.1 200 OK\r\nContent-Type: %s\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n" % ctype).encode())
            try:
                for i in range(0, len(data), 65536):
                    c = data[i:i + 65536]
                    w.write(b"%x\r\n%s\r\n" % (len(c), c))
                w.write(b"0\r\n\r\n")
            except OSError:
                return True
            return False
        if path == "/flood" and m == "tools/list":
            self.send("200 OK", json.dumps({"jsonrpc": "2.0", "id": rid,
                "result": {"tools": [{"name": "x", "inputSchema":
                                      {"type": "object"}}]}}).encode())
            return False
        if path == "/flood" and m == "tools/call":
            mb = float(url.get("mb", "64") if isinstance(url, dict) else "64")
            token = ((msg.get("params") or {}).get("_meta") or {}) \
                .get("progressToken", "t")
            w.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n")
            ev = []
            for i in range(64):
                ev.append(("event: message\ndata: " + json.dumps(
                    {"jsonrpc": "2.0", "method": "notifications/progress",
                     "params": {"progressToken": token, "progress": i,
                                "message": "m" * 900}}) + "\n\n").encode())
            block = b"".join(ev)
            try:
                for _ in range(int(mb * 1024 * 1024 / len(block))):
                    w.write(b"%x\r\n%s\r\n" % (len(block), block))
                    record(path, {"method": "flood-block"})
                end = ("event: message\ndata: " + json.dumps(
                    {"jsonrpc": "2.0", "id": rid, "result": {"content": [
                        {"type": "text", "text": "flooded"}]}}) + "\n\n").encode()
                w.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(end), end))
            except OSError:
                pass
            return True
        if m != "tools/call":
            return False
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "result": {
            "content": [{"type": "text", "text": "ok"}]}}).encode()
        if path == "/big":
            big = json.dumps({"jsonrpc": "2.0", "id": rid, "result": {
                "content": [{"type": "text", "text": "x" * (5 << 20)}]}})
            self.send("200 OK", big.encode())
            return False
        if path == "/slow":
            time.sleep(3)
            return False
        if path == "/http10":
            w.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n"
                    + body)
            return True
        if path == "/badchunk":
            w.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\nZZ\r\n" + body + b"\r\n0\r\n\r\n")
            return True
        if path == "/midclose":
            w.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 1000\r\n\r\n" + body[:10])
            return True
        if path == "/garbage":
            w.write(b"HELLO THERE\r\n\r\n")
            return True
        if path == "/bigheader":
            w.write(b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 70000 + b"\r\n"
                    b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                    % len(body) + body)
            return True
        return False


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


Server(("127.0.0.1", PORT), Handler).serve_forever()
