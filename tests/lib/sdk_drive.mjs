// The JS SDK's run of tests/scripts/sdk_js.sh, against a real cuzk-api: the same steps
// as tests/lib/sdk_drive.py (its header says what is written where).
// usage: node sdk_drive.mjs SDK-INDEX.js BASE TOKEN TOKEN_ONE WTNS OUTDIR RECV_URL RECV_LOG SECRET PROXY PROXY_LOG
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [sdkPath, base, token, tokenOne, wtnsPath, out, recvUrl, recvLog, secretFile, proxy, proxyLog] = process.argv.slice(2);
const { CuzkClient, CuzkApiError, CuzkSignatureError, verifyCallback } = await import(pathToFileURL(path.resolve(sdkPath)).href);

function check(cond, what) {
  if (!cond) {
    console.log(`FAIL: ${what}`);
    process.exit(1);
  }
}
function save(name, entry) {
  check(entry.verified === true, `${name}: verified is ${entry.verified}`);
  fs.writeFileSync(path.join(out, `${name}.proof.json`), JSON.stringify(entry.proof));
  fs.writeFileSync(path.join(out, `${name}.public.json`), JSON.stringify(entry.publicSignals));
}
// The error a promise rejects with (a resolved one is a failure).
async function rejection(p, what) {
  try {
    await p;
  } catch (e) {
    check(e instanceof CuzkApiError, `${what}: ${e}`);
    return e;
  }
  check(false, `${what} answered`);
}

const INPUT = { x: "7", k: "1234567" };
const A3 = [{ x: "3", k: "5" }, INPUT, { x: "11", k: "2" }];

// The token and address from the environment, as a user's shell would give them.
process.env.CUZK_API_URL = base;
process.env.CUZK_API_TOKEN = token;
const c = new CuzkClient();
const names = (await c.circuits()).map((x) => x.name);
check(names.includes("mul"), `circuits(): ${names}`);
console.log(`ok: circuits() from CUZK_API_URL/CUZK_API_TOKEN: ${names}`);

// An object with wait: the proof comes in the POST's answer.
let r = await c.submit("mul", INPUT, { wait: 300, priority: 5, metadata: { order: 17, sdk: "js" } });
check(r.state === "done" && r.proofs?.length === 1, `submit(object, wait): ${JSON.stringify(r)}`);
save("obj", r.proofs[0]);
const objJob = r.job;
fs.writeFileSync(path.join(out, "obj.job"), String(r.job));
fs.writeFileSync(path.join(out, "obj.calldata"), await c.calldata(r.job, 0));
console.log(`ok: submit(object, {wait: 300}) -> job ${r.job} done with its proof inline; calldata fetched`);

// An array without wait: waitJob, then proofs() over pages of 2 (next followed).
r = await c.submit("mul", A3, { idempotencyKey: "sdk-array-1" });
const arrayJob = r.job;
check(r.partitions === 3 && r.existing === false && r.proofs === undefined, `submit(array): ${JSON.stringify(r)}`);
let j = await c.waitJob(r.job, { timeoutMs: 300_000 });
check(j.state === "done" && j.done === 3, `waitJob: ${JSON.stringify(j)}`);
const ps = await c.proofs(r.job, { limit: 2 });
check(ps.map((p) => p.k).join() === "0,1,2", `proofs({limit: 2}): ${ps.map((p) => p.k)}`);
for (const p of ps) save(`arr-${p.k}`, p);
const again = await c.submit("mul", A3, { idempotencyKey: "sdk-array-1" });
check(again.job === r.job && again.existing === true, `the same idempotency key: ${JSON.stringify(again)}`);
console.log(`ok: submit(array of 3) -> waitJob done -> proofs({limit: 2}) k 0,1,2 over two pages; the same key -> job ${r.job} again`);

// A .wtns's bytes; then job({wait}) and proof(k).
r = await c.submit("mul", fs.readFileSync(wtnsPath));
const wtnsJob = r.job;
j = await c.job(r.job, { wait: 300 });
check(j.state === "done", `job({wait: 300}): ${JSON.stringify(j)}`);
save("wtns", await c.proof(r.job, 0));
console.log("ok: submit(.wtns bytes) -> job({wait: 300}) done -> proof(0)");

fs.writeFileSync(path.join(out, "vkey.json"), await c.vkey("mul", { raw: true }));
check((await c.vkey("mul")).protocol === "groth16", "vkey() parsed");
console.log("ok: vkey({raw: true}) written, vkey() parsed");

// Errors: the problem document's members, extra ones included.
let e = await rejection(c.submit("nope", INPUT), "submit to an undeclared circuit");
check(e.status === 404 && e.type === "refused" && e.code === "no_such_circuit", `undeclared circuit: ${JSON.stringify(e.problem)}`);
e = await rejection(c.submit("mul", [INPUT, { x: "3" }]), "an input without k");
check(e.status === 422 && e.code === "missing_signal" && e.signal === "k" && e.index === 1, `missing signal: ${JSON.stringify(e.problem)}`);
check(JSON.stringify(e.extra) === '{"signal":"k","index":1}' && e.problem.detail === e.detail, `extra: ${JSON.stringify(e.extra)}`);
console.log(`ok: CuzkApiError 404 no_such_circuit; 422 missing_signal with extra members ${JSON.stringify(e.extra)}`);

// The tenant's jobs, newest first, two to a page, every page followed; the metadata
// sent with the first job kept with it.
async function all(it) {
  const pages = [];
  for await (const p of it) pages.push(p);
  return pages;
}
const pages = await all(c.list({ limit: 2 }));
const ids = pages.flatMap((p) => p.jobs.map((j) => j.job));
check(pages.length === 2 && ids.join() === [wtnsJob, arrayJob, objJob].join(), `list({limit: 2}): ${JSON.stringify(pages)}`);
const meta = JSON.stringify({ order: 17, sdk: "js" });
check(JSON.stringify(pages[1].jobs.at(-1).metadata) === meta, `the listed job's metadata: ${JSON.stringify(pages[1].jobs.at(-1))}`);
check(JSON.stringify((await c.job(objJob)).metadata) === meta, "job()'s metadata");
check((await all(c.list({ circuit: "mul", state: "done" }))).flatMap((p) => p.jobs.map((j) => j.job)).join() === ids.join(), "list({circuit, state: done})");
check((await all(c.list({ state: "failed" }))).flatMap((p) => p.jobs).length === 0, "list({state: failed})");
check((await all(c.list({ since: Math.floor(Date.now() / 1000) + 3600 }))).flatMap((p) => p.jobs).length === 0, "list({since: in an hour})");
console.log(`ok: list({limit: 2}) -> jobs ${ids} over 2 pages, newest first; metadata ${meta} kept; state, circuit, since filter`);

// A 429 retried after its Retry-After: the tenant may run one job; a long one is running
// when the second is sent, so the second is refused (quota); the retry hook cancels the
// first, and the retry gets through.
const retries = [];
let big;
const one = new CuzkClient({
  baseUrl: base,
  token: tokenOne,
  maxRetries: 3,
  async onRetry(attempt, delayMs, err) {
    retries.push([attempt, delayMs, err.status, err.code]);
    if (attempt === 1) {
      const cancelled = await one.cancel(big.job);
      // (its state may read running until the partitions in flight have ended)
      check(cancelled.cancelled === true, `cancel: ${JSON.stringify(cancelled)}`);
    }
  },
});
big = await one.submit("mul", Array(1000).fill(INPUT));
r = await one.submit("mul", INPUT, { wait: 300 });
check(JSON.stringify(retries[0]) === JSON.stringify([1, 10000, 429, "quota"]), `retries: ${JSON.stringify(retries)}`);
check(r.state === "done", `the retried submit: ${JSON.stringify(r)}`);
save("retried", r.proofs[0]);
j = await one.job(big.job, { wait: 300 });
check(j.state === "cancelled", `the cancelled job reads: ${j.state}`);
console.log(`ok: 429 quota -> onRetry ${JSON.stringify(retries)} (Retry-After 10 s honoured); cancel(job ${big.job}) -> cancelled; the retry proved`);

// Bounded: no retries allowed, the 429 is thrown.
big = await one.submit("mul", Array(1000).fill(INPUT));
e = await rejection(new CuzkClient({ baseUrl: base, token: tokenOne, maxRetries: 0 }).submit("mul", INPUT), "a second job of a tenant of one");
check(e.status === 429 && e.code === "quota" && e.retryAfter === 10, `maxRetries 0: ${JSON.stringify(e.problem)}`);
await one.cancel(big.job);
console.log("ok: maxRetries 0 -> CuzkApiError 429 quota, retryAfter 10");

// ---- pushed completions ----------------------------------------------------------------
// A job with a callback, followed by its events to its end through the proxy that cuts
// the first stream after its first event: the iterator opens it again from that event's id.
r = await c.submit("mul", INPUT, { callbackUrl: `${recvUrl}/sdk/events` });
const evs = [];
for await (const ev of new CuzkClient({ baseUrl: proxy, token }).events(r.job)) evs.push(ev);
const kinds = evs.map((x) => x.event);
const evText = JSON.stringify(evs);
check(kinds.at(-1) === "job" && evs.at(-1).data.state === "done" && evs.at(-1).id === "end", `events: ${evText}`);
check(kinds.length > 1 && kinds.slice(0, -1).every((k) => k === "part"), `events: ${evText}`);
check(JSON.stringify(evs.at(-2).data) === JSON.stringify({ k: 0, state: "done" }), `events: ${evText}`);
const streams = fs.readFileSync(proxyLog, "utf8").trim().split("\n").map((l) => JSON.parse(l));
check(streams.length === 2 && streams[0].cut && streams[0].last_event_id === null, `the proxy's log: ${JSON.stringify(streams)}`);
check(evs[0].id !== null && streams[1].last_event_id === evs[0].id, `resumed from ${JSON.stringify(streams[1])}, first event ${JSON.stringify(evs[0])}`);
save("events", (await c.proofs(r.job))[0]);
const eventsJob = r.job;
// Resumed by the caller: after the end, nothing; from a progress, the states again and the end.
const collect = async (it) => {
  const a = [];
  for await (const x of it) a.push(x);
  return a;
};
check((await collect(c.events(eventsJob, { lastEventId: "end" }))).length === 0, "events({lastEventId: 'end'})");
const fromOne = await collect(c.events(eventsJob, { lastEventId: "1" }));
check(JSON.stringify(fromOne.map((x) => x.event)) === '["part","job"]', `events({lastEventId: '1'}): ${JSON.stringify(fromOne)}`);
console.log(
  `ok: events(job ${eventsJob}): ${evs.length} events to the job event; the cut stream resumed with Last-Event-ID ${streams[1].last_event_id}; lastEventId 'end' -> none, '1' -> ${fromOne.length}`,
);

// The one-call prove with a callback.
const p = await c.prove("mul", { x: "5", k: "99" }, { wait: 300, callbackUrl: `${recvUrl}/sdk/prove` });
save("prove-cb", p[0]);
const proveJob = (await c.list({ limit: 1 }).next()).value.jobs[0].job;

// Both callbacks, as the receiver got them, pass verifyCallback; an altered byte of the
// body, an altered timestamp, a stale one or another secret do not.
const secret = fs.readFileSync(secretFile, "utf8").trim();
const deadline = Date.now() + 120_000; // a liveness bound
let got;
for (;;) {
  got = {};
  for (const l of fs.readFileSync(recvLog, "utf8").split("\n").filter(Boolean)) {
    const d = JSON.parse(l);
    if (d.status === 200) got[d.path] = d;
  }
  if (got["/sdk/events"] && got["/sdk/prove"]) break;
  check(Date.now() < deadline, `the callbacks within 120 s: ${JSON.stringify(got)}`);
  await new Promise((res) => setTimeout(res, 100));
}
for (const [where, job] of [["/sdk/events", eventsJob], ["/sdk/prove", proveJob]]) {
  const d = got[where];
  const doc = verifyCallback(secret, d.signature, Buffer.from(d.raw));
  check(doc.type === "job.ended" && doc.job === job && doc.state === "done", `callback ${where}: ${JSON.stringify(doc)}`);
  const t = Number(d.signature.split(",")[0].slice(2));
  const i = d.raw.indexOf('"done"'); // one byte of the body altered: "done" -> "dona"
  for (const [what, args] of [
    ["a byte of the body", [secret, d.signature, d.raw.slice(0, i + 4) + "a" + d.raw.slice(i + 5)]],
    ["the timestamp", [secret, d.signature.replace(`t=${t},`, `t=${t + 1},`), d.raw]],
    ["a stale timestamp", [secret, d.signature, d.raw, { now: t + 301 }]],
    ["another secret", ["0".repeat(64), d.signature, d.raw]],
  ]) {
    let refused = false;
    try {
      verifyCallback(...args);
    } catch (e) {
      check(e instanceof CuzkSignatureError, `${what}: ${e}`);
      refused = true;
    }
    check(refused, `verifyCallback accepted ${what} altered`);
  }
}
console.log(
  `ok: callbacks of jobs ${eventsJob} (submit) and ${proveJob} (prove) pass verifyCallback; an altered body byte, timestamp, a stale t or another secret throw CuzkSignatureError`,
);
