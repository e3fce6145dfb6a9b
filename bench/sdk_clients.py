#!/usr/bin/env python3
"""bench/api.sh's Python SDK row: N proofs from T threads through cuzk_client.

  sdk_clients.py BASE TOKEN CIRCUIT INPUT.json N T OUTDIR
      T threads share one Client (each thread keeps its own connection) and take the N
      proofs between them; each proof is one Client.prove() (a POST with ?wait=60: the
      proof in the answer). Writes OUTDIR/sI.proof.json and .public.json for snarkjs and
      prints one JSON line: {"wall": seconds from the first POST to the last proof,
      "cpu": this process's user + system seconds over the run, "errors": [...]}. The SDK is the tree's (clients/python), not an installed one.
"""
import json
import os
import queue
import resource
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients", "python"))
from cuzk_client import Client  # noqa: E402

base, token, circuit, input_path, n, t, outdir = sys.argv[1:8]
n, t = int(n), int(t)
with open(input_path) as f:
    inputs = json.load(f)
client = Client(base, token, timeout=600)
todo: "queue.Queue[int]" = queue.Queue()
for i in range(n):
    todo.put(i)
errors, lock = [], threading.Lock()
start = threading.Barrier(t + 1)


def worker():
    start.wait()
    while True:
        try:
            i = todo.get_nowait()
        except queue.Empty:
            return
        try:
            p = client.prove(circuit, inputs, wait=60)[0]
            for part, key in (("proof", "proof"), ("public", "publicSignals")):
                with open(os.path.join(outdir, f"s{i}.{part}.json"), "w") as f:
                    json.dump(p[key], f)
        except Exception as e:  # reported, not raised: the bench says which failed
            with lock:
                errors.append(f"proof {i}: {e}")


threads = [threading.Thread(target=worker) for _ in range(t)]
for th in threads:
    th.start()
def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


start.wait()
t0, c0 = time.monotonic(), cpu()
for th in threads:
    th.join()
print(json.dumps({"wall": round(time.monotonic() - t0, 3), "cpu": round(cpu() - c0, 3), "errors": errors}))
