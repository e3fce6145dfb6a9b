#!/usr/bin/env bash
# bench/pipeline.sh — the pipeline under a backlog (issue 4, "Benchmark"); run by
# bench/run.sh, or alone.
#
# Starts a fresh cuzkd (unique instance, temp run dir, --devices BENCH_PIPE_DEVICES),
# submits one job of BENCH_PIPE_PARTS partitions (default 16) of
# bn128/mulchain-BENCH_PIPE_SIZE (default 16: 2^16 constraints; built and cached by
# tests/fixtures/make.sh) all at once, waits, and prints:
#   - partitions/s from submit to the job's completion (cold: includes the first
#     zkey load and the finalizer's tail), and the worker's steady rate;
#   - each stage's utilization over that window, from the stats page (snapshots
#     before submit and after completion, differenced): the share of wall time in
#     each of its states, utilization = not idle and not waiting (any state whose
#     name starts with "wait", e.g. the synth's wait_buffer);
#   - each worker's gap between returning from one partition's prove and starting
#     the next (its "gap" histogram: p50, p99, max as log2-bucket upper bounds, and
#     the mean), and its busy share under backlog = prove / (prove + gaps) over the
#     span from its first prove's start to its last prove's end;
#   - the same partitions proved back to back, one process each, by `cuzk
#     prove-local` (verification on as in the finalizer) on all CPUs and with
#     --threads equal to worker 0's cores in the plan (what that worker computes
#     on), and by rapidsnark when RAPIDSNARK names its prover binary (all CPUs; its
#     first and last proofs checked by snarkjs): partitions/s of each and the ratio
#     daemon / back to back.
# A CPU worker with 2+ threads proves partitions of domains up to 2^15 two at a time
# (gpuworker/backend_cpu.c, cpu-inflight): its states then read "device" rather than ntt
# and msm_*, and a gap is 0 while the other in-flight thread has a partition; CUZK_TEST_BACKEND=cpu
# in the environment gives the synchronous path and its per-step states (an A/B of the
# two: the same command with and without it, interleaved).
# Targets: each worker busy >= 99% of wall time under backlog, p99 gap <= 2 ms
# (issue 4); daemon >= 2x rapidsnark back to back (issue 9). A missed target is
# reported, not an error (exit 1 only if something fails).
#
# Stats come from `cuzk-top --once --json` when that tool is built, else from
# $BUILD/bench/stats_dump (bench/stats_dump.c, a read-only reader of the page).
#
# Environment: BUILD (default build), BENCH_PIPE_PARTS (16), BENCH_PIPE_SIZE (16; or a
#   real-shaped circuit of tests/fixtures/make.sh --real by name, e.g. merkle-13 or
#   sha256-15), BENCH_PIPE_VERIFY (4: proofs of the daemon checked by snarkjs, evenly
#   spaced; "all": every one; prove-local's last proof is checked too),
#   BENCH_PIPE_DEVICES (cuzkd --devices; default cpu:1: its worker gets every core
#   of its node in the plan, shared with synth and finalizer (issue 21: on 2 CPUs,
#   mulchain-14 daemon / prove-local back to back 1.20-1.53x over 3 runs, was
#   0.86-1.03x with one core; mulchain-16 1.19-1.28x; worker p99 gap 8-17 ms); on 2 CPUs cpu:2 measured 0.21-0.27 partitions/s of mulchain-16
#   against cpu:1's 0.30-0.44 in the same minutes), BENCH_PIPE_LOCAL (1: also time prove-local; 0: skip
#   it), BENCH_PIPE_WARMUP (0: a first job of that many partitions of the circuit before
#   the measured one, then a wait until the worker's fixed-base builder is idle, its
#   gauge fixed_pending 0: with CUZK_FIXED_BASE_AFTER=2 in the environment the measured
#   job runs through the tables), BENCH_PIPE_FIXED_MB (cuzkd --fixed-base-mb; unset:
#   its default), RAPIDSNARK (path of an iden3/rapidsnark prover binary built outside this
#   repository; unset: no rapidsnark row).
set -euo pipefail
trap 'echo "bench/pipeline: stopped by a failing command at line $LINENO" >&2' ERR
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh" pipeline
N="${BENCH_PIPE_PARTS:-16}"
K="${BENCH_PIPE_SIZE:-16}"
LOCAL="${BENCH_PIPE_LOCAL:-1}"
WARMUP="${BENCH_PIPE_WARMUP:-0}"
fixed_opt=()
[ -z "${BENCH_PIPE_FIXED_MB:-}" ] || fixed_opt=(--fixed-base-mb "$BENCH_PIPE_FIXED_MB")
VERIFY="${BENCH_PIPE_VERIFY:-4}"
ncpu="$(nproc)"
DEVICES="${BENCH_PIPE_DEVICES:-cpu:1}"
RAPIDSNARK="${RAPIDSNARK:-}"
if [ -n "$RAPIDSNARK" ] && [ ! -x "$RAPIDSNARK" ]; then
  echo "bench/pipeline: RAPIDSNARK=$RAPIDSNARK is not an executable; its row left out" >&2
  RAPIDSNARK=""
fi

bench_need bin/cuzkd bin/cuzk bin/cuzk-synth bin/cuzk-gpuworker bin/cuzk-finalizer bench/stats_dump
case "$K" in *-*) name="$K" ;; *) name="mulchain-$K" ;; esac
bench_fixture bn128 "$K" || {
  echo "bench/pipeline: FAIL: fixture bn128/$name could not be built"
  exit 1
}
fx="$FIXTURES/bn128/$name"
zkey="$fx/circuit_final.zkey"
dom="$(sed -n 's/.*domain=\([0-9]*\).*/\1/p' "$fx/info.txt")"
nv="$(sed -n 's/.*nVars=\([0-9]*\).*/\1/p' "$fx/info.txt")"
buf_mb=$((((3 * dom + nv) * 32 + (1 << 20) - 1) >> 20))

inst="pbench$$"
tmp="$(mktemp -d)"
run="$tmp/run"
daemon_pid=""
cleanup() {
  if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill -TERM "$daemon_pid" 2>/dev/null
    sleep 2
    kill -KILL "$daemon_pid" 2>/dev/null || true
  fi
  rm -f /dev/shm/cuzk-"$inst".* 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
cuzk() { "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" "$@"; }
fail() { fail_with_log "bench/pipeline: " 30 "$*"; }
now() { date +%s.%N; }
source=stats_dump
pick_source() { # cuzk-top if built and its JSON has what we need (schema: "processes" with
  # "histograms"; stats_dump's: "slots" with "hists"), else stats_dump
  [ -x "$BUILD/bin/cuzk-top" ] || return 0
  "$BUILD/bin/cuzk-top" --instance "$inst" --run-dir "$run" --once --json >"$tmp/probe.json" 2>/dev/null || return 0
  node -e 'const j=JSON.parse(require("fs").readFileSync(process.argv[1])), p=j.processes;
           if(!Array.isArray(p)||!p.some(s=>s.role==="gpuworker")||
              !p.every(s=>s.states&&s.histograms&&s.wall_ns!==undefined))process.exit(1)' "$tmp/probe.json" &&
    source=cuzk-top || true
}
# CPU seconds (user + system) by process name of PID and its descendants: a live
# process's own and its reaped children's (/proc/PID/stat fields 14-17), so the
# finalizer's short-lived writers count too. One "name seconds" line per process.
# On 2 CPUs shared by every stage this, not the stats page's wall-time states, says
# what a partition costs when the machine is loaded by others.
tree_cpu() { # pid
  local pids="$1" all="$1" next p hz
  hz="$(getconf CLK_TCK)"
  while [ -n "$pids" ]; do
    next="$(for p in $pids; do cat /proc/"$p"/task/*/children 2>/dev/null; done | tr -s ' \n' ' ')"
    all="$all $next"
    pids="${next// /}"
    [ -z "$pids" ] || pids="$next"
  done
  for p in $all; do
    awk -v hz="$hz" '{ sub(/^[0-9]+ \(/, ""); n = $0; sub(/\).*/, "", n); sub(/^[^)]*\) /, "");
                       printf "%s %.3f\n", n, ($12 + $13 + $14 + $15) / hz }' /proc/"$p"/stat 2>/dev/null || true
  done
}
children_cpu() { # pid: CPU seconds of its reaped children (a $(...) is a subshell: pass $BASHPID)
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^[^)]*\) /, ""); printf "%.3f", ($14 + $15) / hz }' /proc/"$1"/stat
}
snap() { # file
  if [ $source = cuzk-top ]; then
    "$BUILD/bin/cuzk-top" --instance "$inst" --run-dir "$run" --once --json >"$1" || fail "cuzk-top --once --json"
  else
    "$BUILD/bench/stats_dump" --instance "$inst" >"$1" || fail "stats_dump"
  fi
}

mkdir -p "$tmp/in" "$tmp/out"
for i in $(seq 1 "$N"); do cp "$fx/witness.wtns" "$tmp/in/w$i.wtns"; done

echo "== pipeline (bn128 $name: domain $dom, $N partitions in one job, --devices $DEVICES; $ncpu CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg))"
"$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --state-dir "$tmp/state" --devices "$DEVICES" --buffers 8 \
  --buffer-mb "$buf_mb" "${fixed_opt[@]}" --foreground >"$tmp/cuzkd.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 1 100); do
  [ -S "$run/$inst.sock" ] && break
  sleep 0.1
done
[ -S "$run/$inst.sock" ] || fail "cuzkd did not create its socket"
"$BUILD/bin/cuzkd" --plan --devices "$DEVICES" >"$tmp/plan" 2>&1 || true
sed "s/^/  plan: /" "$tmp/plan"
wcores="$(awk '$1 == "worker" && $2 == 0 { for (i = 3; i < NF; i++) if ($i == "cores") print $(i + 1) }' "$tmp/plan")"
wcores="${wcores:-1}"
sleep 0.5 # the stages are up and idle
pick_source
worker_metric() { cuzk metrics | sed -n "s/^cuzk_gauge{stage=\"gpuworker\",index=\"0\",name=\"$1\"} //p"; }
if [ "$WARMUP" -gt 0 ]; then
  mkdir -p "$tmp/warm"
  for i in $(seq 1 "$WARMUP"); do cp "$fx/witness.wtns" "$tmp/warm/w$i.wtns"; done
  out="$(cuzk --json prove --zkey "$zkey" --out "$tmp/warm" "$tmp/warm"/w*.wtns)" || fail "warm-up submit: $out"
  wjob="$(node -e 'console.log(JSON.parse(process.argv[1]).job)' "$out")" || fail "submit answered: $out"
  timeout 1800 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "$wjob" >"$tmp/wait" 2>&1 ||
    fail "warm-up job $wjob did not finish: $(cat "$tmp/wait")"
  for _ in $(seq 1 1800); do
    [ "$(worker_metric fixed_pending)" = 0 ] && break
    sleep 1
  done
  echo "  warm-up: $WARMUP partitions; worker fixed-base tables $(worker_metric fixed_bytes) bytes"
fi

snap "$tmp/before.json"
tree_cpu "$daemon_pid" >"$tmp/cpu0"
t0="$(now)"
out="$(cuzk --json prove --zkey "$zkey" --out "$tmp/out" "$tmp/in"/w*.wtns)" || fail "submit: $out"
job="$(node -e 'console.log(JSON.parse(process.argv[1]).job)' "$out")" || fail "submit answered: $out"
timeout 1800 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "$job" >"$tmp/wait" 2>&1 ||
  fail "job $job did not finish: $(cat "$tmp/wait")"
t1="$(now)"
snap "$tmp/after.json"
tree_cpu "$daemon_pid" >"$tmp/cpu1"

done_n="$(find "$tmp/out" -name '*.proof.json' | wc -l)"
[ "$done_n" -eq "$N" ] || fail "$done_n of $N proofs written"
# snarkjs checks VERIFY of the N proofs (evenly spaced, first and last among them; about
# 0.5-1 s each), every one with BENCH_PIPE_VERIFY=all; the finalizer checked all.
nver="$VERIFY"
[ "$nver" = all ] && nver="$N"
[ "$nver" -gt "$N" ] && nver="$N"
[ "$nver" -ge 2 ] || nver=2
for j in $(seq 0 $((nver - 1))); do
  i=$((1 + j * (N - 1) / (nver - 1)))
  "$SNARKJS" groth16 verify "$fx/verification_key.json" "$tmp/out/w$i.public.json" "$tmp/out/w$i.proof.json" 2>&1 |
    grep -q OK || fail "snarkjs rejects w$i.proof.json"
done
cuzk shutdown >/dev/null || fail "shutdown request"
for _ in $(seq 1 300); do
  kill -0 "$daemon_pid" 2>/dev/null || break
  sleep 0.1
done
rc=0
wait "$daemon_pid" || rc=$?
daemon_pid=""
[ $rc -eq 0 ] || fail "cuzkd exited with $rc after shutdown"

local_run() { # prove-local ARGS for every partition back to back -> "seconds cpu-seconds"
  local a b i c0 c1 me="$BASHPID"
  c0="$(children_cpu "$me")"
  a="$(now)"
  for i in $(seq 1 "$N"); do
    "$BUILD/bin/cuzk" prove-local "$@" "$zkey" "$tmp/in/w$i.wtns" "$tmp/local.proof.json" "$tmp/local.public.json" \
      >"$tmp/local.log" 2>&1 || fail "prove-local $* w$i: $(head -c 300 "$tmp/local.log")"
  done
  b="$(now)"
  c1="$(children_cpu "$me")"
  "$SNARKJS" groth16 verify "$fx/verification_key.json" "$tmp/local.public.json" "$tmp/local.proof.json" 2>&1 |
    grep -q OK || fail "snarkjs rejects prove-local's last proof"
  awk -v a="$a" -v b="$b" -v c="$c1" -v c0="$c0" 'BEGIN{printf "%.3f %.3f", b-a, c-c0}'
}
rapid_run() { # rapidsnark for every partition back to back -> "seconds cpu-seconds"; checks 1 and N
  local a b i c0 c1 me="$BASHPID"
  c0="$(children_cpu "$me")"
  a="$(now)"
  for i in $(seq 1 "$N"); do
    "$RAPIDSNARK" "$zkey" "$tmp/in/w$i.wtns" "$tmp/rapid$i.proof.json" "$tmp/rapid$i.public.json" \
      >"$tmp/rapid.log" 2>&1 || fail "rapidsnark w$i: $(head -c 300 "$tmp/rapid.log")"
  done
  b="$(now)"
  c1="$(children_cpu "$me")"
  for i in 1 "$N"; do
    "$SNARKJS" groth16 verify "$fx/verification_key.json" "$tmp/rapid$i.public.json" "$tmp/rapid$i.proof.json" 2>&1 |
      grep -q OK || fail "snarkjs rejects rapidsnark's proof of w$i"
  done
  awk -v a="$a" -v b="$b" -v c="$c1" -v c0="$c0" 'BEGIN{printf "%.3f %.3f", b-a, c-c0}'
}
tl=""
tl1=""
tr=""
[ -z "$RAPIDSNARK" ] || tr="$(rapid_run)"
if [ "$LOCAL" = 1 ]; then
  tl="$(local_run)"
  tl1="$(local_run --threads "$wcores")"
fi

node - "$tmp/before.json" "$tmp/after.json" "$t0" "$t1" "$N" "$source" "$tl" "$tl1" "$wcores" "$tr" "$tmp/cpu0" "$tmp/cpu1" <<'EOF'
const fs = require("fs");
const [bf, af, t0s, t1s, ns, source, tls, tl1s, wcores, trs, c0f, c1f] = process.argv.slice(2);
const load = (f) => {  // either schema (see snap) -> {slots: [{..., hists}]}
  const j = JSON.parse(fs.readFileSync(f));
  return { slots: (j.slots || j.processes).map((s) => ({ ...s, hists: s.hists || s.histograms })) };
};
const B = load(bf), A = load(af);
const N = +ns, wall = +t1s - +t0s;
const ms = (x) => (x / 1e6).toFixed(3);
const pct = (x) => (100 * x).toFixed(2) + "%";
const key = (s) => s.role + "/" + s.index;
const before = new Map(B.slots.map((s) => [key(s), s]));
const isWait = (name) => name === "idle" || name.startsWith("wait");
console.log(`submit -> done: ${wall.toFixed(3)} s, ${(N / wall).toFixed(3)} partitions/s (cold start included)`);
const workers = [], perPart = [];
console.log(`stage utilization over that window (from the stats page, via ${source}):`);
for (const s of A.slots) {
  if (!["synth", "gpuworker", "finalizer"].includes(s.role)) continue;
  const b = before.get(key(s));
  if (!b || b.generation !== s.generation) { console.log(`  ${key(s)}: restarted during the run; no figures`); continue; }
  const dwall = s.wall_ns - b.wall_ns;
  let waiting = 0;
  const parts = [];
  for (const [name, v] of Object.entries(s.states)) {
    const d = v - (b.states[name] || 0);
    if (isWait(name)) waiting += d;
    if (d > 0.0005 * dwall) parts.push(`${name} ${pct(d / dwall)}`);
  }
  console.log(`  ${key(s).padEnd(12)} utilization ${pct(1 - waiting / dwall).padStart(7)}   (${parts.join(", ")})`);
  perPart.push(`  ${key(s).padEnd(12)} ` + Object.entries(s.states).map(([name, v]) => [name, v - (b.states[name] || 0)])
    .filter(([name, d]) => !isWait(name) && d > 0).map(([name, d]) => `${name} ${ms(d / N)}`).join(", "));
  if (s.role === "gpuworker") workers.push({ s, b });
}
console.log(`each stage's working states, ms per partition (the window's share / ${N}; waits left out):`);
perPart.forEach((l) => console.log(l));
if (!workers.length) { console.log("no worker slot found"); process.exit(1); }
const dh = (worker, name) => {
  const h = worker.s.hists[name], hb = worker.b.hists[name];
  const buckets = h.buckets.map((v, i) => v - hb.buckets[i]);
  return { count: h.count - hb.count, sum: h.sum_ns - hb.sum_ns, buckets };
};
const q = (h, p) => {  // upper bound of the log2 bucket holding quantile p (as stats_hist_percentile)
  let target = Math.max(1, Math.ceil(p * h.count - 1e-9)), acc = 0;
  for (let i = 0; i < h.buckets.length; i++) { acc += h.buckets[i]; if (acc >= target) return i ? 2 ** i - 1 : 0; }
  return 0;
};
const hmax = (h) => { for (let i = h.buckets.length - 1; i > 0; i--) if (h.buckets[i]) return 2 ** i - 1; return 0; };
let proves = 0;
for (const w of workers) {
  const name = `worker ${w.s.index}`;
  const gap = dh(w, "gap"), prove = dh(w, "prove");
  // One in-flight thread: the span is its proves and the gaps between them. Two (cpu-inflight)
  // prove side by side, so their prove times overlap and add up to more than the window:
  // then the span is the wall time the worker spent in working states (not idle, not
  // waiting) plus its gaps, and busy is the working share of it.
  const dwallW = w.s.wall_ns - w.b.wall_ns;
  const working = Object.entries(w.s.states).filter(([n]) => !isWait(n))
    .reduce((acc, [n, v]) => acc + v - (w.b.states[n] || 0), 0);
  const overlapped = prove.sum > dwallW;
  const span = overlapped ? working + gap.sum : prove.sum + gap.sum;
  const busy = span > 0 ? (overlapped ? working : prove.sum) / span : 0;
  proves += prove.count;
  console.log(`${name}: ${prove.count} proves, mean ${ms(prove.sum / Math.max(1, prove.count))} ms; ` +
              `steady rate ${((prove.count - 1) / (span / 1e9)).toFixed(3)} partitions/s over its ${(span / 1e9).toFixed(3)} s span` +
              (overlapped ? " (two in flight: proves overlap; span = working states + gaps)" : ""));
  console.log(`  gap between partitions (${gap.count} gaps): p50 <= ${ms(q(gap, 0.5))} ms, p99 <= ${ms(q(gap, 0.99))} ms, ` +
              `max <= ${ms(hmax(gap))} ms (log2-bucket upper bounds), mean ${ms(gap.sum / Math.max(1, gap.count))} ms`);
  const over = gap.buckets.slice(22).reduce((x, y) => x + y, 0);  // bucket 22 = [2.10, 4.19) ms
  console.log(`  gaps >= 2.10 ms: ${over} of ${gap.count}` + (over ? ` (${gap.buckets.map((v, i) => v ? `${v} in [${ms(2 ** (i - 1))}, ${ms(2 ** i)}) ms` : "").filter(Boolean).join(", ")})` : ""));
  console.log(`  busy under backlog: ${pct(busy)} of its span  [target >= 99%: ${busy >= 0.99 ? "met" : "MISSED"}]`);
  const p99 = q(gap, 0.99);
  console.log(`  p99 gap <= ${ms(p99)} ms  [target <= 2 ms: ${p99 <= 2.1e6 ? "met" : "MISSED"}` +
              `${p99 <= 2.1e6 && p99 > 1.05e6 ? " (bucket [1.05, 2.10) ms)" : ""}]`);
}
if (proves !== N) console.log(`(the workers proved ${proves} times for ${N} partitions: retries?)`);
console.log(`daemon: ${(N / wall).toFixed(3)} partitions/s (${N} in ${wall.toFixed(3)} s, cold start included)`);
const cpuOf = (f) => {  // "name seconds" lines -> Map name -> summed seconds
  const m = new Map();
  for (const l of fs.readFileSync(f, "utf8").split("\n").filter(Boolean)) {
    const [n, v] = l.split(" ");
    m.set(n, (m.get(n) || 0) + +v);
  }
  return m;
};
const C0 = cpuOf(c0f), C1 = cpuOf(c1f);
let cpuTotal = 0;
const cpuParts = [];
for (const [n, v] of C1) {
  const d = v - (C0.get(n) || 0);
  cpuTotal += d;
  if (d > 0) cpuParts.push(`${n} ${(1e3 * d / N).toFixed(1)}`);
}
console.log(`daemon CPU (user + sys) per partition: ${(1e3 * cpuTotal / N).toFixed(1)} ms (${cpuParts.join(", ")})`);
const local = (what, tc, target) => {
  if (!tc) return;
  const [t, c] = tc.split(" ").map(Number);
  const r = t / wall;
  console.log(`${what}: ${t.toFixed(3)} s for ${N} (${(N / t).toFixed(3)} partitions/s, CPU ${(1e3 * c / N).toFixed(1)} ms ` +
              `per partition, ${(c / Math.max(cpuTotal, 1e-9)).toFixed(2)}x the daemon's); daemon / back to back: ${r.toFixed(2)}x` +
              (target ? `  [target >= ${target}x: ${r >= target ? "met" : "MISSED"}]` : ""));
};
local("rapidsnark back to back, all CPUs", trs, 2);
local("prove-local back to back, all CPUs", tls);
local(`prove-local back to back, --threads ${wcores} (worker 0's cores)`, tl1s);
EOF
