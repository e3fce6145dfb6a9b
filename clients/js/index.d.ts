// Types of cuzk-client (index.js): the client of cuzk-api, docs/api.md of the cuzk tree.

/** One input.json object: the circuit's main input signals by name. */
export type InputObject = Record<string, unknown>;
/** One object (one partition), an array of them (a partition each) or a .wtns's bytes. */
export type Inputs = InputObject | InputObject[] | Uint8Array | ArrayBuffer;

/** A job's metadata: at most 16 keys. */
export type Metadata = Record<string, string | number | boolean | null>;

/** An RFC 9457 problem document as cuzk-api writes it, with its extra members. */
export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  code?: string;
  [member: string]: unknown;
}

export class CuzkError extends Error {}
/** No answer: the connection failed or timed out. */
export class CuzkTransportError extends CuzkError {}
/** An error answer: the problem document's members as properties, extra ones too. */
export class CuzkApiError extends CuzkError {
  readonly status: number;
  readonly type: string;
  readonly code: string;
  readonly title: string;
  readonly detail: string;
  readonly problem: Problem;
  /** The members beyond type, title, status, detail, code, instance. */
  readonly extra: Record<string, unknown>;
  /** Retry-After in seconds, or null. */
  readonly retryAfter: number | null;
  readonly [member: string]: unknown;
  constructor(status: number, problem: Problem, retryAfter?: number | null);
}
/** verifyCallback refused a callback: a malformed or unmatched signature, or a stale timestamp. */
export class CuzkSignatureError extends CuzkError {}
/** waitJob ran out of time; job is its last state. */
export class CuzkJobTimeout extends CuzkError {
  readonly job: Job;
}

export interface ClientOptions {
  /** http(s)://host:port (a path prefix allowed); default process.env.CUZK_API_URL. */
  baseUrl?: string;
  /** The bearer token; default process.env.CUZK_API_TOKEN. */
  token?: string;
  /** Each request's bound (a long poll adds its wait); default 60000. */
  timeoutMs?: number;
  /** How many times a 429 or 503 is sent again; default 5. */
  maxRetries?: number;
  /** The longest sleep before a retry; default 60000. */
  maxRetryWaitMs?: number;
  /** Told before each retry (awaited). */
  onRetry?: (attempt: number, delayMs: number, error: CuzkApiError) => void | Promise<void>;
  /** Another fetch; default globalThis.fetch. */
  fetch?: typeof globalThis.fetch;
}

export interface SubmitOptions {
  /** 0-1000000, higher first; lowered to the tenant's priority cap. */
  priority?: number;
  /** The same key and body answer the first job again (existing: true). */
  idempotencyKey?: string;
  /** Up to 16 values kept with the job and listed with it (the Cuzk-Metadata header). */
  metadata?: Metadata;
  /** 0-600 s: the answer holds the proofs when the job ends within it. */
  wait?: number;
  /** The job's end is POSTed here, signed (verifyCallback); a host the tenant's callback-hosts names. */
  callbackUrl?: string;
}

/** A partition seen in another state (event "part"). */
export interface PartEventData {
  k: number;
  state: string;
  reason?: string;
}

/** The job's end (event "job"), the last event. */
export interface JobEventData {
  job: number;
  state: string;
  partitions: number;
  done: number;
  failed: number;
  reason?: string;
}

/** One Server-Sent Event of events(): id is the event's own id: line (the last of a batch, "end" for the job event), else null. */
export type JobEvent =
  | { id: string | null; event: "part"; data: PartEventData }
  | { id: string | null; event: "job"; data: JobEventData };

/** A callback's body as verifyCallback returns it. */
export interface CallbackBody {
  type: "job.ended" | string;
  job: number;
  circuit: string;
  state: string;
  partitions: number;
  done: number;
  failed: number;
  ended_unix: number;
  reason?: string;
  [member: string]: unknown;
}

export interface VerifyCallbackOptions {
  /** Seconds t may be from now (a replay beyond it is refused); default 300. */
  tolerance?: number;
  /** Unix seconds; default this clock. */
  now?: number;
}

/**
 * Check a callback's Cuzk-Signature (HMAC-SHA256 of "t.body" with the tenant's callback
 * secret, compared in constant time; t within tolerance) over the raw body and return the
 * body parsed; throws CuzkSignatureError.
 */
export function verifyCallback(secret: string, signatureHeader: string, body: string | Uint8Array | ArrayBuffer, options?: VerifyCallbackOptions): CallbackBody;

/** snarkjs's proof.json. */
export interface Groth16Proof {
  pi_a: string[];
  pi_b: string[][];
  pi_c: string[];
  protocol: string;
  curve: string;
}

/** A partition's entry: proof, publicSignals, verified when done, else state and reason. */
export interface ProofEntry {
  k?: number;
  proof?: Groth16Proof;
  publicSignals?: string[];
  verified?: boolean;
  state?: string;
  reason?: string;
}

/** The answer to submit: 202 without proofs, or, with wait and a job ended in time, with them. */
export interface Submitted {
  job: number;
  circuit: string;
  partitions: number;
  existing: boolean;
  location: string;
  state?: string;
  offset?: number;
  proofs?: ProofEntry[];
  next?: string;
}

export interface Part {
  state: string;
  reason?: string;
  attempts?: number;
  timings_ms?: Record<string, number>;
}

export interface Job {
  job: number;
  state: "running" | "done" | "failed" | "cancelled" | string;
  reason?: string;
  circuit?: string;
  submitted_unix?: number;
  partitions: number;
  done: number;
  failed: number;
  parts?: Part[];
  metadata?: Metadata;
}

export interface JobPage {
  jobs: Job[];
  next_cursor?: string;
  next?: string;
}

export interface ListOptions {
  state?: string;
  circuit?: string;
  /** Unix seconds: jobs submitted at or after. */
  since?: number;
  limit?: number;
  cursor?: string;
}

export interface Circuit {
  name: string;
  state: string;
  curve?: string;
  constraints?: number;
  public?: number;
  fingerprint?: string;
  max_input_bytes?: number;
  has_witness_gen?: boolean;
  inputs?: { name: string; size: number }[];
  [member: string]: unknown;
}

export interface Cancelled {
  job: number;
  cancelled: boolean;
  state: string;
}

export class CuzkClient {
  readonly baseUrl: string;
  readonly token: string | null;
  constructor(options?: ClientOptions);
  submit(circuit: string, inputs: Inputs, options?: SubmitOptions): Promise<Submitted>;
  job(id: number | string, options?: { wait?: number }): Promise<Job>;
  waitJob(id: number | string, options?: { timeoutMs?: number }): Promise<Job>;
  proofs(id: number | string, options?: { limit?: number }): Promise<ProofEntry[]>;
  proof(id: number | string, k?: number): Promise<ProofEntry>;
  calldata(id: number | string, k?: number): Promise<string>;
  vkey(circuit: string, options?: { raw?: false }): Promise<Record<string, unknown>>;
  vkey(circuit: string, options: { raw: true }): Promise<string>;
  circuits(): Promise<Circuit[]>;
  list(options?: ListOptions): AsyncGenerator<JobPage, void, undefined>;
  cancel(id: number | string): Promise<Cancelled>;
  events(id: number | string, options?: { lastEventId?: string }): AsyncGenerator<JobEvent, void, undefined>;
  prove(circuit: string, inputs: Inputs, options?: SubmitOptions): Promise<ProofEntry[]>;
}
