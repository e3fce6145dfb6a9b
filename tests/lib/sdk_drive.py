"""The Python SDK's run of tests/scripts/sdk_python.sh, against a real cuzk-api.

usage: sdk_drive.py BASE TOKEN TOKEN_ONE WTNS OUTDIR
  TOKEN: a tenant without limits; TOKEN_ONE: a tenant of MAX-RUNNING-JOBS 1. Every proof
  the SDK fetches goes to OUTDIR/NAME.proof.json and .public.json for snarkjs; the
  vkey's bytes to OUTDIR/vkey.json; partition 0's calldata of job "obj" to
  OUTDIR/obj.calldata, that job's id to OUTDIR/obj.job. Prints "ok: ..." per step; any
  unmet expectation raises (exit 1). tests/lib/sdk_drive.mjs is the same run in JS.
"""
import json
import os
import sys
import time

import cuzk_client
from cuzk_client import ApiError, Client

base, token, token_one, wtns_path, out = sys.argv[1:6]
# The package under test is the one pip installed, never the tree's copy.
assert "site-packages" in cuzk_client.__file__, f"cuzk_client imported from {cuzk_client.__file__}"


def check(cond, what):
    if not cond:
        raise SystemExit(f"FAIL: {what}")


def save(name, entry):
    check(entry.get("verified") is True, f"{name}: verified is {entry.get('verified')!r}")
    for part, key in (("proof", "proof"), ("public", "publicSignals")):
        with open(os.path.join(out, f"{name}.{part}.json"), "w") as f:
            json.dump(entry[key], f)


INPUT = {"x": "7", "k": "1234567"}

# The token and address from the environment, as a user's shell would give them.
os.environ["CUZK_API_URL"], os.environ["CUZK_API_TOKEN"] = base, token
c = Client()
names = [x["name"] for x in c.circuits()]
check("mul" in names, f"circuits(): {names}")
print(f"ok: circuits() from CUZK_API_URL/CUZK_API_TOKEN: {names}")

# An object with wait: the proof comes in the POST's answer.
r = c.submit("mul", INPUT, wait=300, priority=5, metadata={"order": 17, "sdk": "python"})
check(r.get("state") == "done" and len(r.get("proofs", [])) == 1, f"submit(object, wait): {r}")
save("obj", r["proofs"][0])
obj_job = r["job"]
with open(os.path.join(out, "obj.job"), "w") as f:
    f.write(str(r["job"]))
with open(os.path.join(out, "obj.calldata"), "w") as f:
    f.write(c.calldata(r["job"], 0))
print(f"ok: submit(object, wait=300) -> job {r['job']} done with its proof inline; calldata fetched")

# An array without wait: wait_job, then proofs() over pages of 2 (next followed).
r = c.submit("mul", [{"x": "3", "k": "5"}, INPUT, {"x": "11", "k": "2"}], idempotency_key="sdk-array-1")
array_job = r["job"]
check(r.get("partitions") == 3 and r.get("existing") is False and "proofs" not in r, f"submit(array): {r}")
j = c.wait_job(r["job"], timeout=300)
check(j["state"] == "done" and j["done"] == 3, f"wait_job: {j}")
ps = c.proofs(r["job"], limit=2)
check([p["k"] for p in ps] == [0, 1, 2], f"proofs(limit=2): {[p.get('k') for p in ps]}")
for p in ps:
    save(f"arr-{p['k']}", p)
again = c.submit("mul", [{"x": "3", "k": "5"}, INPUT, {"x": "11", "k": "2"}], idempotency_key="sdk-array-1")
check(again["job"] == r["job"] and again["existing"] is True, f"the same idempotency key: {again}")
print(f"ok: submit(array of 3) -> wait_job done -> proofs(limit=2) k 0,1,2 over two pages; the same key -> job {r['job']} again")

# A .wtns's bytes; then job(wait) and proof(k).
with open(wtns_path, "rb") as f:
    r = c.submit("mul", f.read())
wtns_job = r["job"]
j = c.job(r["job"], wait=300)
check(j["state"] == "done", f"job(wait=300): {j}")
save("wtns", c.proof(r["job"], 0))
print("ok: submit(.wtns bytes) -> job(wait=300) done -> proof(k=0)")

with open(os.path.join(out, "vkey.json"), "wb") as f:
    f.write(c.vkey("mul", raw=True))
check(c.vkey("mul")["protocol"] == "groth16", "vkey() parsed")
print("ok: vkey(raw=True) written, vkey() parsed")

# Errors: the problem document's members, extra ones included.
try:
    c.submit("nope", INPUT)
    check(False, "submit to an undeclared circuit answered")
except ApiError as e:
    check((e.status, e.type, e.code) == (404, "refused", "no_such_circuit"), f"undeclared circuit: {e.problem}")
try:
    c.submit("mul", [INPUT, {"x": "3"}])
    check(False, "an input without k answered")
except ApiError as e:
    check((e.status, e.code, e.signal, e.index) == (422, "missing_signal", "k", 1), f"missing signal: {e.problem}")
    check(e.extra == {"signal": "k", "index": 1} and e.problem["detail"] == e.detail, f"extra: {e.extra}")
    extra = e.extra
print(f"ok: ApiError 404 no_such_circuit; 422 missing_signal with extra members {extra}")

# The tenant's jobs, newest first, two to a page, every page followed; the metadata
# sent with the first job kept with it.
pages = list(c.list(limit=2))
ids = [j["job"] for p in pages for j in p["jobs"]]
check(len(pages) == 2 and ids == [wtns_job, array_job, obj_job], f"list(limit=2): {pages}")
meta = {"order": 17, "sdk": "python"}
check(pages[1]["jobs"][-1].get("metadata") == meta, f"the listed job's metadata: {pages[1]['jobs'][-1]}")
check(c.job(obj_job).get("metadata") == meta, "job()'s metadata")
check([j["job"] for p in c.list(circuit="mul", state="done") for j in p["jobs"]] == ids, "list(circuit, state=done)")
check([j for p in c.list(state="failed") for j in p["jobs"]] == [], "list(state=failed)")
late = [j for p in c.list(since=int(time.time()) + 3600) for j in p["jobs"]]
check(late == [], f"list(since=in an hour): {late}")
print(f"ok: list(limit=2) -> jobs {ids} over 2 pages, newest first; metadata {meta} kept; state, circuit, since filter")

# A 429 retried after its Retry-After. The tenant may run one job: a long one is running
# when the second is sent, so the second is refused (quota); the retry hook cancels the
# first, and the retry gets through.
one = Client(base, token_one, max_retries=3)
big = one.submit("mul", [INPUT] * 1000)
retries = []


def on_retry(attempt, delay, err):
    retries.append((attempt, delay, err.status, err.code))
    if attempt == 1:
        cancelled = one.cancel(big["job"])
        # (its state may read running until the partitions in flight have ended)
        check(cancelled["cancelled"] is True, f"cancel: {cancelled}")


one.on_retry = on_retry
r = one.submit("mul", INPUT, wait=300)
check(retries and retries[0] == (1, 10.0, 429, "quota"), f"retries: {retries}")
check(r.get("state") == "done", f"the retried submit: {r}")
save("retried", r["proofs"][0])
j = one.job(big["job"], wait=300)
check(j["state"] == "cancelled", f"the cancelled job reads: {j['state']}")
print(f"ok: 429 quota -> on_retry {retries} (Retry-After 10 s honoured); cancel(job {big['job']}) -> cancelled; the retry proved")

# Bounded: no retries allowed, the 429 is raised.
big = one.submit("mul", [INPUT] * 1000)
try:
    Client(base, token_one, max_retries=0).submit("mul", INPUT)
    check(False, "a second job of a tenant of one answered")
except ApiError as e:
    check((e.status, e.code, e.retry_after) == (429, "quota", 10.0), f"max_retries=0: {e.problem}")
one.cancel(big["job"])
print("ok: max_retries=0 -> ApiError 429 quota, retry_after 10")
