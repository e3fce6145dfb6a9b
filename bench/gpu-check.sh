#!/usr/bin/env bash
# shellcheck disable=SC2317 # the steps are functions run by name (run_step, bash -c)
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
# The first lines say where it runs (the runtime: a gVisor sandbox refuses
# compute-sanitizer, which is then skipped with that reason). Steps in this order,
# each with its own limit and all under one deadline (a step that would run past it is
# cut, with the reason, and the rest goes on), every one under `set -o pipefail`:
#   env        the runtime, the GPU (nvidia-smi), nvcc, compute-sanitizer, glibc;
#   libs       every packed program's libraries resolve from the bundle (ldd with
#              LD_LIBRARY_PATH = the bundle's lib/ only; no "not found");
#   probe      gpu_bench probe: a device, or the named CUDA error (then every GPU step
#              SKIPs with it; outside --dry-run that is a failure);
#   fixture, fixture-big, fixture-bls   mulchain 2^lg and 2^22 (2^(lg+2) in the dry run)
#              on BN254, 2^16 (2^lg in the dry run) on BLS12-381: mulchain_gen, cuzk
#              test-setup (INSECURE, tests only), info.txt (constraints, nPublic, nVars,
#              domain: what sizes the buffers);
#   cpu-proof, cpu-proof-bls  the CPU backend's proofs of them (--insecure-seed),
#              pairing-verified;
#  correctness:
#   gpu-test   gpu_test: MSM for the 4 groups at 2^10..2^16 (uniform, witness-like,
#              infinity bases) and NTT bit-exact, against the CPU; gpu_prove's five raw
#              results against groth16_compute on the fixture;
#   closed     gpu_bench closed: G1 MSM at 2^20, 2^24 and 2^24 + 4096 (the chunked path)
#              against (sum (i+1)·s_i mod r)·G, G2 at 2^20;
#   proof, proof-bls  the CUDA backend's proof, byte-identical to the CPU backend's
#              (same seed), pairing-verified; its wall time (best of 5);
#  the daemon:
#   daemon     PIPE_PARTS (32) partitions of 2^lg and 4 of the big fixture through cuzkd
#              on one device (--devices cuda:0; cpu:1 in the dry run, so that make test
#              covers the step), nvidia-smi sampling every 100 ms: gpu_busy share (device
#              events), in-flight occupancy, the idle-gap histogram, NVML samples at 0 %, the
#              synth stage's busy share and the worker ring's depth over the same window,
#              the gpuworker's CPU seconds, GPU memory high-water; a trace of the job;
#   cupti      8 partitions through a cuzkd whose gpuworker loads the CUPTI recorder
#              (libcuzk_cupti.so): the job's trace with the kernels and copies on a
#              "gpu 0" track (cuzk trace --cupti);
#  kernel times:
#   msm, ntt   MSM G1/G2 at 2^20, 2^22, 2^24, kernels alone and with the H2D copy
#              (events); NTT 2^20 and 2^24, forward and to the odd coset (as a proof);
#   h2d        host-to-device bandwidth from pinned and from malloc'd memory;
#   proof-22   the proof wall at 2^22;
#  last, each capped at 60 s so that a slow sanitizer cannot cut the figures:
#   memcheck, racecheck  compute-sanitizer over gpu_test at the small sizes.
# Goals (reported, not gated): BN254 G1 MSM 2^24 <= 50 ms, NTT 2^24 <= 5 ms, gpu_busy
# >= 95% under the backlog.
#
# $OUT (when set) gets at most 8 files: summary.txt (the table first), gpu-check.log
# (everything printed), logs.tar.gz (each step's log, the proofs), backlog.txt (the
# daemon step's report), trace.json (the backlog job, cuzk trace), nvml.csv (the
# samples), cuzkd.log, trace-cupti.json (the cupti step's job with the device's kernels
# and copies).
# Exit 0 when no step failed (SKIP and CUT are not failures in --dry-run; outside it a
# SKIP of a GPU step is one), 1 otherwise.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../tests/fixtures/env.sh
. "$here/../tests/fixtures/env.sh" # ROOT, BUILD (absolute)
bundle="$BUILD/gpu-bundle.tar.gz"
dry=0 lg=20 work="" budget=450 bundle_given=0
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle)
      bundle="$2"
      bundle_given=1
      shift 2
      ;;
    --dry-run)
      dry=1
      shift
      ;;
    --lg)
      lg="$2"
      shift 2
      ;;
    --work)
      work="$2"
      shift 2
      ;;
    --budget)
      budget="$2"
      shift 2
      ;;
    *)
      echo "usage: gpu-check.sh [--dry-run] [--bundle FILE] [--lg N] [--work DIR] [--budget S]" >&2
      exit 2
      ;;
  esac
done
[[ "$lg" =~ ^[0-9]+$ ]] && [ "$lg" -ge 6 ] && [ "$lg" -le 24 ] || {
  echo "gpu-check: --lg $lg: 6..24" >&2
  exit 2
}
OUT="${OUT:-}"
SEED=20261202
PARTS="${PIPE_PARTS:-32}"
t_start=$SECONDS
keep=1
if [ -z "$work" ]; then
  work="$(mktemp -d)"
  keep=0
fi
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
    kill -TERM "$daemon_pid" 2>/dev/null
    sleep 2
    kill -KILL "$daemon_pid" 2>/dev/null || true
  fi
  rm -f /dev/shm/cuzk-"$inst".* 2>/dev/null || true
  [ "$keep" = 1 ] || rm -rf "$work"
}
trap cleanup EXIT
elapsed() { echo $((SECONDS - t_start)); }

# The runtime, first: a gVisor sandbox (runsc) passes the GPU through but refuses
# compute-sanitizer's debugger interface. Its kernel says so in dmesg (runsc's own
# messages) and reports the release 4.4.0.
runtime="$(uname -sr)"
sandbox=""
# (read whole, never piped into grep -q: under pipefail the writer's SIGPIPE would fail a match)
kmsg="$(dmesg 2>/dev/null | head -n 20 || true)"
if grep -qi gvisor <<<"$kmsg" || [ "$(uname -r)" = 4.4.0 ]; then
  sandbox="gVisor sandbox (runsc)"
  runtime="$runtime, $sandbox"
elif [ -f /.dockerenv ] || grep -qa 'docker\|containerd\|kubepods' /proc/1/cgroup 2>/dev/null; then
  runtime="$runtime, container"
fi
echo "gpu-check $([ $dry = 1 ] && echo '(dry run) ')on $(hostname 2>/dev/null || echo '?'): runtime $runtime"
[ -n "$sandbox" ] && echo "gpu-check: $sandbox: compute-sanitizer cannot attach here; memcheck and racecheck are skipped"

# row STEP RESULT SECONDS DETAIL
row() {
  rows+=("$(printf '| %-10s | %-4s | %4s | %s |' "$1" "$2" "$3" "$4")")
  echo "== [$(elapsed) s] $1: $2${4:+ — $4}"
  case "$2" in FAIL) failed=1 ;; SKIP) [ $dry = 1 ] || failed=1 ;; esac
}

# step NAME LIMIT KIND(cpu|gpu) CMD...: run CMD with its log in $logs/NAME.log, cut at
# LIMIT seconds or at the deadline, whichever is first. The detail column is the
# command's last line that starts with "detail:" (else its last line).
step() {
  local name="$1" limit="$2" kind="$3" left rc t0 det
  # shellcheck disable=SC2046 # the function names are words
  shift 3
  # daemon: on the GPU, or in the dry run on cpu:1 (the step's plumbing, tested)
  if { [ "$kind" = gpu ] || { [ "$kind" = daemon ] && [ $dry = 0 ]; }; } && [ $have_gpu = 0 ]; then
    row "$name" SKIP 0 "$gpu_why"
    return 0
  fi
  left=$((budget - $(elapsed)))
  if [ $left -lt 15 ]; then
    row "$name" CUT 0 "not started: $(elapsed) s of the ${budget} s budget used"
    return 0
  fi
  [ "$limit" -le "$left" ] || limit=$left
  t0=$SECONDS
  rc=0
  # a function runs in a bash of its own, so that timeout can cut it (every function
  # and variable a step uses is exported before the first step)
  # shellcheck disable=SC2046 # function names: words, meant to split
  export -f $(compgen -A function)
  export B direct work logs lg lg_big FX FXB FXL Z W SEED have need PARTS inst have_gpu dry sandbox runtime
  # pipefail in the step's own bash too: `prove | tee` fails when prove does
  timeout -k 5 "$limit" bash -o pipefail -c '"$@"' "$name" "$@" >"$logs/$name.log" 2>&1 || rc=$?
  det="$(grep '^detail:' "$logs/$name.log" | tail -n 1 | sed 's/^detail: *//')"
  [ -n "$det" ] || det="$(grep -v '^$' "$logs/$name.log" | tail -n 1 | cut -c1-160)"
  case $rc in
    0) row "$name" ok $((SECONDS - t0)) "$det" ;;
    124 | 137) row "$name" CUT $((SECONDS - t0)) "ran past its ${limit} s: $det" ;;
    77) row "$name" SKIP $((SECONDS - t0)) "$det" ;;
    *)
      row "$name" FAIL $((SECONDS - t0)) "exit $rc: $det"
      tail -n 15 "$logs/$name.log"
      ;;
  esac
  return 0
}

finish() {
  {
    echo "gpu-check $([ $dry = 1 ] && echo '(dry run) ')— $(date -u +%Y-%m-%dT%H:%M:%SZ), $(elapsed) s"
    echo "runtime: $runtime"
    echo "device: $(cat "$work/device.txt" 2>/dev/null || echo none)"
    echo "bundle: $(tr '\n' ';' <"$work/b/gpu-bundle/MANIFEST" 2>/dev/null)"
    echo
    echo "| step       | res  |    s | detail |"
    echo "|------------|------|------|--------|"
    printf '%s\n' "${rows[@]}"
  } >"$work/summary.txt"
  echo
  cat "$work/summary.txt"
  if [ -n "$OUT" ]; then
    cp "$work/summary.txt" "$OUT/summary.txt"
    tar -C "$work" -czf "$OUT/logs.tar.gz" logs 2>/dev/null
    for f in backlog.txt trace.json nvml.csv trace-cupti.json; do [ -f "$work/$f" ] && cp "$work/$f" "$OUT/$f"; done
    [ -f "$logs/cuzkd.log" ] && cp "$logs/cuzkd.log" "$OUT/cuzkd.log"
  fi
  [ $failed = 0 ] && {
    echo "gpu-check: no step failed"
    exit 0
  }
  echo "gpu-check: FAILED (see the table)"
  exit 1
}

# ---- the bundle ----------------------------------------------------------------
if [ $dry = 1 ] && [ $bundle_given = 0 ]; then
  step pack 120 cpu bash "$here/gpu-bundle.sh" "$bundle"
fi
if [ ! -f "$bundle" ]; then
  row bundle FAIL 0 "no bundle at $bundle: run bench/gpu-bundle.sh where it was built, carry the file"
  finish
fi
mkdir -p "$work/b"
tar -C "$work/b" -xzf "$bundle" || {
  row bundle FAIL 0 "cannot unpack $bundle"
  finish
}
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
  date -u
  echo "runtime: $runtime"
  echo "cpus: $(nproc)"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=index,name,memory.total,driver_version,compute_cap,pci.bus_id --format=csv
  local nvcc sanitizer
  nvcc="$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)"
  sanitizer="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)"
  [ -n "$nvcc" ] && "$nvcc" --version | tail -n 2
  echo "compute-sanitizer: ${sanitizer:-not found}"
  echo "glibc: $have (the bundle needs $need; $([ "$direct" = 1 ] && echo 'run directly' || echo 'run through the packed loader; the daemon step is skipped'))"
  echo "detail: ${sandbox:+$sandbox, }$(nproc) cpus, glibc $have, nvcc $([ -n "$nvcc" ] && "$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p' || echo none), sanitizer $([ -n "$sanitizer" ] && echo yes || echo no)"
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
      echo "$(basename "$b"):"
      cat "$work/ldd.txt"
      bad=1
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
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader |
    head -n 1 >"$work/device.txt"
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
    sid="$(u32 "$f" "$off")"
    lo="$(u32 "$f" $((off + 4)))"
    hi="$(u32 "$f" $((off + 8)))"
    off=$((off + 12))
    [ "$sid" = "$id" ] && {
      echo "$off"
      return 0
    }
    off=$((off + lo + hi * 4294967296))
  done
  return 1
}
# fixture LG DIR [CURVE]: mulchain 2^LG (bn128, or CURVE) with its key and info.txt
fixture() {
  local k="$1" d="$2" curve="${3:-bn128}" h n8q n8r p nc
  mkdir -p "$d"
  x mulchain_gen --curve "$curve" "$k" "$d" || return 1
  x cuzk test-setup -q "$d/circuit.r1cs" "$d/circuit_final.zkey" || return 1
  h="$(section "$d/circuit_final.zkey" 2)" || return 1
  n8q="$(u32 "$d/circuit_final.zkey" "$h")"
  n8r="$(u32 "$d/circuit_final.zkey" $((h + 4 + n8q)))"
  p=$((h + 8 + n8q + n8r))
  h="$(section "$d/circuit.r1cs" 1)" || return 1
  nc="$(u32 "$d/circuit.r1cs" $((h + $(u32 "$d/circuit.r1cs" "$h") + 28)))"
  echo "constraints=$nc nPublic=$(u32 "$d/circuit_final.zkey" $((p + 4))) nVars=$(u32 "$d/circuit_final.zkey" "$p") domain=$(u32 "$d/circuit_final.zkey" $((p + 8))) setup=test-setup-INSECURE circuit=mulchain_gen curve=$curve" >"$d/info.txt"
  cat "$d/info.txt"
  echo "detail: $curve 2^$k: $(cut -d' ' -f1-4 "$d/info.txt")"
}
FX="$work/fx"   # the main fixture, 2^lg
FXB="$work/fxb" # the backlog's large partitions and the last proof wall: 2^22 (dry: 2^(lg+2))
FXL="$work/fxl" # BLS12-381: 2^16 (dry: 2^lg)
if [ $dry = 1 ]; then lg_big=$((lg + 2)) lg_bls=$lg; else lg_big=22 lg_bls=16; fi
[ "$lg_big" -le 24 ] || lg_big=24
step fixture 150 cpu fixture "$lg" "$FX"
Z="$FX/circuit_final.zkey"
W="$FX/witness.wtns"
step fixture-bls 60 cpu fixture "$lg_bls" "$FXL" bls12381
# cpu_proof DIR NAME: the CPU backend's proof of DIR's fixture into $logs/NAME.{proof,public}.json
cpu_proof() {
  x cuzk-gpuworker prove --backend cpu --insecure-seed "$SEED" "$1/circuit_final.zkey" "$1/witness.wtns" \
    "$logs/$2.proof.json" "$logs/$2.public.json" || return 1
  echo "detail: CPU backend proof of $(sed 's/.*curve=//' "$1/info.txt") 2^$(sed -n 's/.*domain=\([0-9]*\).*/\1/p' "$1/info.txt" | awk '{ print int(log($1) / log(2) + 0.5) }') written (pairing-verified)"
}
for pair in "cpu-proof $FX cpu" "cpu-proof-bls $FXL cpu-bls"; do
  # shellcheck disable=SC2086 # "A B": the pair split into its two words
  set -- $pair
  if [ -f "$2/info.txt" ]; then step "$1" 120 cpu cpu_proof "$2" "$3"; else row "$1" FAIL 0 "no fixture"; fi
done

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
# proof_step DIR NAME REPEAT: the CUDA backend's proof, byte-identical to cpu_proof's
proof_step() {
  x cuzk-gpuworker prove --backend cuda:0 --repeat "$3" --insecure-seed "$SEED" "$1/circuit_final.zkey" \
    "$1/witness.wtns" "$logs/$2.proof.json" "$logs/$2.public.json" | tee "$work/$2-prove.txt" || return 1
  cmp "$logs/cpu${2#cuda}.proof.json" "$logs/$2.proof.json" && cmp "$logs/cpu${2#cuda}.public.json" "$logs/$2.public.json" ||
    {
      echo "the CUDA backend's proof differs from the CPU backend's for the same seed"
      return 1
    }
  echo "detail: $(sed 's/.*curve=//' "$1/info.txt"): byte-identical to the CPU backend's; $(tail -n 1 "$work/$2-prove.txt" | cut -c1-110)"
}
step proof 90 gpu proof_step "$FX" cuda 5
step proof-bls 60 gpu proof_step "$FXL" cuda-bls 3
# the backlog's large fixture, made while nothing else runs on the CPUs
step fixture-big 180 cpu fixture "$lg_big" "$FXB"

# ---- 4. the daemon under a backlog -----------------------------------------------------
# info FIELD DIR: a number from DIR/info.txt
info() { sed -n "s/.*$1=\([0-9]*\).*/\1/p" "$2/info.txt"; }
daemon_step() {
  local dev dom nv buf_mb run="$work/run" i rc=0 n_ok n_want wall t0 t1 job big=0 smi_pid="" ring_pid="" big_pid="" z0 busy occ
  [ "$direct" = 1 ] || {
    echo "detail: glibc $have < $need: cuzkd execs its stages directly"
    return 77
  }
  if [ "$have_gpu" = 1 ]; then dev=cuda:0; else dev=cpu:1; fi
  [ -f "$FXB/info.txt" ] && big=4
  # buffers for the largest partition
  if [ "$big" -gt 0 ]; then dom="$(info domain "$FXB")" nv="$(info nVars "$FXB")"; else dom="$(info domain "$FX")" nv="$(info nVars "$FX")"; fi
  buf_mb=$((((3 * dom + nv) * 32 + (1 << 20) - 1) >> 20))
  mkdir -p "$work/in" "$work/inb" "$work/out" "$work/outb"
  for i in $(seq 1 "$PARTS"); do ln "$W" "$work/in/w$i.wtns" 2>/dev/null || cp "$W" "$work/in/w$i.wtns"; done
  for i in $(seq 1 "$big"); do ln "$FXB/witness.wtns" "$work/inb/w$i.wtns" 2>/dev/null || cp "$FXB/witness.wtns" "$work/inb/w$i.wtns"; done
  export LD_LIBRARY_PATH="$B/lib"
  "$B/bin/cuzkd" --instance "$inst" --run-dir "$run" --state-dir "$work/state" --devices "$dev" --buffers 8 \
    --buffer-mb "$buf_mb" --keep-finished 600 --foreground >"$logs/cuzkd.log" 2>&1 &
  echo $! >"$work/daemon.pid" # cleanup stops it if this step is cut
  for _ in $(seq 1 100); do
    [ -S "$run/$inst.sock" ] && break
    sleep 0.1
  done
  [ -S "$run/$inst.sock" ] || {
    tail -n 20 "$logs/cuzkd.log"
    echo "detail: cuzkd did not start"
    return 1
  }
  cz() { "$B/bin/cuzk" --instance "$inst" --run-dir "$run" "$@"; }
  # one partition of each size first: the context and the circuit uploads are not in the backlog
  cz prove --zkey "$Z" --out "$work/out" --wait "$work/in/w1.wtns" >/dev/null || {
    echo "detail: the warm-up job failed"
    return 1
  }
  if [ "$big" -gt 0 ]; then
    cz prove --zkey "$FXB/circuit_final.zkey" --out "$work/outb" --wait "$work/inb/w1.wtns" >/dev/null ||
      {
        echo "detail: the warm-up job of the large fixture failed"
        return 1
      }
  fi
  rm -f "$work/out"/* "$work/outb"/*
  # NVML through nvidia-smi every 100 ms, and the worker ring's depth, over the window
  if [ "$have_gpu" = 1 ] && command -v nvidia-smi >/dev/null; then
    nvidia-smi -i 0 --query-gpu=timestamp,utilization.gpu,memory.used,power.draw,clocks.sm \
      --format=csv,noheader,nounits -lms 100 >"$work/nvml.csv" 2>/dev/null &
    smi_pid=$!
  fi
  while :; do
    cz metrics 2>/dev/null | sed -n 's/^cuzk_gauge{stage="supervisor",index="0",name="ring_worker0"} //p'
    sleep 0.1
  done >"$work/ring.txt" &
  ring_pid=$!
  "$B/bin/gpu_bench" snap "$inst" "$work/before.snap" || return 1
  t0=$(date +%s.%N)
  if [ "$big" -gt 0 ]; then
    cz prove --zkey "$FXB/circuit_final.zkey" --out "$work/outb" --wait "$work/inb"/w*.wtns >"$work/jobb.txt" 2>&1 &
    big_pid=$!
  fi
  cz prove --zkey "$Z" --out "$work/out" --wait "$work/in"/w*.wtns | tee "$work/job.txt" || rc=$?
  if [ -n "$big_pid" ]; then
    wait "$big_pid" || rc=$?
    cat "$work/jobb.txt"
  fi
  t1=$(date +%s.%N)
  "$B/bin/gpu_bench" snap "$inst" "$work/after.snap" || rc=1
  kill "$ring_pid" 2>/dev/null
  [ -n "$smi_pid" ] && kill "$smi_pid" 2>/dev/null
  wait "$ring_pid" ${smi_pid:+"$smi_pid"} 2>/dev/null
  job="$(sed -n 's/^job \([0-9][0-9]*\)[: ].*/\1/p' "$work/job.txt" | head -n 1)"
  [ -n "$job" ] && cz trace --job "$job" -o "$work/trace.json" >/dev/null 2>&1
  n_ok="$(find "$work/out" "$work/outb" -name '*.proof.json' | wc -l)"
  n_want=$((PARTS + big))
  wall="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')"
  {
    echo "backlog on $dev: $PARTS partitions of 2^$lg$([ "$big" -gt 0 ] && echo " and $big of 2^$lg_big"), $n_ok/$n_want proofs in $wall s"
    "$B/bin/gpu_bench" report "$work/before.snap" "$work/after.snap"
    awk '{ n++; s += $1; if ($1 > m) m = $1 } END { if (n) printf "ring_worker0 depth over %d samples: mean %.1f, max %d\n", n, s / n, m; else print "ring_worker0 depth: no samples" }' "$work/ring.txt"
    if [ -s "$work/nvml.csv" ]; then
      awk -F', *' '{ n++; if ($2 + 0 == 0) z++; if ($3 + 0 > m) m = $3 + 0; u += $2 } END {
        printf "nvml: %d samples (100 ms), %.1f%% at 0%% utilization, mean %.1f%%, memory high-water %d MiB\n", n, 100 * z / n, u / n, m }' "$work/nvml.csv"
    else
      echo "nvml: no samples ($([ "$have_gpu" = 1 ] && echo 'nvidia-smi missing' || echo 'no device: the dry run'))"
    fi
  } | tee "$work/backlog.txt"
  cz shutdown >/dev/null 2>&1 || true
  for _ in $(seq 1 100); do
    kill -0 "$(cat "$work/daemon.pid")" 2>/dev/null || break
    sleep 0.1
  done
  # every stage logs "exited with code 0" at a clean shutdown: only another code is a death
  if grep -E "device fault|exited with code [1-9]|killed by signal" "$logs/cuzkd.log"; then
    echo "detail: a stage died"
    return 1
  fi
  z0="$(sed -n 's/.* \([0-9.]*\)% at 0% utilization.*/\1/p' "$work/backlog.txt")"
  busy="$(sed -n 's/^worker 0: .*gpu_busy ([^)]*) \([0-9.]*\)%.*/\1/p' "$work/backlog.txt")"
  occ="$(sed -n 's/^worker 0: .*in-flight occupancy ([^)]*) \([0-9.]*\)%.*/\1/p' "$work/backlog.txt")"
  echo "detail: $n_ok/$n_want proofs in $wall s on $dev; gpu_busy ${busy:-?}% [goal >= 95%], in-flight ${occ:-?}%${z0:+, NVML 0%: $z0% of samples}; gaps $(sed -n 's/^worker 0: gaps[^:]*: \(.*\)/\1/p' "$work/backlog.txt" | cut -d, -f1-3)"
  [ "$rc" = 0 ] && [ "$n_ok" = "$n_want" ]
}
step daemon 150 daemon daemon_step
# ---- 4b. the device's own time line: the CUPTI recorder ---------------------------------
# A short backlog (CUPTI_PARTS, 8) through a cuzkd whose gpuworker loads libcuzk_cupti.so
# (docs/cuda.md): its kernels and copies merged into the job's trace (trace-cupti.json).
# After the daemon step, so that recording never touches its figures.
cupti_step() {
  local run="$work/run-cupti" n="${CUPTI_PARTS:-8}" job i dev_ev kernels
  [ "$direct" = 1 ] || {
    echo "detail: glibc $have < $need: cuzkd execs its stages directly"
    return 77
  }
  [ -f "$B/lib/libcuzk_cupti.so" ] || {
    echo "detail: no libcuzk_cupti.so in the bundle (a build without nvcc)"
    return 77
  }
  mkdir -p "$work/cin" "$work/cout"
  for i in $(seq 1 "$n"); do ln "$W" "$work/cin/w$i.wtns" 2>/dev/null || cp "$W" "$work/cin/w$i.wtns"; done
  rm -f "$work"/cupti.*.txt
  LD_LIBRARY_PATH="$B/lib" CUDA_INJECTION64_PATH="$B/lib/libcuzk_cupti.so" CUZK_CUPTI_OUT="$work/cupti.%p.txt" \
    "$B/bin/cuzkd" --instance "${inst}c" --run-dir "$run" --state-dir "$work/state-cupti" --devices cuda:0 \
    --buffers 4 --keep-finished 600 --foreground >"$logs/cuzkd-cupti.log" 2>&1 &
  echo $! >"$work/daemon.pid" # cleanup stops it if this step is cut
  for _ in $(seq 1 100); do
    [ -S "$run/${inst}c.sock" ] && break
    sleep 0.1
  done
  cz() { LD_LIBRARY_PATH="$B/lib" "$B/bin/cuzk" --instance "${inst}c" --run-dir "$run" "$@"; }
  cz prove --zkey "$Z" --out "$work/cout" --wait "$work/cin"/w*.wtns | tee "$work/cjob.txt" || return 1
  job="$(sed -n 's/^job \([0-9][0-9]*\)[: ].*/\1/p' "$work/cjob.txt" | head -n 1)"
  cz trace --job "$job" -o "$work/trace-job.json" || return 1
  # the recorder flushes at the gpuworker's exit: shut down first
  cz shutdown >/dev/null 2>&1 || true
  for _ in $(seq 1 100); do
    kill -0 "$(cat "$work/daemon.pid")" 2>/dev/null || break
    sleep 0.1
  done
  grep "cuzk-cupti" "$logs/cuzkd-cupti.log" || true # the recorder's own lines: why it stopped
  cat "$work"/cupti.*.txt >"$work/cupti.txt" 2>/dev/null || true
  LD_LIBRARY_PATH="$B/lib" "$B/bin/cuzk" trace --in "$work/trace-job.json" --cupti "$work/cupti.txt" \
    -o "$work/trace-cupti.json" || return 1
  dev_ev="$(grep -o '"cupti_events":[0-9]*' "$work/trace-cupti.json" | cut -d: -f2)"
  kernels="$(grep -c '^kernel ' "$work/cupti.txt" || true)"
  echo "detail: $n partitions of 2^$lg; $kernels kernels recorded, ${dev_ev:-0} device events in the job's trace"
  [ "${dev_ev:-0}" -gt 0 ]
}
step cupti 60 gpu cupti_step

# ---- 5. kernel times -------------------------------------------------------------------
msm_step() {
  x gpu_bench msm --reps 3 20 22 24 || return $?
  echo "detail: $(grep '^msm' "$logs/msm.log" | sed -E 's/^msm (G[12]) (2\^[0-9]+): ([0-9.]+) ms kernels.*; ([0-9.]+) ms with the H2D copy.*/\1 \2 \3 ms (with H2D \4)/' | tr '\n' ';')"
}
step msm 150 gpu msm_step
ntt_step() {
  x gpu_bench ntt --reps 3 --coset 20 24 || return $?
  echo "detail: $(grep '^ntt' "$logs/ntt.log" | sed 's/ (best of.*//' | tr '\n' ';')"
}
step ntt 60 gpu ntt_step
h2d_step() {
  x gpu_bench h2d --reps 3 256 || return $?
  echo "detail: $(grep '^h2d' "$logs/h2d.log" | tr '\n' ';')"
}
step h2d 30 gpu h2d_step
goals() {
  local g1 ntt
  g1="$(sed -n 's/^msm G1 2^24: \([0-9.]*\) ms kernels.*/\1/p' "$logs/msm.log" 2>/dev/null)"
  ntt="$(sed -n 's/^ntt Fr 2^24: \([0-9.]*\) ms kernels.*/\1/p' "$logs/ntt.log" 2>/dev/null)"
  [ -n "$g1" ] && row goal-msm "$(awk -v v="$g1" 'BEGIN { print (v <= 50) ? "met" : "MISS" }')" 0 "BN254 G1 MSM 2^24 $g1 ms (goal <= 50 ms, bases resident)"
  [ -n "$ntt" ] && row goal-ntt "$(awk -v v="$ntt" 'BEGIN { print (v <= 5) ? "met" : "MISS" }')" 0 "NTT 2^24 $ntt ms (goal <= 5 ms)"
  return 0
}
goals
proof22_step() {
  [ -f "$FXB/info.txt" ] || {
    echo "detail: no 2^$lg_big fixture (fixture-big)"
    return 1
  }
  x cuzk-gpuworker prove --backend cuda:0 --repeat 3 --insecure-seed "$SEED" "$FXB/circuit_final.zkey" \
    "$FXB/witness.wtns" "$work/p22.json" "$work/p22.public.json" | tee "$work/p22.txt" || return 1
  echo "detail: 2^$lg_big: $(tail -n 1 "$work/p22.txt" | cut -c1-140)"
}
step proof-22 60 gpu proof22_step

# ---- 6. sanitizers, last -------------------------------------------------------------
sanitizer() {
  local tool="$1" cs
  [ -z "$sandbox" ] || {
    echo "detail: $sandbox: compute-sanitizer cannot attach"
    return 77
  }
  cs="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)"
  [ -n "$cs" ] || {
    echo "SKIP: compute-sanitizer not found"
    echo "detail: compute-sanitizer not found"
    return 77
  }
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
step memcheck 60 gpu sanitizer memcheck
step racecheck 60 gpu sanitizer racecheck
finish
