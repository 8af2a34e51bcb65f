"""A minimal MCP server on the Python standard library, for the gateway
tests: it reads bodies with json.loads, which keeps the LAST of two equal
member names (as JSON.parse does), unlike the module.  Every message it
receives is appended to a log file as one JSON line, so a test can prove
what did and did not arrive.

    python3 lastkey_upstream.py PORT LOGFILE
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
LOG = sys.argv[2]

TOOLS = [
    {"name": "harmless", "inputSchema": {"type": "object"}},
    {"name": "delete_everything", "inputSchema": {"type": "object"}},
]


def record(msg):
    params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
    with open(LOG, "a") as f:
        f.write(json.dumps({"method": msg.get("method"), "id": msg.get("id"),
                            "tool": params.get("name"),
                            "arguments": params.get("arguments"),
                            "meta": params.get("_meta")}) + "\n")


def answer(msg):
    method = msg.get("method")
    if method == "initialize":
        return {"protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "lastkey", "version": "1"}}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        return {"content": [{"type": "text",
                             "text": "ran " + str(msg["params"]["name"])}]}
    return {}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            msgs = json.loads(body)
        except ValueError:
            return self.reply(400)
        batch = isinstance(msgs, list)
        out = []
        for msg in (msgs if batch else [msgs]):
            record(msg)
            if "id" in msg and "method" in msg:
                out.append({"jsonrpc": "2.0", "id": msg["id"],
                            "result": answer(msg)})
        if not out:
            return self.reply(202)
        headers = [("Content-Type", "application/json")]
        if not batch and msgs.get("method") == "initialize":
            headers.append(("Mcp-Session-Id", "lastkey-session-1"))
        self.reply(200, json.dumps(out if batch else out[0]).encode(), headers)

    def do_GET(self):
        self.reply(405)

    def do_DELETE(self):
        self.reply(200)


ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
