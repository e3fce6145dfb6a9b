// The client of cuzk-api (docs/api.md of the cuzk tree): plain ESM on Node 18+'s fetch,
// no dependencies. index.d.ts describes every export.
import { createHmac, timingSafeEqual } from "node:crypto";

/** Any error of this package. */
export class CuzkError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = "CuzkError";
  }
}

/**
 * No answer from the API: the connection failed or timed out. The request may or may
 * not have been carried out: a POST sent again with the same idempotencyKey answers the
 * same job, never a second one.
 */
export class CuzkTransportError extends CuzkError {
  constructor(message, options) {
    super(message, options);
    this.name = "CuzkTransportError";
  }
}

// The members every problem document has; the rest are its extra members.
const STANDARD = new Set(["type", "title", "status", "detail", "code", "instance"]);
// Names an extra member must not overwrite on the error object.
const RESERVED = new Set(["name", "message", "stack", "cause", "problem", "extra", "retryAfter"]);

/**
 * The API answered with an error: an RFC 9457 problem document. status, type, code,
 * title, detail are properties, the whole document is `problem`, the members beyond the
 * standard ones are `extra` and also properties (e.signal, e.position). retryAfter: the
 * answer's Retry-After in seconds, or null.
 */
export class CuzkApiError extends CuzkError {
  constructor(status, problem, retryAfter = null) {
    super(`${status} ${problem.code || problem.title || ""}: ${problem.detail ?? ""}`);
    this.name = "CuzkApiError";
    this.problem = problem;
    this.extra = {};
    for (const [k, v] of Object.entries(problem)) {
      if (STANDARD.has(k)) continue;
      this.extra[k] = v;
      if (!RESERVED.has(k)) this[k] = v;
    }
    this.status = status;
    this.type = problem.type ?? "";
    this.code = problem.code ?? "";
    this.title = problem.title ?? "";
    this.detail = problem.detail ?? "";
    this.retryAfter = retryAfter;
  }
}

/** waitJob ran out of time before the job was decided; `job` is its last state. */
export class CuzkJobTimeout extends CuzkError {
  constructor(job, timeoutMs) {
    super(`job ${job.job} still ${job.state} after ${timeoutMs} ms`);
    this.name = "CuzkJobTimeout";
    this.job = job;
  }
}

/**
 * verifyCallback refused a callback: its Cuzk-Signature is malformed, does not match the
 * body under the secret, or its timestamp is beyond the tolerance.
 */
export class CuzkSignatureError extends CuzkError {
  constructor(message) {
    super(message);
    this.name = "CuzkSignatureError";
  }
}

// A job in one of these states is decided; any other (running) may still change.
const DECIDED = new Set(["done", "failed", "cancelled"]);
// The API's longest long poll (?wait=0-600).
const MAX_WAIT_S = 600;

const seg = (v) => encodeURIComponent(String(v));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A client of one cuzk-api. Options: baseUrl and token (default: the environment's
 * CUZK_API_URL and CUZK_API_TOKEN), timeoutMs (each request; a long poll adds its wait),
 * maxRetries and maxRetryWaitMs (429 and 503 are sent again after their Retry-After,
 * else 500 ms doubling), onRetry(attempt, delayMs, error) told before each retry, fetch
 * (another implementation).
 */
export class CuzkClient {
  constructor(options = {}) {
    const env = typeof process !== "undefined" ? process.env : {};
    const url = options.baseUrl ?? env.CUZK_API_URL;
    if (!url) throw new TypeError("no API address: pass baseUrl or set CUZK_API_URL (e.g. http://127.0.0.1:8080)");
    let u;
    try {
      u = new URL(url);
    } catch {
      throw new TypeError(`API address ${JSON.stringify(url)}: expected http://HOST[:PORT] or https://HOST[:PORT]`);
    }
    if (u.protocol !== "http:" && u.protocol !== "https:")
      throw new TypeError(`API address ${JSON.stringify(url)}: expected http://HOST[:PORT] or https://HOST[:PORT]`);
    this.baseUrl = url.replace(/\/+$/, "");
    this.token = options.token ?? env.CUZK_API_TOKEN ?? null;
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.maxRetries = options.maxRetries ?? 5;
    this.maxRetryWaitMs = options.maxRetryWaitMs ?? 60_000;
    this.onRetry = options.onRetry ?? null;
    this.fetch = options.fetch ?? globalThis.fetch;
    if (!(this.maxRetries >= 0 && this.maxRetryWaitMs >= 0 && this.timeoutMs > 0))
      throw new RangeError("maxRetries and maxRetryWaitMs must be >= 0, timeoutMs > 0");
    if (typeof this.fetch !== "function") throw new CuzkError("no fetch: Node 18 or newer, or pass options.fetch");
  }

  /**
   * Submit a job (POST /v1/circuits/{name}/proofs): inputs is one input.json object, an
   * array of them (a partition each, in order) or a .wtns's bytes (Uint8Array,
   * ArrayBuffer). Options: priority, idempotencyKey, metadata (up to 16 values kept and
   * listed with the job, sent as the Cuzk-Metadata header), wait (0-600 s: the answer holds the proofs when the job
   * ends within it), callbackUrl (the job's end is POSTed there, signed with the tenant's
   * callback secret, which verifyCallback checks; a host the tenant's callback-hosts names).
   */
  async submit(circuit, inputs, { priority, idempotencyKey, metadata, wait, callbackUrl } = {}) {
    const headers = {};
    let body;
    if (inputs instanceof Uint8Array || inputs instanceof ArrayBuffer) {
      body = inputs;
      headers["Content-Type"] = "application/octet-stream";
    } else if (inputs !== null && typeof inputs === "object") {
      body = JSON.stringify(inputs);
      headers["Content-Type"] = "application/json";
    } else {
      throw new TypeError(`inputs: an object, an array of objects or a .wtns's bytes, not ${inputs === null ? "null" : typeof inputs}`);
    }
    if (idempotencyKey !== undefined) headers["Idempotency-Key"] = idempotencyKey;
    if (metadata !== undefined) {
      if (metadata === null || typeof metadata !== "object" || Array.isArray(metadata))
        throw new TypeError("metadata: an object of strings, numbers, booleans or nulls");
      headers["Cuzk-Metadata"] = JSON.stringify(metadata);
    }
    return this.#json("POST", `/v1/circuits/${seg(circuit)}/proofs`, {
      query: { priority, wait, callback_url: callbackUrl },
      body,
      headers,
      wait,
    });
  }

  /** The job (GET /v1/jobs/{id}); wait 0-600 s answers once it is decided or the time is up. */
  async job(id, { wait } = {}) {
    return this.#json("GET", `/v1/jobs/${seg(id)}`, { query: { wait }, wait });
  }

  /** The job once decided (done, failed, cancelled), by long polls; timeoutMs passed: CuzkJobTimeout. */
  async waitJob(id, { timeoutMs } = {}) {
    const deadline = timeoutMs === undefined ? null : Date.now() + timeoutMs;
    for (;;) {
      const left = deadline === null ? MAX_WAIT_S : Math.max(0, Math.min(MAX_WAIT_S, Math.ceil((deadline - Date.now()) / 1000)));
      const j = await this.job(id, { wait: left });
      if (DECIDED.has(j.state)) return j;
      if (deadline !== null && Date.now() >= deadline) throw new CuzkJobTimeout(j, timeoutMs);
    }
  }

  /**
   * Every partition's entry in input order (GET /v1/jobs/{id}/proofs, its pages followed
   * by next): {k, proof, publicSignals, verified} when done, else {k, state, reason}.
   */
  async proofs(id, { limit } = {}) {
    const out = [];
    let page = await this.#json("GET", `/v1/jobs/${seg(id)}/proofs`, { query: { limit } });
    for (;;) {
      out.push(...(page.proofs ?? []));
      if (!page.next) return out;
      page = await this.#json("GET", page.next);
    }
  }

  /** Partition k's proof {proof, publicSignals, verified}; not done yet: 409 not_ready. */
  async proof(id, k = 0) {
    return this.#json("GET", `/v1/jobs/${seg(id)}/proofs/${Number(k)}`);
  }

  /** Partition k's proof as Solidity calldata, what snarkjs zkey export soliditycalldata prints. */
  async calldata(id, k = 0) {
    return (await this.#request("GET", `/v1/jobs/${seg(id)}/proofs/${Number(k)}`, { query: { format: "calldata" } })).text();
  }

  /**
   * The circuit's verification key (snarkjs's verification_key.json), parsed; with
   * {raw: true} the text as served, byte-equal to snarkjs zkey export verificationkey.
   */
  async vkey(circuit, { raw = false } = {}) {
    const text = await (await this.#request("GET", `/v1/circuits/${seg(circuit)}/vkey`)).text();
    return raw ? text : JSON.parse(text);
  }

  /** The declared circuits (GET /v1/circuits). */
  async circuits() {
    return (await this.#json("GET", "/v1/circuits")).circuits ?? [];
  }

  /**
   * The tenant's jobs (GET /v1/jobs), newest first, page by page: an async iterator of
   * pages {jobs, next_cursor?}. Filters: state, circuit, since (unix seconds), limit per
   * page; cursor starts at a page an earlier next_cursor named.
   */
  async *list({ state, circuit, since, limit, cursor } = {}) {
    const query = { state, circuit, since, limit, cursor };
    let page = await this.#json("GET", "/v1/jobs", { query });
    for (;;) {
      yield page;
      if (page.next) page = await this.#json("GET", page.next);
      else if (page.next_cursor) page = await this.#json("GET", "/v1/jobs", { query: { ...query, cursor: page.next_cursor } });
      else return;
    }
  }

  /** Cancel the job (DELETE /v1/jobs/{id}): {job, cancelled, state}; cancelled false for a job that had ended. */
  async cancel(id) {
    return this.#json("DELETE", `/v1/jobs/${seg(id)}`);
  }

  /**
   * The job's Server-Sent Events (GET /v1/jobs/{id}/events) as an async iterator of
   * {id, event, data}: a "part" event each time a partition is seen in another state
   * (data {k, state, reason?}), the "job" event (its end) last, after which it ends; id is
   * the event's own id: line, else null. A stream that drops (cut, or silent past
   * timeoutMs plus the server's 15 s keep-alive) is opened again with Last-Event-ID: the
   * last id seen, else lastEventId. maxRetries drops in a row with no event between them
   * (500 ms apart, doubling, at most maxRetryWaitMs) throw CuzkTransportError.
   * lastEventId "end" (the job event was seen) yields nothing. Leaving the loop early
   * closes the stream.
   */
  async *events(id, { lastEventId } = {}) {
    const path = `/v1/jobs/${seg(id)}/events`;
    const idleMs = this.timeoutMs + 15_000;
    let last = lastEventId ?? null;
    for (let drops = 0; ; ) {
      const abort = new AbortController();
      let idle;
      const rearm = () => {
        clearTimeout(idle);
        idle = setTimeout(() => abort.abort(new Error(`nothing came in ${idleMs} ms`)), idleMs);
      };
      let why;
      try {
        rearm();
        const headers = { Accept: "text/event-stream" };
        if (last !== null) headers["Last-Event-ID"] = last;
        const r = await this.#request("GET", path, { headers, signal: abort.signal });
        if (r.status === 204) return; // the server knows the end was seen
        for await (const ev of sseEvents(r.body, rearm)) {
          drops = 0;
          if (ev.id !== null) last = ev.id;
          yield ev;
          if (ev.event === "job") return;
        }
        why = "the stream ended before the job event";
      } catch (e) {
        // An error answer or data that is no JSON stands; a cut or silent stream is a drop.
        if (e instanceof CuzkError && !(e instanceof CuzkTransportError)) throw e;
        why = e.cause?.message ?? e.message;
      } finally {
        clearTimeout(idle);
        abort.abort();
      }
      drops++;
      if (drops > this.maxRetries) throw new CuzkTransportError(`GET ${this.baseUrl}${path}: ${why} (${drops} drops in a row)`);
      await sleep(Math.min(500 * 2 ** (drops - 1), this.maxRetryWaitMs));
    }
  }

  /**
   * Submit and resolve to every partition's entry once the job is decided: from the
   * POST's answer when the job ends within wait (default 60 s), else by waitJob and proofs.
   * Options: submit's (priority, idempotencyKey, metadata, callbackUrl, wait).
   */
  async prove(circuit, inputs, options = {}) {
    const r = await this.submit(circuit, inputs, { wait: 60, ...options });
    if (DECIDED.has(r.state) && (r.offset ?? 0) === 0 && r.proofs?.length === r.partitions) return r.proofs;
    await this.waitJob(r.job);
    return this.proofs(r.job);
  }

  async #json(method, path, opts) {
    const r = await this.#request(method, path, opts);
    const text = await r.text();
    try {
      return JSON.parse(text);
    } catch (e) {
      throw new CuzkError(`${method} ${path}: the answer is no JSON (${e.message}): ${text.slice(0, 200)}`);
    }
  }

  // One request, sent again on 429/503 as the class says; an error answer throws. A
  // signal of the caller's replaces the timeout (a stream is read long after its answer).
  async #request(method, path, { query, body, headers, wait, signal } = {}) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== null) q.set(k, String(v));
    const qs = q.toString();
    const url = this.baseUrl + path + (qs ? "?" + qs : "");
    const h = { Accept: "application/json", ...headers };
    if (this.token) h.Authorization = "Bearer " + this.token;
    const timeoutMs = this.timeoutMs + (wait ?? 0) * 1000;
    for (let attempt = 0; ; ) {
      let r;
      try {
        r = await this.fetch(url, { method, headers: h, body, signal: signal ?? AbortSignal.timeout(timeoutMs) });
      } catch (e) {
        throw new CuzkTransportError(`${method} ${url}: ${e.cause?.message ?? e.message}`, { cause: e });
      }
      if (r.status < 400) return r;
      const err = await problemOf(r);
      if ((r.status !== 429 && r.status !== 503) || attempt >= this.maxRetries) throw err;
      attempt++;
      const delayMs = Math.min(err.retryAfter !== null ? err.retryAfter * 1000 : 500 * 2 ** (attempt - 1), this.maxRetryWaitMs);
      if (this.onRetry) await this.onRetry(attempt, delayMs, err);
      await sleep(delayMs);
    }
  }
}

// The events of a text/event-stream body as the SSE standard reads them (comments and
// keep-alives skipped, data: lines joined), each one's data parsed as JSON; onChunk is
// called as each piece arrives.
async function* sseEvents(body, onChunk) {
  const decoder = new TextDecoder();
  let buf = "";
  let kind = "message";
  let data = [];
  let id = null;
  for await (const chunk of body) {
    onChunk();
    buf += decoder.decode(chunk, { stream: true });
    for (let nl; (nl = buf.indexOf("\n")) >= 0; ) {
      const line = buf.slice(0, nl).replace(/\r$/, "");
      buf = buf.slice(nl + 1);
      if (line === "") {
        // a blank line ends the event
        if (data.length) {
          const text = data.join("\n");
          let doc;
          try {
            doc = JSON.parse(text);
          } catch (e) {
            throw new CuzkError(`event ${kind}: its data is no JSON (${e.message}): ${text.slice(0, 200)}`);
          }
          yield { id, event: kind, data: doc };
        }
        kind = "message";
        data = [];
        id = null;
        continue;
      }
      if (line.startsWith(":")) continue; // a comment: the server's keep-alive
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") kind = value;
      else if (field === "data") data.push(value);
      else if (field === "id" && !value.includes("\0")) id = value;
    }
  }
}

/**
 * Check a callback of cuzk-api and return its body, parsed. secret: the tenant's callback
 * secret as cuzk token --callback-hosts printed it; signatureHeader: the request's
 * Cuzk-Signature (t=UNIX,v1=HEX); body: the raw body as received (a string, Buffer or
 * Uint8Array; parsed and stringified again it would not check). v1 must be HMAC-SHA256 of
 * t, a dot and the body, keyed with the secret (compared in constant time), and t within
 * tolerance seconds (300) of now (unix seconds, default this clock), which refuses a
 * replay. Else it throws CuzkSignatureError.
 */
export function verifyCallback(secret, signatureHeader, body, { tolerance = 300, now } = {}) {
  const raw = typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body.buffer ?? body, body.byteOffset ?? 0, body.byteLength);
  const stamps = [];
  const macs = [];
  for (const item of String(signatureHeader ?? "").split(",")) {
    const eq = item.indexOf("=");
    if (eq < 0) continue;
    const name = item.slice(0, eq).trim();
    if (name === "t") stamps.push(item.slice(eq + 1));
    else if (name === "v1") macs.push(item.slice(eq + 1));
  }
  if (stamps.length !== 1 || !/^\d+$/.test(stamps[0]) || !macs.length)
    throw new CuzkSignatureError(`Cuzk-Signature ${JSON.stringify(signatureHeader)}: expected t=UNIX,v1=HEX`);
  const want = createHmac("sha256", secret).update(`${stamps[0]}.`).update(raw).digest("hex");
  // Every v1 is compared (a sender may list several while its secret changes), each in
  // constant time; a length differing says nothing of the secret.
  let matched = false;
  for (const m of macs) {
    const got = Buffer.from(m);
    if (got.length === want.length && timingSafeEqual(got, Buffer.from(want))) matched = true;
  }
  if (!matched) throw new CuzkSignatureError("Cuzk-Signature: no v1 matches the body under this secret");
  const age = (now ?? Date.now() / 1000) - Number(stamps[0]);
  if (Math.abs(age) > tolerance)
    throw new CuzkSignatureError(`Cuzk-Signature: t is ${age >= 0 ? "+" : ""}${Math.round(age)} s from now, beyond the tolerance of ${tolerance} s`);
  let doc;
  try {
    doc = JSON.parse(raw.toString("utf8"));
  } catch (e) {
    throw new CuzkSignatureError(`the callback's body is no JSON (${e.message})`);
  }
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) throw new CuzkSignatureError("the callback's body is no JSON object");
  return doc;
}

function retryAfterOf(r) {
  const v = r.headers.get("retry-after");
  if (v === null) return null;
  if (/^\s*\d+\s*$/.test(v)) return Number(v);
  const t = Date.parse(v); // the HTTP-date form
  return Number.isNaN(t) ? null : Math.max(0, (t - Date.now()) / 1000);
}

// The answer's problem document, or one made of its status and text when it has none
// (an answer from a proxy in front of the API).
async function problemOf(r) {
  const text = await r.text();
  let doc = null;
  try {
    doc = JSON.parse(text);
  } catch {
    /* not JSON: made below */
  }
  if (doc === null || typeof doc !== "object" || Array.isArray(doc))
    doc = { status: r.status, title: r.statusText, detail: text.slice(0, 500) };
  return new CuzkApiError(r.status, doc, retryAfterOf(r));
}
