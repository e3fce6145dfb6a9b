"""The client of cuzk-api (docs/api.md of the cuzk tree): one class, standard library only."""
from __future__ import annotations

import email.utils
import hashlib
import hmac
import http.client
import json
import math
import os
import ssl
import threading
import time
import urllib.parse
from typing import (Any, Callable, Dict, Iterator, List, Literal, Mapping, Optional, Sequence, Tuple,
                    TypedDict, Union, overload)

from .errors import ApiError, CuzkError, JobTimeout, SignatureError, TransportError

__all__ = ["Client", "Event", "Inputs", "Metadata", "RetryHook", "verify_callback"]

#: One input.json object (one partition), a sequence of them (one job, a partition
#: each, in order) or the bytes of a ``.wtns`` (one partition).
Inputs = Union[Mapping[str, Any], Sequence[Mapping[str, Any]], bytes, bytearray, memoryview]

#: A job's metadata: at most 16 keys, each value a string, a number, a bool or None.
Metadata = Mapping[str, Union[str, int, float, bool, None]]

#: Called before each retry: (attempt from 1, seconds it will sleep, the 429/503 error).
RetryHook = Callable[[int, float, ApiError], None]

# A job in one of these states is decided; any other (running) may still change.
_DECIDED = frozenset(("done", "failed", "cancelled"))
# The API's longest long poll (?wait=0-600).
_MAX_WAIT = 600


class Submitted(TypedDict, total=False):
    """The answer to a POST: 202 without the proofs, or, with ``wait`` and a job that
    ended in time, 200 with ``state``, ``offset`` and ``proofs`` as ``proofs()`` gives."""

    job: int
    circuit: str
    partitions: int
    existing: bool
    location: str
    state: str
    offset: int
    proofs: List[Dict[str, Any]]


class Job(TypedDict, total=False):
    """A job: ``state`` (running, done, failed, cancelled), ``reason``, ``circuit``,
    ``submitted_unix``, ``partitions``, ``done``, ``failed``, ``parts`` (each with
    ``state``, ``reason``, ``attempts``, ``timings_ms``), and ``metadata`` if sent."""

    job: int
    state: str
    reason: str
    circuit: str
    submitted_unix: int
    partitions: int
    done: int
    failed: int
    parts: List[Dict[str, Any]]
    metadata: Dict[str, Any]


class Proof(TypedDict, total=False):
    """A partition's proof: snarkjs's proof.json (``proof``) and public.json
    (``publicSignals``), ``verified`` (cuzkd checked its pairing); in ``proofs()``
    also ``k``, and for a partition without a proof ``state`` and ``reason``."""

    k: int
    proof: Dict[str, Any]
    publicSignals: List[str]
    verified: bool
    state: str
    reason: str


class Event(TypedDict):
    """One Server-Sent Event of ``events()``: ``event`` is ``part`` (``data``:
    ``{"k","state","reason"?}``) or ``job`` (the job's end, the last: ``{"job","state",
    "partitions","done","failed"}``); ``id`` the event's own ``id:`` (the last of a
    batch carries the job's progress, the job event ``end``), else None."""

    id: Optional[str]
    event: str
    data: Dict[str, Any]


class JobPage(TypedDict, total=False):
    """A page of ``list()``: ``jobs`` (each like ``Job`` without ``parts``) and,
    when more follow, ``next_cursor`` and ``next``."""

    jobs: List[Job]
    next_cursor: str
    next: str


class Client:
    """A client of one cuzk-api.

    ``base_url`` (``http(s)://host:port``, a path prefix allowed) and ``token`` default
    to the environment's ``CUZK_API_URL`` and ``CUZK_API_TOKEN``. ``timeout`` bounds
    each request's connect and each read (a long poll adds its ``wait``). An answer
    429 or 503 is sent again after its ``Retry-After`` (else 0.5 s, doubling), at most
    ``max_retries`` times, each sleep at most ``max_retry_wait`` seconds; ``on_retry``
    is told before each. Any other error answer raises ``ApiError``.

    One client may be used from many threads: each thread keeps its own keep-alive
    connection.
    """

    def __init__(self, base_url: Optional[str] = None, token: Optional[str] = None, *,
                 timeout: float = 60.0, max_retries: int = 5, max_retry_wait: float = 60.0,
                 on_retry: Optional[RetryHook] = None,
                 ssl_context: Optional[ssl.SSLContext] = None) -> None:
        url = base_url or os.environ.get("CUZK_API_URL")
        if not url:
            raise ValueError("no API address: pass base_url or set CUZK_API_URL (e.g. http://127.0.0.1:8080)")
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"API address {url!r}: expected http://HOST[:PORT] or https://HOST[:PORT]")
        if max_retries < 0 or max_retry_wait < 0 or timeout <= 0:
            raise ValueError("max_retries and max_retry_wait must be >= 0, timeout > 0")
        self.base_url = url.rstrip("/")
        self.token = token if token is not None else os.environ.get("CUZK_API_TOKEN")
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self.on_retry = on_retry
        self._https = u.scheme == "https"
        self._host = u.hostname
        self._port = u.port or (443 if self._https else 80)
        self._prefix = u.path.rstrip("/")
        self._ssl = ssl_context if ssl_context is not None else (ssl.create_default_context() if self._https else None)
        self._local = threading.local()
        self._conns: List[http.client.HTTPConnection] = []
        self._conns_lock = threading.Lock()

    # ---- the endpoints ----------------------------------------------------------------

    def submit(self, circuit: str, inputs: Inputs, *, priority: Optional[int] = None,
               idempotency_key: Optional[str] = None, metadata: Optional[Metadata] = None,
               wait: Optional[int] = None, callback_url: Optional[str] = None) -> Submitted:
        """Submit a job of circuit ``circuit`` (``POST /v1/circuits/{name}/proofs``).

        ``inputs``: an input.json object (a dict), a list of them (a partition each, in
        order) or a ``.wtns`` file's bytes. ``priority`` 0-1000000 (higher first, lowered
        to the tenant's cap); ``idempotency_key``: the same key and body answer the first
        job again (``existing`` true); ``metadata``: up to 16 values (strings, numbers,
        bools, None) kept with the job and listed with it (the ``Cuzk-Metadata``
        header); ``wait`` 0-600 s: the answer holds the proofs (``proofs``) when the job
        ends within it; ``callback_url``: the job's end is POSTed there, signed with the
        tenant's callback secret (``verify_callback`` checks it), to a host the tenant's
        ``callback-hosts`` names.
        """
        headers: Dict[str, str] = {}
        if isinstance(inputs, (bytes, bytearray, memoryview)):
            body = bytes(inputs)
            headers["Content-Type"] = "application/octet-stream"
        elif isinstance(inputs, Mapping):
            body = json.dumps(dict(inputs), separators=(",", ":")).encode()
            headers["Content-Type"] = "application/json"
        elif isinstance(inputs, Sequence) and not isinstance(inputs, str):
            body = json.dumps([dict(i) for i in inputs], separators=(",", ":")).encode()
            headers["Content-Type"] = "application/json"
        else:
            raise TypeError(f"inputs: a dict, a list of dicts or the bytes of a .wtns, not {type(inputs).__name__}")
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        if metadata is not None:
            if not isinstance(metadata, Mapping):
                raise TypeError(f"metadata: a dict, not {type(metadata).__name__}")
            headers["Cuzk-Metadata"] = json.dumps(dict(metadata), separators=(",", ":"))
        query = {"priority": priority, "wait": wait, "callback_url": callback_url}
        return self._json("POST", f"/v1/circuits/{_seg(circuit)}/proofs", query=query, body=body,
                          headers=headers, wait=wait)

    def job(self, job_id: Union[int, str], *, wait: Optional[int] = None) -> Job:
        """The job (``GET /v1/jobs/{id}``); ``wait`` 0-600 s answers once it is decided or
        the time is up (a long poll)."""
        return self._json("GET", f"/v1/jobs/{_seg(job_id)}", query={"wait": wait}, wait=wait)

    def wait_job(self, job_id: Union[int, str], *, timeout: Optional[float] = None) -> Job:
        """The job once decided (done, failed or cancelled), by long polls of at most 600 s.
        ``timeout`` (seconds, None: no bound) passed: ``JobTimeout``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = _MAX_WAIT if deadline is None else max(0, min(_MAX_WAIT, math.ceil(deadline - time.monotonic())))
            j = self.job(job_id, wait=left)
            if j.get("state") in _DECIDED:
                return j
            if deadline is not None and time.monotonic() >= deadline:
                raise JobTimeout(dict(j), timeout or 0)

    def proofs(self, job_id: Union[int, str], *, limit: Optional[int] = None) -> List[Proof]:
        """Every partition's entry in input order (``GET /v1/jobs/{id}/proofs``, its pages
        followed by ``next``): ``k``, ``proof``, ``publicSignals``, ``verified`` when done,
        else ``k``, ``state``, ``reason``. ``limit``: proofs per page (default the API's)."""
        out: List[Proof] = []
        page = self._json("GET", f"/v1/jobs/{_seg(job_id)}/proofs", query={"limit": limit})
        while True:
            out.extend(page.get("proofs", []))
            nxt = page.get("next")
            if not nxt:
                return out
            page = self._json("GET", nxt)

    def proof(self, job_id: Union[int, str], k: int = 0) -> Proof:
        """Partition ``k``'s proof (``GET /v1/jobs/{id}/proofs/{k}``); a proof not done yet
        is ``ApiError`` 409 ``not_ready``."""
        return self._json("GET", f"/v1/jobs/{_seg(job_id)}/proofs/{int(k)}")

    def calldata(self, job_id: Union[int, str], k: int = 0) -> str:
        """Partition ``k``'s proof as Solidity calldata, what ``snarkjs zkey export
        soliditycalldata`` prints."""
        _, _, data = self._request("GET", f"/v1/jobs/{_seg(job_id)}/proofs/{int(k)}",
                                   query={"format": "calldata"})
        return data.decode()

    @overload
    def vkey(self, circuit: str, *, raw: Literal[False] = ...) -> Dict[str, Any]: ...

    @overload
    def vkey(self, circuit: str, *, raw: Literal[True]) -> bytes: ...

    def vkey(self, circuit: str, *, raw: bool = False) -> Union[Dict[str, Any], bytes]:
        """The circuit's verification key, snarkjs's verification_key.json: parsed, or with
        ``raw`` the bytes as served (byte-equal to ``snarkjs zkey export verificationkey``)."""
        _, _, data = self._request("GET", f"/v1/circuits/{_seg(circuit)}/vkey")
        return data if raw else json.loads(data)

    def circuits(self) -> List[Dict[str, Any]]:
        """The declared circuits (``GET /v1/circuits``): name, state, curve, constraints,
        public, fingerprint, max_input_bytes, has_witness_gen, inputs, ..."""
        return self._json("GET", "/v1/circuits").get("circuits", [])

    def list(self, *, state: Optional[str] = None, circuit: Optional[str] = None,
             since: Optional[int] = None, limit: Optional[int] = None,
             cursor: Optional[str] = None) -> Iterator[JobPage]:
        """The tenant's jobs (``GET /v1/jobs``), newest first, page by page: each page a
        dict with ``jobs`` (and ``next_cursor`` while more follow). Filters: ``state``,
        ``circuit``, ``since`` (unix seconds: submitted at or after), ``limit`` per page;
        ``cursor`` starts at a page an earlier ``next_cursor`` named."""
        query = {"state": state, "circuit": circuit, "since": since, "limit": limit, "cursor": cursor}
        page = self._json("GET", "/v1/jobs", query=query)
        while True:
            yield page
            if page.get("next"):
                page = self._json("GET", page["next"])
            elif page.get("next_cursor"):
                page = self._json("GET", "/v1/jobs", query={**query, "cursor": page["next_cursor"]})
            else:
                return

    def cancel(self, job_id: Union[int, str]) -> Dict[str, Any]:
        """Cancel the job (``DELETE /v1/jobs/{id}``): ``{"job","cancelled","state"}``;
        ``cancelled`` is false for a job that had ended before."""
        return self._json("DELETE", f"/v1/jobs/{_seg(job_id)}")

    def events(self, job_id: Union[int, str], *, last_event_id: Optional[str] = None) -> Iterator[Event]:
        """The job's Server-Sent Events (``GET /v1/jobs/{id}/events``), parsed: a ``part``
        event each time a partition is seen in another state, the ``job`` event (its end)
        last, after which the iterator ends.

        A stream that drops (cut, or silent past ``timeout`` plus the server's 15 s
        keep-alive) is opened again with ``Last-Event-ID``: the last ``id`` seen, else
        ``last_event_id``; the events that follow say each partition's state again where
        the job moved on. ``max_retries`` drops in a row with no event between them
        (0.5 s apart, doubling, at most ``max_retry_wait``) raise ``TransportError``.
        ``last_event_id="end"`` (the job event was seen) yields nothing. Each stream has
        a connection of its own, closed when the iterator ends or is closed.
        """
        path = f"/v1/jobs/{_seg(job_id)}/events"
        last = last_event_id
        drops = 0
        while True:
            headers = {"Accept": "text/event-stream"}
            if last is not None:
                headers["Last-Event-ID"] = last
            stream = None
            try:
                conn, stream = self._open_stream(path, headers)
                if stream.status == 204:  # the server knows the end was seen
                    return
                for ev in _sse_events(stream):
                    drops = 0
                    if ev["id"] is not None:
                        last = ev["id"]
                    yield ev
                    if ev["event"] == "job":
                        return
                why = "the stream ended before the job event"
            except TransportError as e:
                why = str(e)
            except (OSError, http.client.HTTPException) as e:
                why = f"{e or type(e).__name__}"
            finally:
                if stream is not None:
                    conn.close()
            drops += 1
            if drops > self.max_retries:
                raise TransportError(f"GET {self.base_url}{self._prefix}{path}: {why} ({drops} drops in a row)")
            time.sleep(min(0.5 * 2 ** (drops - 1), self.max_retry_wait))

    def prove(self, circuit: str, inputs: Inputs, *, wait: int = 60, **submit_args: Any) -> List[Proof]:
        """Submit and return every partition's entry once the job is decided: the proofs
        come in the POST's answer when the job ends within ``wait``, else by
        ``wait_job`` and ``proofs``. ``submit_args``: ``submit``'s (``priority``,
        ``idempotency_key``, ``metadata``, ``callback_url``)."""
        r = self.submit(circuit, inputs, wait=wait, **submit_args)
        if r.get("state") in _DECIDED and r.get("offset", 0) == 0 and len(r.get("proofs", [])) == r.get("partitions"):
            return list(r["proofs"])
        self.wait_job(r["job"])
        return self.proofs(r["job"])

    # ---- the connection -----------------------------------------------------------------

    def close(self) -> None:
        """Close every thread's connection (a later request opens a new one)."""
        with self._conns_lock:
            conns, self._conns = self._conns, []
        for c in conns:
            c.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _conn(self) -> http.client.HTTPConnection:
        c = getattr(self._local, "conn", None)
        if c is None:
            if self._https:
                c = http.client.HTTPSConnection(self._host, self._port, timeout=self.timeout, context=self._ssl)
            else:
                c = http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)
            self._local.conn = c
            with self._conns_lock:
                self._conns.append(c)
        return c

    def _json(self, method: str, path: str, **kw: Any) -> Any:
        _, _, data = self._request(method, path, **kw)
        try:
            return json.loads(data)
        except ValueError as e:
            raise CuzkError(f"{method} {path}: the answer is no JSON ({e}): {data[:200]!r}") from None

    def _request(self, method: str, path: str, *, query: Optional[Mapping[str, Any]] = None,
                 body: Optional[bytes] = None, headers: Optional[Mapping[str, str]] = None,
                 wait: Optional[int] = None) -> Tuple[int, http.client.HTTPMessage, bytes]:
        """One request, sent again on 429/503 as the class says; an error answer raises."""
        q = {k: v for k, v in (query or {}).items() if v is not None}
        target = self._prefix + path + ("?" + urllib.parse.urlencode(q) if q else "")
        h = {"Accept": "application/json", "User-Agent": "cuzk-client-python/0.1"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        h.update(headers or {})
        read_timeout = self.timeout + (wait or 0)
        attempt = 0
        while True:
            status, hdrs, data = self._send(method, target, body, h, read_timeout)
            if status < 400:
                return status, hdrs, data
            attempt += 1
            self._retry_or_raise(attempt, _problem(status, hdrs, data))

    def _retry_or_raise(self, attempt: int, err: ApiError) -> None:
        """Sleep before try ``attempt`` (from 1) of a 429 or 503, as the class says; raise
        ``err`` for any other error, or once the tries are spent."""
        if err.status not in (429, 503) or attempt > self.max_retries:
            raise err
        delay = err.retry_after if err.retry_after is not None else 0.5 * 2 ** (attempt - 1)
        delay = min(delay, self.max_retry_wait)
        if self.on_retry is not None:
            self.on_retry(attempt, delay, err)
        time.sleep(delay)

    def _open_stream(self, path: str, headers: Mapping[str, str]
                     ) -> Tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """GET ``path`` on a connection of its own and return its answer unread (a 2xx):
        an error answer is retried or raised as ``_request``'s are. Each read may wait
        ``timeout`` plus the 15 s between the server's keep-alives."""
        target = self._prefix + path
        h = {"User-Agent": "cuzk-client-python/0.1", **headers}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        attempt = 0
        while True:
            if self._https:
                c: http.client.HTTPConnection = http.client.HTTPSConnection(
                    self._host, self._port, timeout=self.timeout + 15, context=self._ssl)
            else:
                c = http.client.HTTPConnection(self._host, self._port, timeout=self.timeout + 15)
            try:
                c.request("GET", target, headers=h)
                r = c.getresponse()
                if r.status < 400:
                    return c, r  # the caller reads the stream and closes c
                status, hdrs, data = r.status, r.msg, r.read()
            except (OSError, http.client.HTTPException) as e:
                c.close()
                raise TransportError(f"GET {self.base_url}{target}: {e or type(e).__name__}") from e
            c.close()
            attempt += 1
            self._retry_or_raise(attempt, _problem(status, hdrs, data))

    def _send(self, method: str, target: str, body: Optional[bytes], headers: Mapping[str, str],
              read_timeout: float) -> Tuple[int, http.client.HTTPMessage, bytes]:
        for fresh_try in (False, True):
            c = self._conn()
            reused = c.sock is not None
            try:
                if c.sock is None:
                    c.connect()
                c.sock.settimeout(read_timeout)
                c.request(method, target, body=body, headers=dict(headers))
                r = c.getresponse()
                return r.status, r.msg, r.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as e:
                c.close()
                # A kept-alive connection the server closed while idle: the request never
                # reached it, so it is sent once more on a new one. A new one failing is an
                # error: the request may have been carried out.
                if reused and not fresh_try:
                    continue
                raise TransportError(f"{method} {self.base_url}{target}: {e}") from e
            except (OSError, http.client.HTTPException) as e:
                c.close()
                raise TransportError(f"{method} {self.base_url}{target}: {e or type(e).__name__}") from e
        raise AssertionError("unreachable")


def _seg(v: Union[int, str]) -> str:
    """A path segment: a name or id quoted, never a slash let through."""
    return urllib.parse.quote(str(v), safe="")


def _sse_events(stream: http.client.HTTPResponse) -> Iterator[Event]:
    """The events of a text/event-stream as the SSE standard reads them (comments and
    keep-alives skipped, ``data:`` lines joined), each one's data parsed as JSON; ends at
    the stream's end."""
    kind, data, ev_id = "message", [], None
    while True:
        raw = stream.readline()
        if not raw:
            return
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line:  # a blank line ends the event
            if data:
                text = "\n".join(data)
                try:
                    doc = json.loads(text)
                except ValueError as e:
                    raise CuzkError(f"event {kind}: its data is no JSON ({e}): {text[:200]!r}") from None
                yield {"id": ev_id, "event": kind, "data": doc}
            kind, data, ev_id = "message", [], None
            continue
        if line.startswith(":"):  # a comment: the server's keep-alive
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            kind = value
        elif field == "data":
            data.append(value)
        elif field == "id" and "\0" not in value:
            ev_id = value


def verify_callback(secret: Union[str, bytes], signature_header: str, body: Union[bytes, str], *,
                    tolerance: float = 300, now: Optional[float] = None) -> Dict[str, Any]:
    """Check a callback of cuzk-api and return its body, parsed.

    ``secret``: the tenant's callback secret as ``cuzk token --callback-hosts`` printed
    it; ``signature_header``: the request's ``Cuzk-Signature`` (``t=UNIX,v1=HEX``);
    ``body``: the request's body, the raw bytes as received (parsed and dumped again it
    would not check). ``v1`` must be HMAC-SHA256 of ``t``, a dot and the body, keyed
    with the secret (compared in constant time), and ``t`` within ``tolerance`` seconds
    of ``now`` (default: this clock), which refuses a replay. Else ``SignatureError``.
    """
    key = secret.encode() if isinstance(secret, str) else bytes(secret)
    raw = body.encode() if isinstance(body, str) else bytes(body)
    parts: Dict[str, List[str]] = {}
    for item in (signature_header or "").split(","):
        name, eq, value = item.strip().partition("=")
        if eq:
            parts.setdefault(name, []).append(value)
    stamps, macs = parts.get("t", []), parts.get("v1", [])
    if len(stamps) != 1 or not stamps[0].isdigit() or not macs:
        raise SignatureError(f"Cuzk-Signature {signature_header!r}: expected t=UNIX,v1=HEX")
    want = hmac.new(key, stamps[0].encode() + b"." + raw, hashlib.sha256).hexdigest()
    # Every v1 is compared (a sender may list several while its secret changes); none may
    # end the loop early on a near match.
    if not sum(hmac.compare_digest(want.encode(), m.encode()) for m in macs):
        raise SignatureError("Cuzk-Signature: no v1 matches the body under this secret")
    age = (time.time() if now is None else now) - int(stamps[0])
    if abs(age) > tolerance:
        raise SignatureError(f"Cuzk-Signature: t is {age:+.0f} s from now, beyond the tolerance of {tolerance:g} s")
    try:
        doc = json.loads(raw)
    except ValueError as e:
        raise SignatureError(f"the callback's body is no JSON ({e})") from None
    if not isinstance(doc, dict):
        raise SignatureError("the callback's body is no JSON object")
    return doc


def _retry_after(hdrs: http.client.HTTPMessage) -> Optional[float]:
    v = hdrs.get("Retry-After")
    if v is None:
        return None
    v = v.strip()
    if v.isdigit():
        return float(v)
    try:  # the HTTP-date form
        return max(0.0, email.utils.parsedate_to_datetime(v).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _problem(status: int, hdrs: http.client.HTTPMessage, data: bytes) -> ApiError:
    """The answer's problem document, or one made of its status and text when it has none
    (an answer from a proxy in front of the API)."""
    doc: Any = None
    try:
        doc = json.loads(data)
    except ValueError:
        pass
    if not isinstance(doc, dict):
        doc = {"status": status, "title": http.client.responses.get(status, ""),
               "detail": data[:500].decode("utf-8", "replace")}
    return ApiError(status, doc, _retry_after(hdrs))
