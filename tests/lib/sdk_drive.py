"""The Python SDK's run of tests/scripts/sdk_python.sh, against a real cuzk-api.

usage: sdk_drive.py BASE TOKEN TOKEN_ONE WTNS OUTDIR RECV_URL RECV_LOG SECRET PROXY PROXY_LOG
  TOKEN: a tenant without limits, called back at RECV_URL (tests/lib/callback_receiver.py,
  its requests in RECV_LOG; SECRET the file of its callback secret); TOKEN_ONE: a tenant
  of MAX-RUNNING-JOBS 1; PROXY: the API's address through tests/lib/sse_cut_proxy.py,
  which cuts the first event stream after its first event (its requests in PROXY_LOG). Every proof
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
from cuzk_client import ApiError, Client, SignatureError, verify_callback

base, token, token_one, wtns_path, out, recv_url, recv_log, secret_file, proxy, proxy_log = sys.argv[1:11]
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

# ---- pushed completions ----------------------------------------------------------------
# A job with a callback, followed by its events to its end through the proxy that cuts
# the first stream after its first event: the iterator opens it again from that event's id.
r = c.submit("mul", INPUT, callback_url=f"{recv_url}/sdk/events")
evs = list(Client(proxy, token).events(r["job"]))
kinds = [e["event"] for e in evs]
check(kinds[-1] == "job" and evs[-1]["data"]["state"] == "done" and evs[-1]["id"] == "end", f"events: {evs}")
check(kinds[:-1] and set(kinds[:-1]) == {"part"} and evs[-2]["data"] == {"k": 0, "state": "done"}, f"events: {evs}")
with open(proxy_log) as f:
    streams = [json.loads(line) for line in f]
check(len(streams) == 2 and streams[0]["cut"] and streams[0]["last_event_id"] is None, f"the proxy's log: {streams}")
check(evs[0]["id"] is not None and streams[1]["last_event_id"] == evs[0]["id"], f"resumed from {streams[1]}, first event {evs[0]}")
proofs = c.proofs(r["job"])
save("events", proofs[0])
events_job = r["job"]
# Resumed by the caller: after the end, nothing; from a progress, the states again and the end.
check(list(c.events(events_job, last_event_id="end")) == [], "events(last_event_id='end')")
from_one = list(c.events(events_job, last_event_id="1"))
check([e["event"] for e in from_one] == ["part", "job"], f"events(last_event_id='1'): {from_one}")
print(f"ok: events(job {events_job}): {len(evs)} events to the job event; the cut stream resumed with "
      f"Last-Event-ID {streams[1]['last_event_id']}; last_event_id 'end' -> none, '1' -> {len(from_one)}")

# The one-call prove with a callback.
p = c.prove("mul", {"x": "5", "k": "99"}, wait=300, callback_url=f"{recv_url}/sdk/prove")
save("prove-cb", p[0])
prove_job = next(c.list(limit=1))["jobs"][0]["job"]  # the tenant's newest

# Both callbacks, as the receiver got them, pass verify_callback; an altered byte of
# the body, an altered timestamp or a stale one do not.
with open(secret_file) as f:
    secret = f.read().strip()
deadline = time.monotonic() + 120  # a liveness bound
while True:
    with open(recv_log) as f:
        got = {d["path"]: d for d in map(json.loads, f) if d["status"] == 200}
    if "/sdk/events" in got and "/sdk/prove" in got:
        break
    check(time.monotonic() < deadline, f"the callbacks within 120 s: {got}")
    time.sleep(0.1)
for path, job in (("/sdk/events", events_job), ("/sdk/prove", prove_job)):
    d = got[path]
    doc = verify_callback(secret, d["signature"], d["raw"].encode())
    check(doc["type"] == "job.ended" and doc["job"] == job and doc["state"] == "done", f"callback {path}: {doc}")
    t = int(d["signature"].split(",")[0][2:])
    raw = d["raw"].encode()
    i = raw.index(b'"done"')  # one byte of the body altered: "done" -> "dona"
    for what, args, kw in (
            ("a byte of the body", (d["signature"], raw[:i + 4] + b"a" + raw[i + 5:]), {}),
            ("the timestamp", (d["signature"].replace(f"t={t},", f"t={t + 1},"), raw), {}),
            ("a stale timestamp", (d["signature"], raw), {"now": t + 301}),
            ("another secret", (d["signature"], raw), {"secret": "0" * 64})):
        try:
            verify_callback(kw.pop("secret", secret), *args, **kw)
            check(False, f"verify_callback accepted {what} altered")
        except SignatureError:
            pass
print(f"ok: callbacks of jobs {events_job} (submit) and {prove_job} (prove) pass verify_callback; "
      "an altered body byte, timestamp, a stale t or another secret raise SignatureError")
