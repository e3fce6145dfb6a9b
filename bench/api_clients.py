#!/usr/bin/env python3
"""The HTTP clients of bench/api.sh (standard library only).

  api_clients.py prove BASE TOKEN CIRCUIT INPUT.json N M OUTDIR
      N clients at once, each on its own keep-alive connection, each M times in a row:
      POST INPUT.json to /v1/circuits/CIRCUIT/proofs, GET /v1/jobs/ID?wait=600 until
      the job is decided, GET /v1/jobs/ID/proofs/0 and write OUTDIR/cC-I.proof.json and
      .public.json (snarkjs's two files, for bench/api.sh's sample check). Prints one
      JSON line: {"wall": seconds from the first POST to the last proof in hand,
      "lat": [each request's seconds from its POST to its proof], "errors": [...]}.
  api_clients.py idle HOST PORT K TOKEN
      opens K keep-alive connections to the API, each answered one authenticated
      GET /v1/circuits and then left idle (a connection that never shows a token is
      closed by --header-timeout, or to make room: those are an attacker's, not idle
      clients'); prints "open K" once they are, then, on each line read from stdin,
      how many the server still holds open (a closed one reads as EOF); exits at
      stdin's end.
"""
import http.client
import json
import os
import socket
import sys
import threading
import time


def prove(base, token, circuit, input_path, n, m, outdir):
    host, port = base.split("//", 1)[1].rsplit(":", 1)
    body = open(input_path, "rb").read()
    auth = {"Authorization": "Bearer " + token}
    lat, errors, lock = [], [], threading.Lock()
    start = threading.Barrier(n + 1)

    def request(conn, method, path, data=None, headers=None):
        # one retry on a fresh connection: the server may close an idle keep-alive one
        for attempt in (0, 1):
            try:
                conn.request(method, path, body=data, headers={**auth, **(headers or {})})
                r = conn.getresponse()
                return r.status, r.read()
            except (http.client.HTTPException, OSError):
                conn.close()
                if attempt:
                    raise

    def client(c):
        conn = http.client.HTTPConnection(host, int(port), timeout=900)
        start.wait()
        for i in range(m):
            t0 = time.monotonic()
            try:
                st, b = request(conn, "POST", f"/v1/circuits/{circuit}/proofs", body,
                                {"Content-Type": "application/json"})
                if st != 202:
                    raise RuntimeError(f"POST: {st} {b[:200]!r}")
                job = json.loads(b)["job"]
                state = "running"
                while state == "running":
                    st, b = request(conn, "GET", f"/v1/jobs/{job}?wait=600")
                    if st != 200:
                        raise RuntimeError(f"job {job}: {st} {b[:200]!r}")
                    state = json.loads(b)["state"]
                if state != "done":
                    raise RuntimeError(f"job {job}: {state}: {b[:300]!r}")
                st, b = request(conn, "GET", f"/v1/jobs/{job}/proofs/0")
                if st != 200:
                    raise RuntimeError(f"proof of job {job}: {st} {b[:200]!r}")
                t1 = time.monotonic()
                r = json.loads(b)
                for part in ("proof", "public"):
                    with open(os.path.join(outdir, f"c{c}-{i}.{part}.json"), "w") as f:
                        json.dump(r["proof" if part == "proof" else "publicSignals"], f)
                with lock:
                    lat.append(t1 - t0)
            except Exception as e:  # reported, not raised: the bench says which failed
                with lock:
                    errors.append(f"client {c} request {i}: {e}")
        conn.close()

    threads = [threading.Thread(target=client, args=(c,)) for c in range(n)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.monotonic()
    for t in threads:
        t.join()
    print(json.dumps({"wall": time.monotonic() - t0, "lat": lat, "errors": errors}))


def idle(host, port, k, token):
    socks = []
    for _ in range(k):
        c = http.client.HTTPConnection(host, int(port), timeout=30)
        c.request("GET", "/v1/circuits", headers={"Authorization": f"Bearer {token}"})
        c.getresponse().read()
        c.sock.setblocking(False)
        socks.append(c.sock)
    print(f"open {len(socks)}", flush=True)
    for _ in sys.stdin:
        held = 0
        for s in socks:
            try:
                held += s.recv(1, socket.MSG_PEEK) != b""
            except BlockingIOError:  # nothing to read and not closed: still held
                held += 1
            except OSError:
                pass
        print(f"held {held}", flush=True)


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["prove"] and len(a) == 8:
        prove(a[1], a[2], a[3], a[4], int(a[5]), int(a[6]), a[7])
    elif a[:1] == ["idle"] and len(a) == 5:
        idle(a[1], a[2], int(a[3]), a[4])
    else:
        sys.exit(__doc__)
