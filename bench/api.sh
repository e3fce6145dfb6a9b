#!/usr/bin/env bash
# bench/api.sh — the HTTP API (cuzk-api) against the same cuzkd fed by its CLI; run by
# bench/run.sh, or alone.
#
# One cuzkd (--devices cpu:1) with bn128 mulchain-K declared as circuit mulK for each K
# of BENCH_API_SIZES (default "10 14": 2^10 and 2^14 constraints, circom circuits with a
# compiled witness generator, so both sides send input.json), and one cuzk-api started
# by this script on that cuzkd's socket (the same program cuzkd starts with --listen,
# run on its own so that its --per-ip and --max-conns can be raised for the idle
# connections, and its pid read without a search). For each size, after a warm-up
# proof through each side:
#   throughput  BENCH_API_CLIENTS (4) clients at once, each BENCH_API_PER_CLIENT (4)
#               proofs in a row: through the API (bench/api_clients.py: POST the
#               input.json, GET the job with ?wait=600, GET proof 0) and through the
#               CLI (`cuzk prove --circuit mulK --out DIR --wait IN.json`, one process
#               a proof); proofs/s of each over two passes (API first, then CLI first),
#               ratio API / CLI, goal >= 0.95;
#   latency     BENCH_API_ROUNDS (5) rounds, one proof at a time on the idle daemon,
#               interleaved: POST to the proof in hand through the API against one
#               `cuzk prove-local --witness-gen` process (which loads the key each
#               time); p50 and p99 (nearest rank: with few rounds p99 is the slowest),
#               ratio API / prove-local, goal <= 1.2; and in the same rounds the
#               proof in one call: one POST with ?wait=60 (curl) answering the proof,
#               against the same prove-local, goal <= 1.2;
#   SDKs        BENCH_API_SDK_PROOFS (20) proofs from BENCH_API_SDK_THREADS (4) at once,
#               each one prove() call (POST ?wait=60): the Python SDK from 4 threads
#               (bench/sdk_clients.py), the JS SDK with 4 concurrent promises
#               (bench/sdk_clients.mjs), against the same proofs through 4 raw HTTP
#               clients of three requests a proof (bench/api_clients.py), in a row: wall
#               and proofs/s, ratio SDK / raw, every proof of the three checked.
# Then BENCH_API_IDLE (1000) idle keep-alive connections to cuzk-api (each answered one
# authenticated request first): its resident set (VmRSS) with them open against before,
# goal <= 64 MiB; the row says how many the server held.
# snarkjs checks a sample of each row's proofs (each client's first and last, every
# latency round's last); a rejected proof shows in that row's last column.
# Skipped (exit 0, with the reason) when cuzk-api is not built (no libmicrohttpd) or
# g++/nasm for the witness generators are missing. A missed goal is reported, not an
# error; a failed request or a rejected proof makes the exit status 1.
# Environment: BUILD (default build), BENCH_API_SIZES ("10 14"), BENCH_API_CLIENTS (4),
#   BENCH_API_PER_CLIENT (4), BENCH_API_ROUNDS (5), BENCH_API_IDLE (1000),
#   BENCH_API_SDK_PROOFS (20), BENCH_API_SDK_THREADS (4).
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tests/lib/daemon.sh"
. "$ROOT/tests/lib/wgen.sh"
SIZES="${BENCH_API_SIZES:-10 14}"
N="${BENCH_API_CLIENTS:-4}"
M="${BENCH_API_PER_CLIENT:-4}"
ROUNDS="${BENCH_API_ROUNDS:-5}"
IDLE="${BENCH_API_IDLE:-1000}"
SDK_N="${BENCH_API_SDK_PROOFS:-20}"
SDK_T="${BENCH_API_SDK_THREADS:-4}"
CUZK="$BUILD/bin/cuzk"
CLIENTS="$ROOT/bench/api_clients.py"
[ -x "$BUILD/bin/cuzk-api" ] ||
  {
    echo "bench/api: $BUILD/bin/cuzk-api not built (no libmicrohttpd: libmicrohttpd-dev): skipped"
    exit 0
  }
for t in g++ nasm python3; do
  command -v "$t" >/dev/null || {
    echo "bench/api: $t not installed: skipped"
    exit 0
  }
done
daemon_init apibench
api_pid=""
idle_pid=""
# shellcheck disable=SC2016  # expanded at exit, by daemon_cleanup's eval
daemon_on_exit='for p in $idle_pid $api_pid; do kill "$p" 2>/dev/null || true; done'
now() { date +%s.%N; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
bad=0

# ---- the circuits, the daemon, the API ----------------------------------------------
buf_mb=1
for k in $SIZES; do
  bash "$MAKE_FIXTURES" -q --curve bn128 --size "$k" >/dev/null || fail "fixture bn128/mulchain-$k"
  d="$FIXTURES/bn128/mulchain-$k"
  g="$(wgen_for "$d")" || fail "the witness generator of mulchain-$k"
  dom="$(sed -n 's/.*domain=\([0-9]*\).*/\1/p' "$d/info.txt")"
  nv="$(sed -n 's/.*nVars=\([0-9]*\).*/\1/p' "$d/info.txt")"
  mb=$((((3 * dom + nv) * 32 + (1 << 20) - 1) >> 20))
  [ "$mb" -le "$buf_mb" ] || buf_mb="$mb"
  printf '[circuit mul%s]\nzkey = %s\nr1cs = %s\nwitness-gen = %s\n' \
    "$k" "$d/circuit_final.zkey" "$d/circuit.r1cs" "$g" >>"$tmp/cuzkd.conf"
done
load0="$(load)"
daemon_start --config "$tmp/cuzkd.conf" --devices cpu:1 --buffers 4 --buffer-mb "$buf_mb"
out="$("$CUZK" token bench)" || fail "cuzk token"
token="$(head -n1 <<<"$out")"
tail -n1 <<<"$out" >"$tmp/tokens"
chmod 600 "$tmp/tokens" # cuzk-api refuses a tokens file others may read
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
base="http://127.0.0.1:$port"
"$BUILD/bin/cuzk-api" --socket "$run/$inst.sock" --listen "127.0.0.1:$port" --api-tokens "$tmp/tokens" \
  --instance "$inst" --user "$(id -u)" --timeout 600 --per-ip $((IDLE + 64)) --max-conns $((IDLE + 64)) \
  >"$tmp/api.log" 2>&1 &
api_pid=$!
for _ in $(seq 1 1200); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/readyz" 2>/dev/null)" = 200 ] && break
  kill -0 "$api_pid" 2>/dev/null || fail "cuzk-api exited: $(tail -3 "$tmp/api.log")"
  sleep 0.1
done
[ "$(curl -s -o /dev/null -w '%{http_code}' "$base/readyz")" = 200 ] ||
  fail "cuzk-api not ready within 120 s: $(curl -s "$base/readyz")"

# ---- the measurements ---------------------------------------------------------------
# verify DIR: snarkjs on every proof in DIR (the sample) -> "N ok", "REJECTED k of N"
# or "NOT CHECKED: why" (row sees the capitals and sets bad: this runs in a subshell)
verify() {
  local r rc=0
  r="$(node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" \
    "$vk" "$1" 2>&1)" || rc=$?
  case $rc in
    0) echo "${r% verified} ok" ;;
    1) echo "REJECTED $(grep -c REJECTED <<<"$r") of $(find "$1" -name '*.proof.json' | wc -l)" ;;
    *) echo "NOT CHECKED: $(head -c 80 <<<"$r")" ;;
  esac
}
# sample FROM TO FIRST LAST: copies FROM/cC-{FIRST,LAST}.* for each client C into TO
sample() {
  local c i
  mkdir -p "$2"
  for c in $(seq 0 $((N - 1))); do
    for i in "$3" "$4"; do cp "$1/c$c-$i".*.json "$2/" 2>/dev/null || true; done
  done
}
# (these two run inside $(...): their failures go to stderr, and the pipefail stops us)
api_pass() { # k outdir clients per-client -> "wall latency..." (seconds)
  local r
  r="$(python3 "$CLIENTS" prove "$base" "$token" "mul$1" "$d/input.json" "$3" "$4" "$2")" ||
    fail "bench/api_clients.py: $r" >&2
  node -e 'const r = JSON.parse(process.argv[1]);
    if (r.errors.length) { console.error(r.errors.join("\n")); process.exit(1); }
    console.log(r.wall, ...r.lat)' "$r" || fail "API requests failed (above)" >&2
}
cli_pass() { # k outdir clients per-client -> wall seconds
  local t0 c i p rc=0 pids=()
  for c in $(seq 0 $(($3 - 1))); do
    for i in $(seq 0 $(($4 - 1))); do cp "$d/input.json" "$tmp/in/c$c-$i.json"; done
  done
  t0="$(now)"
  for c in $(seq 0 $(($3 - 1))); do
    (
      for i in $(seq 0 $(($4 - 1))); do
        cuzk prove --circuit "mul$1" --out "$2" --wait "$tmp/in/c$c-$i.json" >/dev/null 2>"$tmp/cli.err.$c" || exit 1
      done
    ) &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  [ $rc = 0 ] || fail "cuzk prove --circuit mul$1: $(cat "$tmp"/cli.err.* | head -5)" >&2
  awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.3f", b-a}'
}
# one_call k outdir round -> seconds: one POST with ?wait=60, the proof in its answer,
# split into snarkjs's two files (round r: outdir/rR.*)
one_call() {
  local r
  r="$(curl -s -o "$2/r$3.json" -w '%{http_code} %{time_total}' -H "Authorization: Bearer $token" \
    -H 'Content-Type: application/json' --data-binary @"$d/input.json" "$base/v1/circuits/mul$1/proofs?wait=60")"
  [ "${r%% *}" = 200 ] || fail "POST ?wait=60: ${r%% *} $(head -c 300 "$2/r$3.json")" >&2
  node -e 'const fs = require("fs"), [a, b] = process.argv.slice(1), r = JSON.parse(fs.readFileSync(a + ".json"));
    fs.writeFileSync(a + ".proof.json", JSON.stringify(r.proofs[0].proof));
    fs.writeFileSync(a + ".public.json", JSON.stringify(r.proofs[0].publicSignals)); console.log(b)' "$2/r$3" "${r#* }"
}
# sdk_pass py|js k outdir -> "wall cpu": seconds of SDK_N proofs from SDK_T threads or
# promises, and the client process's CPU (user + system) over them
sdk_pass() {
  local r
  if [ "$1" = py ]; then
    r="$(python3 "$ROOT/bench/sdk_clients.py" "$base" "$token" "mul$2" "$d/input.json" "$SDK_N" "$SDK_T" "$3")"
  else
    r="$(node "$ROOT/bench/sdk_clients.mjs" "$base" "$token" "mul$2" "$d/input.json" "$SDK_N" "$SDK_T" "$3")"
  fi || fail "bench/sdk_clients ($1): $r" >&2
  node -e 'const r = JSON.parse(process.argv[1]);
    if (r.errors.length) { console.error(r.errors.join("\n")); process.exit(1); }
    console.log(r.wall, r.cpu)' "$r" || fail "SDK ($1) requests failed (above)" >&2
}
# quantile P V...: nearest rank
quantile() {
  local p="$1"
  shift
  printf '%s\n' "$@" | sort -g | awk -v p="$p" '{v[NR]=$1} END{i=int(p*NR); if (i<p*NR) i++; if (i<1) i=1; printf "%.3f", v[i]}'
}
row() { # metric api ref ratio goal met check: a line of the table, printed at the end
  printf '  %-44s %10s %10s %7s %8s %-7s %s\n' "$@" >>"$tmp/table"
  case "$7" in *REJECTED* | *"NOT CHECKED"*) bad=1 ;; esac
}
# latency_rows METRIC "API SECONDS..." "REFERENCE SECONDS..." CHECK: the p50 and p99 rows
latency_rows() {
  local p qa ql ratio
  for p in 50 99; do
    # shellcheck disable=SC2086 # the seconds: one word each
    qa="$(quantile "0.$p" $2)"
    # shellcheck disable=SC2086 # the seconds: one word each
    ql="$(quantile "0.$p" $3)"
    ratio="$(awk -v a="$qa" -v b="$ql" 'BEGIN{printf "%.2f", a/b}')"
    row "$1 p$p s" "$qa" "$ql" "$ratio" "<=1.2" "$(meets "$ratio" "<1.2")" "$4"
  done
}
meets() { awk -v r="$1" -v g="$2" 'BEGIN{ if (substr(g,1,1) == ">") print (r >= substr(g,2) + 0 ? "met" : "MISSED"); else print (r <= substr(g,2) + 0 ? "met" : "MISSED") }'; }

: >"$tmp/table"
for k in $SIZES; do
  d="$FIXTURES/bn128/mulchain-$k"
  vk="$d/verification_key.json"
  g="$(wgen_for "$d")"
  rm -rf "$tmp/in" "$tmp/o"
  mkdir -p "$tmp/in" "$tmp/o"/{wa,wc,a1,a2,c1,c2,al,ll,sa,sc,sl,oc,kr,kp,kj}
  api_pass "$k" "$tmp/o/wa" 1 1 >/dev/null # the circuit's key and generator loaded
  cli_pass "$k" "$tmp/o/wc" 1 1 >/dev/null
  # throughput: two passes, the order swapped, each side's proofs over its seconds
  wa1="$(api_pass "$k" "$tmp/o/a1" "$N" "$M" | cut -d' ' -f1)"
  wc1="$(cli_pass "$k" "$tmp/o/c1" "$N" "$M")"
  wc2="$(cli_pass "$k" "$tmp/o/c2" "$N" "$M")"
  wa2="$(api_pass "$k" "$tmp/o/a2" "$N" "$M" | cut -d' ' -f1)"
  sample "$tmp/o/a1" "$tmp/o/sa" 0 $((M - 1))
  sample "$tmp/o/c2" "$tmp/o/sc" 0 $((M - 1))
  ra="$(awk -v n=$((2 * N * M)) -v a="$wa1" -v b="$wa2" 'BEGIN{printf "%.3f", n/(a+b)}')"
  rc="$(awk -v n=$((2 * N * M)) -v a="$wc1" -v b="$wc2" 'BEGIN{printf "%.3f", n/(a+b)}')"
  ratio="$(awk -v a="$ra" -v b="$rc" 'BEGIN{printf "%.2f", a/b}')"
  row "2^$k proofs/s, $N clients x $((2 * M))" "$ra" "$rc" "$ratio" ">=0.95" "$(meets "$ratio" ">0.95")" \
    "API $(verify "$tmp/o/sa"), CLI $(verify "$tmp/o/sc")"
  # latency: one proof at a time on the idle daemon, prove-local in between
  # the SDKs: the same proofs from raw clients, the Python SDK, the JS SDK, in a row
  wk="$(api_pass "$k" "$tmp/o/kr" "$SDK_T" $((SDK_N / SDK_T)) | awk '{printf "%.3f", $1}')"
  wp="$(sdk_pass py "$k" "$tmp/o/kp")"
  wj="$(sdk_pass js "$k" "$tmp/o/kj")"
  rk="$(awk -v n=$((SDK_N / SDK_T * SDK_T)) -v w="$wk" 'BEGIN{printf "%.3f", n/w}')"
  for l in "Python:$wp:$SDK_T threads:kp" "JS:$wj:$SDK_T promises:kj"; do
    IFS=: read -r name wc how dir <<<"$l"
    w="${wc% *}"
    rs="$(awk -v n="$SDK_N" -v w="$w" 'BEGIN{printf "%.3f", n/w}')"
    ratio="$(awk -v a="$rs" -v b="$rk" 'BEGIN{printf "%.2f", a/b}')"
    row "2^$k $name SDK proofs/s, $SDK_N, $how" "$rs" "$rk" "$ratio" ">=0.95" "$(meets "$ratio" ">0.95")" \
      "wall ${w}s (raw ${wk}s), client CPU ${wc#* }s; SDK $(verify "$tmp/o/$dir"), raw $(verify "$tmp/o/kr")"
  done
  la=()
  lo=()
  ll=()
  for r in $(seq 1 "$ROUNDS"); do
    la+=("$(api_pass "$k" "$tmp/o/al" 1 1 | cut -d' ' -f2)")
    lo+=("$(one_call "$k" "$tmp/o/oc" "$r")")
    t0="$(now)"
    "$CUZK" prove-local --witness-gen "$g" "$d/circuit_final.zkey" "$d/input.json" "$tmp/o/ll/l.proof.json" \
      "$tmp/o/ll/l.public.json" >"$tmp/pl.log" 2>&1 || fail "prove-local: $(tail -3 "$tmp/pl.log")"
    ll+=("$(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.3f", b-a}')")
  done
  cp "$tmp/o/al"/c0-0.*.json "$tmp/o/sl/"
  rm -f "$tmp/o/oc"/r*[0-9].json # the answers; their proofs stay for snarkjs
  latency_rows "2^$k latency, $ROUNDS rounds," "${la[*]}" "${ll[*]}" \
    "API $(verify "$tmp/o/sl"), prove-local $(verify "$tmp/o/ll")"
  latency_rows "2^$k one call ?wait=60," "${lo[*]}" "${ll[*]}" \
    "one call $(verify "$tmp/o/oc"), prove-local $(verify "$tmp/o/ll")"
done

# ---- idle connections ---------------------------------------------------------------
rss() { awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$api_pid/status"; }
rss0="$(rss)"
mkfifo "$tmp/idle.in"
python3 "$CLIENTS" idle 127.0.0.1 "$port" "$IDLE" "$token" <"$tmp/idle.in" >"$tmp/idle.out" 2>&1 &
idle_pid=$!
exec 9>"$tmp/idle.in"
for _ in $(seq 1 600); do
  grep -q '^open' "$tmp/idle.out" && break
  kill -0 "$idle_pid" 2>/dev/null || break
  sleep 0.1
done
grep -q '^open' "$tmp/idle.out" || fail "opening $IDLE connections: $(tail -3 "$tmp/idle.out")"
sleep 2 # the server has accepted them and started their threads
echo >&9
sleep 1
held="$(sed -n 's/^held //p' "$tmp/idle.out" | tail -n1)"
threads="$(awk '/^Threads/ { print $2 }' "/proc/$api_pid/status")"
rss1="$(rss)"
health="$(curl -s -o /dev/null -w '%{http_code}' "$base/healthz")"
exec 9>&-
wait "$idle_pid" 2>/dev/null || true
idle_pid=""
row "cuzk-api RSS MiB, $IDLE idle conns" "$rss1" "$rss0" "-" "<=64" "$(meets "$rss1" "<64")" \
  "held ${held:-?}, $threads threads, /healthz $health"
[ "${held:-0}" -eq "$IDLE" ] && [ "$health" = 200 ] || bad=1

echo "== HTTP API (cuzk-api) against the same cuzkd fed by cuzk prove (bn128 mulchain; --devices cpu:1;" \
  "$(nproc) CPUs; load average before $load0, after $(load))"
printf '  %-44s %10s %10s %7s %8s %-7s %s\n' metric API reference ratio goal "" "snarkjs on a sample"
cat "$tmp/table"
echo "  (reference: cuzk prove --circuit for proofs/s, one cuzk prove-local --witness-gen process for latency" \
  "and the one call, raw HTTP clients (bench/api_clients.py) for the SDKs, cuzk-api with no connection for RSS)"
[ "$bad" = 0 ] || {
  echo "bench/api: a proof was rejected or the idle connections were not all held"
  exit 1
}
