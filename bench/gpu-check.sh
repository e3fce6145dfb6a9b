#!/usr/bin/env bash
# bench/gpu-check.sh — the CUDA backend on a machine with a GPU, in one unattended run
# of at most 8 minutes, on binaries built elsewhere (bench/gpu-bundle.sh): the GPU
# machine has the driver, nvcc, compute-sanitizer, but none of this project's
# libraries, no network and no npm.
#
#   here:        make CUDA_ARCHS=90 tests && bench/gpu-bundle.sh     (build/gpu-bundle.tar.gz)
#   GPU machine: OUT=DIR bash bench/gpu-check.sh --bundle build/gpu-bundle.tar.gz
#   dry run:     bash bench/gpu-check.sh --dry-run [--lg 12]   (packs the bundle from the
#                current build; every GPU step SKIPs with its reason, the rest runs;
#                tests/scripts/gpu_check_dry.sh)
#
# Options: --bundle FILE (default $BUILD/gpu-bundle.tar.gz), --dry-run (no device
# expected: a GPU step SKIPs instead of failing), --lg N (fixture size, default 20;
# the dry-run test uses 12), --work DIR (kept afterwards; default a temp dir, removed),
# --budget S (default 450: the steps' deadline, leaving room in 8 minutes for the
# start and the logs).
#
# Steps, correctness first, each against the CPU backend, each with its own limit and
# all under one deadline (a step that would run past it is cut, with the reason, and the
# rest goes on):
#   env        the GPU (nvidia-smi), nvcc, compute-sanitizer, glibc >= the bundle's need;
#   libs       every packed program's libraries resolve from the bundle (ldd with
#              LD_LIBRARY_PATH = the bundle's lib/ only; no "not found");
#   probe      gpu_bench probe: a device, or the named CUDA error (then every GPU step
#              SKIPs with it; outside --dry-run that is a failure);
#   fixture    mulchain 2^lg: mulchain_gen, cuzk test-setup (INSECURE, tests only),
#              info.txt (constraints, nPublic, nVars, domain: what sizes the buffers);
#   cpu-proof  the CPU backend's proof of it (--insecure-seed), pairing-verified;
#   gpu-test   gpu_test: MSM for the 4 groups at 2^10..2^16 (uniform, witness-like,
#              infinity bases) and NTT bit-exact, against the CPU; gpu_prove's five raw
#              results against groth16_compute on the fixture;
#   closed     gpu_bench closed: G1 MSM at 2^20, 2^24 and 2^24 + 4096 (the chunked path)
#              against (sum (i+1)·s_i mod r)·G, G2 at 2^20;
#   proof      the CUDA backend's proof, byte-identical to the CPU backend's (same seed),
#              pairing-verified; its wall time (best of 5);
#   memcheck, racecheck  compute-sanitizer over gpu_test at the small sizes;
#   msm, ntt   times: MSM G1/G2 at 2^20, 2^22, 2^24, kernels alone and with the H2D copy
#              (events); NTT 2^20 and 2^24;
#   daemon     32 partitions through cuzkd --devices cuda:0 (two lanes at once): device
#              busy share from the stats page, gap p50/p99 (the finalizer pairing-checks
#              every proof before it writes it);
#   proof-22   the proof wall at 2^22 (its fixture made first) when time is left.
# Goals (reported, not gated): BN254 G1 MSM 2^24 <= 50 ms, NTT 2^24 <= 5 ms, device
# busy >= 95% under the backlog.
#
# $OUT (when set) gets at most 3 files: summary.txt (the table first), gpu-check.log
# (everything printed), logs.tar.gz (each step's log, the proofs, cuzkd's log).
# Exit 0 when no step failed (SKIP and CUT are not failures in --dry-run; outside it a
# SKIP of a GPU step is one), 1 otherwise.
# shellcheck disable=SC2317 # the steps are functions that step runs by name (bash -c)
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../tests/fixtures/env.sh
. "$here/../tests/fixtures/env.sh" # ROOT, BUILD (absolute)
bundle="$BUILD/gpu-bundle.tar.gz"
dry=0 lg=20 work="" budget=450 bundle_given=0
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) bundle="$2"; bundle_given=1; shift 2 ;;
    --dry-run) dry=1; shift ;;
    --lg) lg="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --budget) budget="$2"; shift 2 ;;
    *) echo "usage: gpu-check.sh [--dry-run] [--bundle FILE] [--lg N] [--work DIR] [--budget S]" >&2; exit 2 ;;
  esac
done
[[ "$lg" =~ ^[0-9]+$ ]] && [ "$lg" -ge 6 ] && [ "$lg" -le 24 ] || { echo "gpu-check: --lg $lg: 6..24" >&2; exit 2; }
OUT="${OUT:-}"
SEED=20261202
PARTS="${PIPE_PARTS:-32}"
t_start=$SECONDS
keep=1
if [ -z "$work" ]; then work="$(mktemp -d)"; keep=0; fi
mkdir -p "$work/logs"
logs="$work/logs"
daemon_pid=""
inst="gpuchk$$"
rows=()
failed=0
have_gpu=0
gpu_why="not probed yet"

if [ -n "$OUT" ]; then
  mkdir -p "$OUT"
  exec > >(tee "$OUT/gpu-check.log") 2>&1
fi
cleanup() {
  daemon_pid="$(cat "$work/daemon.pid" 2>/dev/null)"
  if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill -TERM "$daemon_pid" 2>/dev/null; sleep 2; kill -KILL "$daemon_pid" 2>/dev/null || true
  fi
  rm -f /dev/shm/cuzk-"$inst".* 2>/dev/null || true
  [ "$keep" = 1 ] || rm -rf "$work"
}
trap cleanup EXIT
elapsed() { echo $((SECONDS - t_start)); }

# row STEP RESULT SECONDS DETAIL
row() {
  rows+=("$(printf '| %-10s | %-4s | %4s | %s |' "$1" "$2" "$3" "$4")")
  echo "== [$(elapsed) s] $1: $2${4:+ — $4}"
  case "$2" in FAIL) failed=1 ;; SKIP) [ "$dry" = 1 ] || failed=1 ;; esac
}

# step NAME LIMIT KIND(cpu|gpu) CMD...: run CMD with its log in $logs/NAME.log, cut at
# LIMIT seconds or at the deadline, whichever is first. The detail column is the
# command's last line that starts with "detail:" (else its last line).
step() {
  local name="$1" limit="$2" kind="$3" left rc t0 det
  shift 3
  if [ "$kind" = gpu ] && [ "$have_gpu" = 0 ]; then row "$name" SKIP 0 "$gpu_why"; return 0; fi
  left=$((budget - $(elapsed)))
  if [ "$left" -lt 15 ]; then row "$name" CUT 0 "not started: $(elapsed) s of the ${budget} s budget used"; return 0; fi
  [ "$limit" -le "$left" ] || limit=$left
  t0=$SECONDS
  rc=0
  # a function runs in a bash of its own, so that timeout can cut it (every function
  # and variable a step uses is exported before the first step)
  # shellcheck disable=SC2046 # the function names are words
  export -f $(compgen -A function)
  export B direct work logs lg FX Z W SEED have need PARTS inst
  timeout -k 5 "$limit" bash -c '"$@"' "$name" "$@" >"$logs/$name.log" 2>&1 || rc=$?
  det="$(grep '^detail:' "$logs/$name.log" | tail -n 1 | sed 's/^detail: *//')"
  [ -n "$det" ] || det="$(grep -v '^$' "$logs/$name.log" | tail -n 1 | cut -c1-160)"
  case $rc in
    0) row "$name" ok $((SECONDS - t0)) "$det" ;;
    124 | 137) row "$name" CUT $((SECONDS - t0)) "ran past its ${limit} s: $det" ;;
    77) row "$name" SKIP $((SECONDS - t0)) "$det" ;;
    *) row "$name" FAIL $((SECONDS - t0)) "exit $rc: $det"; tail -n 15 "$logs/$name.log" ;;
  esac
  return 0
}

finish() {
  {
    echo "gpu-check $( [ "$dry" = 1 ] && echo '(dry run) ')— $(date -u +%Y-%m-%dT%H:%M:%SZ), $(elapsed) s"
    echo "device: $(cat "$work/device.txt" 2>/dev/null || echo none)"
    echo "bundle: $(tr '\n' ';' <"$work/b/gpu-bundle/MANIFEST" 2>/dev/null)"
    echo
    echo "| step       | res  |    s | detail |"
    echo "|------------|------|------|--------|"
    printf '%s\n' "${rows[@]}"
  } >"$work/summary.txt"
  echo; cat "$work/summary.txt"
  if [ -n "$OUT" ]; then
    cp "$work/summary.txt" "$OUT/summary.txt"
    tar -C "$work" -czf "$OUT/logs.tar.gz" logs 2>/dev/null
  fi
  [ "$failed" = 0 ] && { echo "gpu-check: no step failed"; exit 0; }
  echo "gpu-check: FAILED (see the table)"; exit 1
}

# ---- the bundle ----------------------------------------------------------------
if [ "$dry" = 1 ] && [ "$bundle_given" = 0 ]; then
  step pack 120 cpu bash "$here/gpu-bundle.sh" "$bundle"
fi
if [ ! -f "$bundle" ]; then
  row bundle FAIL 0 "no bundle at $bundle: run bench/gpu-bundle.sh where it was built, carry the file"
  finish
fi
mkdir -p "$work/b"
tar -C "$work/b" -xzf "$bundle" || { row bundle FAIL 0 "cannot unpack $bundle"; finish; }
B="$work/b/gpu-bundle"
need="$(sed -n 's/^glibc needed: //p' "$B/MANIFEST")"
have="$(ldd --version 2>/dev/null | head -n 1 | awk '{ print $NF }')"
# Direct runs need the machine's glibc to be new enough; otherwise every program goes
# through the packed loader and libc (the daemon, whose stages cuzkd execs, cannot).
direct=1
if [ -n "$need" ] && [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -n 1)" != "$need" ]; then direct=0; fi
# GPU_CHECK_LOADER=1: the packed loader even where the glibc would do (its dry-run test)
[ "${GPU_CHECK_LOADER:-0}" = 1 ] && direct=0
# x PROGRAM ARGS...: a packed program with only the bundle's libraries.
x() {
  local p="$B/bin/$1"
  shift
  if [ "$direct" = 1 ]; then
    LD_LIBRARY_PATH="$B/lib" "$p" "$@"
  else
    "$B/glibc/ld-linux-x86-64.so.2" --library-path "$B/lib:$B/glibc" "$p" "$@"
  fi
}

# ---- 1. environment and libraries -------------------------------------------------
env_step() {
  date -u; uname -r; echo "cpus: $(nproc)"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,memory.total,driver_version,compute_cap,pci.bus_id --format=csv
  local nvcc sanitizer
  nvcc="$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)"
  sanitizer="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)"
  [ -n "$nvcc" ] && "$nvcc" --version | tail -n 2
  echo "compute-sanitizer: ${sanitizer:-not found}"
  echo "glibc: $have (the bundle needs $need; $( [ "$direct" = 1 ] && echo 'run directly' || echo 'run through the packed loader; the daemon step is skipped'))"
  echo "detail: $(nproc) cpus, glibc $have, nvcc $( [ -n "$nvcc" ] && "$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p' || echo none), sanitizer $( [ -n "$sanitizer" ] && echo yes || echo no)"
}
libs_step() {
  local bad=0 b
  for b in "$B"/bin/*; do
    if [ "$direct" = 1 ]; then
      LD_LIBRARY_PATH="$B/lib" ldd "$b" >"$work/ldd.txt" 2>&1
    else
      "$B/glibc/ld-linux-x86-64.so.2" --list --library-path "$B/lib:$B/glibc" "$b" >"$work/ldd.txt" 2>&1
    fi
    # a non-glibc library resolved outside the bundle would hide a missing one
    if grep -q 'not found' "$work/ldd.txt" || awk -v B="$B" '$2 == "=>" && $3 ~ /^\// && index($3, B) != 1 &&
        $1 !~ /^(libc|libm|libpthread|libdl|librt|libresolv|libutil|ld-linux-x86-64)\.so/ { bad = 1 } END { exit !bad }' "$work/ldd.txt"; then
      echo "$(basename "$b"):"; cat "$work/ldd.txt"; bad=1
    fi
  done
  [ "$bad" = 0 ] || return 1
  echo "detail: $(find "$B/bin" -mindepth 1 -maxdepth 1 | wc -l) programs, $(find "$B/lib" -mindepth 1 -maxdepth 1 | wc -l) libraries, all from the bundle"
}
step env 20 cpu env_step
step libs 20 cpu libs_step
probe_step() {
  local rc=0
  x gpu_bench probe >"$work/probe.txt" 2>&1 || rc=$?
  cat "$work/probe.txt"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader \
    | head -n 1 >"$work/device.txt"
  echo "detail: $(head -n 1 "$work/probe.txt" | sed 's/^SKIP: //')"
  return "$rc"
}
step probe 30 cpu probe_step
if grep -q '^device:' "$work/probe.txt" 2>/dev/null; then
  have_gpu=1
else
  gpu_why="$(sed -n 's/^SKIP: //p' "$work/probe.txt" | head -n 1)"
  gpu_why="${gpu_why:-the device probe failed (probe.log)}"
fi

# ---- 2. fixture and the CPU reference -------------------------------------------------
# u32 FILE OFFSET: a little-endian 32-bit word of a binary file
u32() { od -An -tu4 -j "$2" -N 4 "$1" | tr -d ' '; }
# section FILE ID: the payload offset of section ID (zkey/r1cs: magic, version, count,
# then id u32, size u64, payload)
section() {
  local f="$1" id="$2" off=12 n i sid lo hi
  n="$(u32 "$f" 8)"
  for ((i = 0; i < n; i++)); do
    sid="$(u32 "$f" "$off")"; lo="$(u32 "$f" $((off + 4)))"; hi="$(u32 "$f" $((off + 8)))"
    off=$((off + 12))
    [ "$sid" = "$id" ] && { echo "$off"; return 0; }
    off=$((off + lo + hi * 4294967296))
  done
  return 1
}
# fixture LG DIR: mulchain 2^LG with its key and info.txt
fixture() {
  local k="$1" d="$2" h n8q n8r p nc
  mkdir -p "$d"
  x mulchain_gen --curve bn128 "$k" "$d" || return 1
  x cuzk test-setup -q "$d/circuit.r1cs" "$d/circuit_final.zkey" || return 1
  h="$(section "$d/circuit_final.zkey" 2)" || return 1
  n8q="$(u32 "$d/circuit_final.zkey" "$h")"; n8r="$(u32 "$d/circuit_final.zkey" $((h + 4 + n8q)))"
  p=$((h + 8 + n8q + n8r))
  h="$(section "$d/circuit.r1cs" 1)" || return 1
  nc="$(u32 "$d/circuit.r1cs" $((h + $(u32 "$d/circuit.r1cs" "$h") + 28)))"
  echo "constraints=$nc nPublic=$(u32 "$d/circuit_final.zkey" $((p + 4))) nVars=$(u32 "$d/circuit_final.zkey" "$p") domain=$(u32 "$d/circuit_final.zkey" $((p + 8))) setup=test-setup-INSECURE circuit=mulchain_gen" >"$d/info.txt"
  cat "$d/info.txt"
  echo "detail: 2^$k: $(cat "$d/info.txt")"
}
FX="$work/fx"
step fixture 150 cpu fixture "$lg" "$FX"
Z="$FX/circuit_final.zkey"; W="$FX/witness.wtns"
cpu_proof() {
  x cuzk-gpuworker prove --backend cpu --insecure-seed "$SEED" "$Z" "$W" "$logs/cpu.proof.json" \
    "$logs/cpu.public.json" || return 1
  echo "detail: CPU backend proof of 2^$lg written (pairing-verified)"
}
if [ -f "$FX/info.txt" ]; then
  step cpu-proof 120 cpu cpu_proof
else
  row cpu-proof FAIL 0 "no fixture"
fi

# ---- 3. correctness on the device ------------------------------------------------------
gpu_test_step() {
  x gpu_test --max-lg 16 --zkey "$Z" --wtns "$W" || return $?
  echo "detail: $(grep -c '^ok' "$logs/gpu-test.log" 2>/dev/null || true) checks ok (MSM 4 groups 2^10..2^16, NTT, gpu_prove vs CPU)"
}
step gpu-test 150 gpu gpu_test_step
closed_step() {
  x gpu_bench closed 20 24 $(((1 << 24) + 4096)) || return $?
  echo "detail: $(grep '^ok closed' "$logs/closed.log" | sed 's/^ok closed //; s/ points:/:/' | tr '\n' ';')"
}
step closed 120 gpu closed_step
proof_step() {
  x cuzk-gpuworker prove --backend cuda:0 --repeat 5 --insecure-seed "$SEED" "$Z" "$W" "$logs/cuda.proof.json" \
    "$logs/cuda.public.json" | tee "$work/cuda-prove.txt" || return 1
  cmp "$logs/cpu.proof.json" "$logs/cuda.proof.json" && cmp "$logs/cpu.public.json" "$logs/cuda.public.json" \
    || { echo "the CUDA backend's proof differs from the CPU backend's for the same seed"; return 1; }
  echo "detail: byte-identical to the CPU backend's; $(tail -n 1 "$work/cuda-prove.txt" | cut -c1-120)"
}
step proof 90 gpu proof_step
sanitizer() {
  local tool="$1" cs
  cs="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)"
  [ -n "$cs" ] || { echo "SKIP: compute-sanitizer not found"; echo "detail: compute-sanitizer not found"; return 77; }
  # the sanitizer starts the program itself (through the packed loader when the
  # machine's glibc is too old)
  if [ "$direct" = 1 ]; then
    LD_LIBRARY_PATH="$B/lib" "$cs" --tool "$tool" --error-exitcode 3 "$B/bin/gpu_test" --max-lg 10 || return $?
  else
    "$cs" --tool "$tool" --error-exitcode 3 "$B/glibc/ld-linux-x86-64.so.2" --library-path "$B/lib:$B/glibc" \
      "$B/bin/gpu_test" --max-lg 10 || return $?
  fi
  echo "detail: gpu_test --max-lg 10 under $tool: no errors"
}
step memcheck 120 gpu sanitizer memcheck
step racecheck 120 gpu sanitizer racecheck

# ---- 4. times -----------------------------------------------------------------------
msm_step() {
  x gpu_bench msm --reps 3 20 22 24 || return $?
  echo "detail: $(grep '^msm' "$logs/msm.log" | sed -E 's/^msm (G[12]) (2\^[0-9]+): ([0-9.]+) ms kernels.*; ([0-9.]+) ms with the H2D copy.*/\1 \2 \3 ms (with H2D \4)/' | tr '\n' ';')"
}
step msm 150 gpu msm_step
ntt_step() {
  x gpu_bench ntt --reps 3 20 24 || return $?
  echo "detail: $(grep '^ntt' "$logs/ntt.log" | tr '\n' ';')"
}
step ntt 60 gpu ntt_step
goals() {
  local g1 ntt
  g1="$(sed -n 's/^msm G1 2^24: \([0-9.]*\) ms kernels.*/\1/p' "$logs/msm.log" 2>/dev/null)"
  ntt="$(sed -n 's/^ntt Fr 2^24: \([0-9.]*\) ms kernels.*/\1/p' "$logs/ntt.log" 2>/dev/null)"
  [ -n "$g1" ] && row goal-msm "$(awk -v v="$g1" 'BEGIN { print (v <= 50) ? "met" : "MISS" }')" 0 "BN254 G1 MSM 2^24 $g1 ms (goal <= 50 ms, bases resident)"
  [ -n "$ntt" ] && row goal-ntt "$(awk -v v="$ntt" 'BEGIN { print (v <= 5) ? "met" : "MISS" }')" 0 "NTT 2^24 $ntt ms (goal <= 5 ms)"
  return 0
}
goals

daemon_step() {
  local dom nv buf_mb run="$work/run" i t0 t1 rc=0 n_ok wall busy kern gaps
  [ "$direct" = 1 ] || { echo "detail: glibc $have < $need: cuzkd execs its stages directly"; return 77; }
  dom="$(sed -n 's/.*domain=\([0-9]*\).*/\1/p' "$FX/info.txt")"
  nv="$(sed -n 's/.*nVars=\([0-9]*\).*/\1/p' "$FX/info.txt")"
  buf_mb=$((((3 * dom + nv) * 32 + (1 << 20) - 1) >> 20))
  mkdir -p "$work/in" "$work/out"
  for i in $(seq 1 "$PARTS"); do ln "$W" "$work/in/w$i.wtns" 2>/dev/null || cp "$W" "$work/in/w$i.wtns"; done
  export LD_LIBRARY_PATH="$B/lib"
  "$B/bin/cuzkd" --instance "$inst" --run-dir "$run" --state-dir "$work/state" --devices cuda:0 --buffers 8 \
    --buffer-mb "$buf_mb" --foreground >"$logs/cuzkd.log" 2>&1 &
  echo $! >"$work/daemon.pid" # cleanup stops it if this step is cut
  for _ in $(seq 1 100); do [ -S "$run/$inst.sock" ] && break; sleep 0.1; done
  [ -S "$run/$inst.sock" ] || { tail -n 20 "$logs/cuzkd.log"; echo "detail: cuzkd did not start"; return 1; }
  cz() { "$B/bin/cuzk" --instance "$inst" --run-dir "$run" "$@"; }
  # one partition first: the context and the circuit upload are not in the backlog
  cz prove --zkey "$Z" --out "$work/out" --wait "$work/in/w1.wtns" || { echo "detail: the warm-up job failed"; return 1; }
  rm -f "$work/out"/*
  "$B/bin/gpu_bench" snap "$inst" "$work/before.snap" || return 1
  t0=$(date +%s.%N)
  cz prove --zkey "$Z" --out "$work/out" --wait "$work/in"/w*.wtns || rc=$?
  t1=$(date +%s.%N)
  "$B/bin/gpu_bench" snap "$inst" "$work/after.snap" || return 1
  n_ok="$(find "$work/out" -name '*.proof.json' | wc -l)"
  "$B/bin/gpu_bench" report "$work/before.snap" "$work/after.snap" | tee "$work/report.txt"
  busy="$(sed -n 's/.*device busy ([^)]*) \([0-9.]*\)%.*/\1/p' "$work/report.txt" | head -n 1)"
  kern="$(sed -n 's/.*kernels alone ([^)]*) \([0-9.]*\)%.*/\1/p' "$work/report.txt" | head -n 1)"
  gaps="$(sed -n 's/^worker 0: gaps[^:]*: \(.*\)/\1/p' "$work/report.txt")"
  wall="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')"
  cz shutdown >/dev/null 2>&1 || true
  for _ in $(seq 1 100); do kill -0 "$(cat "$work/daemon.pid")" 2>/dev/null || break; sleep 0.1; done
  grep -i "device fault\|exited with code\|killed by signal" "$logs/cuzkd.log" && { echo "detail: a stage died"; return 1; }
  echo "detail: $n_ok/$PARTS proofs in $wall s; device busy ${busy:-?}% (kernels ${kern:-?}%) [goal >= 95%]; gaps ${gaps:-?}"
  [ "$rc" = 0 ] && [ "$n_ok" = "$PARTS" ]
}
step daemon 150 gpu daemon_step

proof22_step() {
  [ "$lg" -lt 22 ] || { echo "detail: the fixture is already 2^$lg"; return 0; }
  fixture 22 "$work/fx22" >/dev/null || { echo "detail: the 2^22 fixture failed"; return 1; }
  x cuzk-gpuworker prove --backend cuda:0 --repeat 3 --insecure-seed "$SEED" "$work/fx22/circuit_final.zkey" \
    "$work/fx22/witness.wtns" "$work/p22.json" "$work/p22.public.json" | tee "$work/p22.txt" || return 1
  echo "detail: 2^22: $(tail -n 1 "$work/p22.txt" | cut -c1-140)"
}
step proof-22 200 gpu proof22_step
finish
