"""The Swagger Petstore API (the operations of @readme/oas-examples'
3.0/json/petstore.json under its base path /v2) for a few operations, on
the Python standard library, for t/loctool_openapi.t.  Every request it
receives is appended to a log file as one JSON line (method, path, raw
query, headers, body), so a test can prove what reached the API.

    python3 petstore_upstream.py PORT LOGFILE

    GET    /v2/pet/{petId}          7: a pet; others 404
    GET    /v2/pet/findByStatus     the pets whose status is in ?status=
    POST   /v2/pet                  the JSON body back, with an id
    POST   /v2/pet/{petId}          form data: the fields back as JSON
    DELETE /v2/pet/{petId}          7: 200; others 404
    GET    /v2/user/login           ?username=&password=: a text token
"""

import json
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
LOG = sys.argv[2]

PET = {"id": 7, "name": "doggie", "photoUrls": [], "status": "available"}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", ctype="application/json"):
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def handle_any(self):
        url = urllib.parse.urlsplit(self.path)
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        with open(LOG, "a") as f:
            f.write(json.dumps({
                "method": self.command, "path": url.path,
                "query": url.query,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body.decode("utf-8", "replace")}) + "\n")
        q = urllib.parse.parse_qs(url.query)
        parts = url.path.split("/")
        m = self.command

        if m == "GET" and url.path == "/v2/pet/findByStatus":
            wanted = q.get("status", [])
            return self.reply(200, [p for p in [PET]
                                    if p["status"] in wanted])
        if m == "GET" and url.path == "/v2/user/login":
            if q.get("username") and q.get("password"):
                return self.reply(200, b"token-" + q["username"][0].encode(),
                                  "text/plain")
            return self.reply(400, {"message": "missing credentials"})
        if m == "POST" and url.path == "/v2/pet":
            try:
                pet = json.loads(body)
            except ValueError:
                return self.reply(400, {"message": "not JSON"})
            pet["id"] = 99
            return self.reply(200, pet)
        if len(parts) == 4 and parts[:3] == ["", "v2", "pet"]:
            pet_id = urllib.parse.unquote(parts[3])
            if m == "POST":
                form = urllib.parse.parse_qs(body.decode())
                return self.reply(200, {"id": pet_id, "form": form})
            if pet_id != "7":
                return self.reply(404, {"message": "Pet not found"})
            if m == "GET":
                return self.reply(200, PET)
            if m == "DELETE":
                return self.reply(200, {"deleted": 7})
        return self.reply(404, {"message": "no such operation"})

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = handle_any


ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
