#!/usr/bin/env bash
# cuzkd --metrics-listen and cuzk trace, checked from outside (docs/operations.md, "Watching it"):
#  1. option checks: a name instead of a numeric address is refused (exit 2); a port
#     already taken stops cuzkd at start (exit 3);
#  2. a daemon job (cpu:1), then GET /metrics: 200, text/plain; version=0.0.4, a body
#     that passes the Prometheus format checker (top_check.py) with the families of
#     `cuzk metrics`; HEAD; 404 for another path, 405 for POST, 400 for garbage; a client
#     that sends nothing is dropped and the next one is still served; bound to 127.0.0.1
#     only;
#  3. cuzk trace --job JOB -o FILE.json: parseable by JSON.parse (node) and json
#     (python), every partition with synth, prove, finalize complete events in order,
#     durations >= 0; usage and unknown-job errors;
#  4. after shutdown the port is closed.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../lib/daemon.sh"
need_tool python3
daemon_init tmet
holder_pid=""
# shellcheck disable=SC2016 # run at exit, with the pid then
daemon_on_exit='[ -z "$holder_pid" ] || kill "$holder_pid" 2>/dev/null; daemon_stop'
chk() { python3 "$HERE/top_check.py" "$@"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# ---- 1. option checks ----------------------------------------------------------------
rc=0
"$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --metrics-listen localhost:9464 \
  --plan >"$tmp/bad.log" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q "numeric" "$tmp/bad.log" || {
  cat "$tmp/bad.log"
  fail "--metrics-listen localhost:9464: exit $rc, want 2"
}
python3 -c 'import socket,sys,time
s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(1)
open(sys.argv[1],"w").write(str(s.getsockname()[1])); time.sleep(60)' "$tmp/held" &
holder_pid=$!
for _ in $(seq 1 50); do
  [ -s "$tmp/held" ] && break
  sleep 0.1
done
port="$(cat "$tmp/held")"
rc=0
timeout 60 "$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --state-dir "$tmp/state" --devices cpu:1 --buffers 2 \
  --buffer-mb 16 --foreground --metrics-listen "127.0.0.1:$port" >"$tmp/taken.log" 2>&1 || rc=$?
kill "$holder_pid" 2>/dev/null || true
wait "$holder_pid" 2>/dev/null || true
holder_pid=""
[ $rc -eq 3 ] && grep -q "metrics-listen" "$tmp/taken.log" || {
  cat "$tmp/taken.log"
  fail "port taken: exit $rc, want 3"
}
[ ! -e /dev/shm/cuzk-"$inst".data ] || fail "segments left behind after a failed start"
echo "ok: --metrics-listen: a name is refused (2), a taken port stops cuzkd (3)"

# ---- 2. /metrics -------------------------------------------------------------------------
port="$(free_port)"
# --keep-finished: the job must still be there for `cuzk trace` however long the
# metrics checks take on a loaded machine (the default retires it 30 s after it ends).
daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16 --metrics-listen "127.0.0.1:$port" \
  --keep-finished 3600
grep -q "metrics on http://127.0.0.1:$port/metrics" "$tmp/cuzkd.log" || fail "no metrics line in the log"

NPART="${CUZK_TRACE_PARTS:-4}"
fx="$REF_FIXTURES/bn128-chain"
mkdir -p "$tmp/in" "$tmp/out"
for i in $(seq 1 "$NPART"); do cp "$fx/witness.wtns" "$tmp/in/w$i.wtns"; done
out="$(cuzk --json prove --zkey "$fx/circuit_final.zkey" --out "$tmp/out" "$tmp/in"/w*.wtns)" ||
  fail "submit: $out"
job="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["job"])' "$out")"
timeout 600 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "$job" >/dev/null ||
  fail "job $job did not finish"

got="$(chk http "$port" GET /metrics "$tmp/http.prom")" || fail "GET /metrics: $got"
case "$got" in "200 text/plain; version=0.0.4"*) ;; *) fail "GET /metrics: $got" ;; esac
chk prometheus "$tmp/http.prom" || fail "GET /metrics: Prometheus format"
if command -v curl >/dev/null; then
  curl -fsS "http://127.0.0.1:$port/metrics?x=1" >"$tmp/curl.prom" || fail "curl /metrics"
  chk prometheus "$tmp/curl.prom" >/dev/null || fail "curl /metrics: Prometheus format"
fi
cuzk metrics >"$tmp/cli.prom" || fail "cuzk metrics"
# The job store's file system is cuzkd's own figure (statvfs at each scrape): /metrics
# only, not on the stats page that `cuzk metrics` reads.
fams() { grep '^# TYPE' "$1" | grep -v ' cuzk_store_' | sort; }
[ "$(fams "$tmp/http.prom")" = "$(fams "$tmp/cli.prom")" ] || fail "/metrics and cuzk metrics differ in families"
for f in cuzk_store_avail_bytes cuzk_store_size_bytes; do
  grep -qE "^$f\{instance_name=\"$inst\"\} [1-9][0-9]*$" "$tmp/http.prom" || fail "/metrics: no positive $f"
done
grep -q 'cuzk_stage_seconds_total{.*stage="gpuworker"' "$tmp/http.prom" || fail "no gpuworker series"
# per-circuit precomputation kept by the worker: one circuit, so its NTT domain is built
# once and reused by the other partitions, and held (3 tables of domain x 32 bytes)
metric() { sed -n "s/^$1 //p" "$tmp/cli.prom"; }
w='{stage="gpuworker",index="0",'
[ "$(metric "cuzk_stage_counter_total${w}counter=\"domain_builds\"}")" = 1 ] || fail "domain_builds != 1"
[ "$(metric "cuzk_stage_counter_total${w}counter=\"domain_hits\"}")" = $((NPART - 1)) ] || fail "domain_hits != $((NPART - 1))"
[ "$(metric "cuzk_gauge${w}name=\"precomp_bytes\"}")" = $((3 * 64 * 32)) ] || fail "precomp_bytes != 3 x 2^6 x 32"
[ "$(metric "cuzk_gauge${w}name=\"precomp_budget\"}")" = $((512 << 20)) ] || fail "precomp_budget != 512 MiB"
echo "ok: worker precomputation: 1 domain build, $((NPART - 1)) hits, 6144 bytes of 512 MiB"
got="$(chk http "$port" HEAD /metrics "$tmp/head")"
[ "${got%% *}" = 200 ] && [ ! -s "$tmp/head" ] || fail "HEAD: $got"
got="$(chk http "$port" GET /nope "$tmp/404")"
[ "${got%% *}" = 404 ] || fail "GET /nope: $got"
got="$(chk http "$port" POST /metrics "$tmp/405")"
[ "${got%% *}" = 405 ] || fail "POST: $got"
got="$(chk http "$port" x x "$tmp/400" 'garbage\r\n\r\n')"
[ "${got%% *}" = 400 ] || fail "garbage: $got"
# a silent client is dropped after its 1 s (METRICS_HTTP_READ_MS); the next request is still answered
python3 -c 'import socket,sys,time; s=socket.create_connection(("127.0.0.1",int(sys.argv[1]))); time.sleep(3); s.close()' "$port" &
silent_pid=$!
sleep 0.5
got="$(timeout 20 python3 "$HERE/top_check.py" http "$port" GET /metrics "$tmp/after")" || fail "after a silent client: $got"
[ "${got%% *}" = 200 ] || fail "after a silent client: $got"
wait "$silent_pid" || true
if command -v ss >/dev/null; then
  ss -Hltn "sport = :$port" | grep -q "127.0.0.1:$port" || {
    ss -ltn
    fail "not bound to 127.0.0.1:$port"
  }
  ss -Hltn "sport = :$port" | grep -qv "127.0.0.1:$port" && fail "also bound elsewhere"
fi
echo "ok: GET /metrics (format, same families as cuzk metrics), HEAD, 404, 405, 400, silent client"

# ---- 3. cuzk trace ----------------------------------------------------------------------
cuzk trace --job "$job" -o "$tmp/trace.json" || fail "cuzk trace"
if command -v node >/dev/null; then
  node -e 'const t=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")); if(!Array.isArray(t.traceEvents)) process.exit(1)' \
    "$tmp/trace.json" || fail "trace: JSON.parse"
fi
chk trace "$tmp/trace.json" "$NPART" || fail "trace"
rc=0
cuzk trace -o "$tmp/x.json" 2>/dev/null || rc=$?
[ $rc -eq 2 ] || fail "trace without --job: exit $rc"
rc=0
cuzk trace --job 999999 -o "$tmp/x.json" 2>/dev/null || rc=$?
[ $rc -eq 21 ] || fail "trace of an unknown job: exit $rc"

# ---- 4. shutdown closes the port --------------------------------------------------------
daemon_stop
python3 -c 'import socket,sys
try:
    socket.create_connection(("127.0.0.1",int(sys.argv[1])),timeout=2); sys.exit(1)
except ConnectionRefusedError: pass' "$port" || fail "port $port still open after shutdown"
echo "ok: metrics_trace"
