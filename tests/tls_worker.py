"""A fake SGLang worker over https (stdlib http.server + ssl), for tests/capture_tls.rs.

Answers GET /get_model_info (the real router fixture's answer), GET /get_server_info and
POST /start_profile / /stop_profile as SGLang does; every request (method, path, Authorization
header) is appended as one JSON line to LOG. Prints the port it listens on (127.0.0.1) as its
first line, then serves until killed. A client that refuses the certificate leaves nothing in
LOG (the handshake fails before any request).

Usage: tls_worker.py CERT.pem KEY.pem MODEL_INFO.json LOG
"""
import http.server
import json
import ssl
import sys

cert, key, model_info_file, log_file = sys.argv[1:5]
with open(model_info_file, encoding="utf-8") as f:
    MODEL_INFO = f.read().encode()


class Worker(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def record(self):
        with open(log_file, "a", encoding="utf-8") as f:
            f.write(
                json.dumps(
                    {
                        "method": self.command,
                        "path": self.path,
                        "authorization": self.headers.get("Authorization"),
                    }
                )
                + "\n"
            )

    def answer(self, status, body, kind="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.record()
        if self.path == "/get_model_info":
            self.answer(200, MODEL_INFO)
        elif self.path == "/get_server_info":
            self.answer(200, b'{"tp_size": 1, "dp_size": 1, "version": "tls-test"}')
        else:
            self.answer(404, b'{"detail": "Not Found"}')

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(n)
        self.record()
        if self.path in ("/start_profile", "/stop_profile"):
            self.answer(200, b"Start profiling.\n", "text/plain")
        else:
            self.answer(404, b'{"detail": "Not Found"}')


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Worker)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
server.socket = ctx.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
