# tests/lib/callback_receiver.py PORT SECRET-FILE LOG HOLD-FILE: a receiver of cuzk-api's
# callbacks for the tests (tests/lib/api.sh, recv_start). Each request is one JSON line
# in LOG: path, the answer given, whether the Cuzk-Signature (HMAC-SHA256 of "t.body"
# with the tenant's callback secret) checks, the body parsed; then the Cuzk-Signature
# header and the raw body as sent (for an SDK's verify_callback). /fail2/*: 500 to the first two
# requests of that path; /hold/*: 500 while HOLD-FILE exists; else 200.
import hashlib, hmac, json, os, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
port, secret_file, log, hold = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
seen = {}
class H(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        sig = dict(p.split("=", 1) for p in self.headers.get("Cuzk-Signature", "").split(",") if "=" in p)
        secret = open(secret_file).read().strip().encode()
        want = hmac.new(secret, sig.get("t", "").encode() + b"." + body, hashlib.sha256).hexdigest()
        seen[self.path] = seen.get(self.path, 0) + 1
        if self.path.startswith("/fail2/"):
            status = 500 if seen[self.path] <= 2 else 200
        elif self.path.startswith("/hold/"):
            status = 500 if os.path.exists(hold) else 200
        else:
            status = 200
        with open(log, "a") as f:
            f.write(json.dumps({"path": self.path, "status": status,
                                "sig_ok": hmac.compare_digest(want, sig.get("v1", "")),
                                "body": json.loads(body),
                                "signature": self.headers.get("Cuzk-Signature"),
                                "raw": body.decode()}) + "\n")
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        pass
HTTPServer(("127.0.0.1", port), H).serve_forever()
