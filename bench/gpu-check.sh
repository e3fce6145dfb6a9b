#!/usr/bin/env bash
# bench/gpu-check.sh — the CUDA backend on a machine with a GPU (issue 7), in one go:
#   1. environment: GPU, driver, toolkit, libraries (nothing is installed: no apt, no
#      npm; the build's pkg-config libraries must already be there);
#   2. build: make CUDA=1 all gpu-tests (static CUDA runtime; CUDA_ARCHS defaults to
#      the GPU's own compute capability to keep nvcc short; ldd of the binaries shows
#      no libcudart.so, and libcuda.so.1 is the driver's);
#   3. the GPU tests (build/tests-gpu/*: MSM and NTT against the CPU on random inputs,
#      full proofs against the CPU backend); exit 77 (no device seen) is a failure here;
#   4. figures: BN254 G1 and G2 MSM time and ns/point at 2^20, 2^22, 2^24 (2^26 when
#      the device memory allows), Fr NTT at 2^20 and 2^24 (build/bench-gpu/gpu_bench);
#   5. a full proof of the largest fixture by the CUDA backend and by the CPU backend
#      with the same --insecure-seed: the two proof.json (and public.json) must be
#      byte-identical, and each is pairing-verified before it is written
#      (cuzk-gpuworker prove); no snarkjs needed;
#   6. a pipeline run through cuzkd --devices cuda:0: PIPE_PARTS (32, >= 16)
#      partitions of that fixture in one job; the worker's device-busy share and its
#      gap percentiles from the stats page (gpu_bench snap/report), proofs checked with
#      `cuzk verify`.
# Targets (issue 7, H200): G1 MSM 2^24 <= 50 ms, NTT 2^24 <= 5 ms, device busy >= 95%
# under the backlog; a missed target is reported as MISSED (not a failure); any
# failing step makes the script exit 1 with the list of failures at the end.
#
# Fixtures: the device machine cannot run npm, so they must already be on disk:
# FIXTURE (a directory with circuit_final.zkey and witness.wtns; default: the largest
# tests/fixtures/cache/bn128/mulchain-* present). Output: everything printed also goes
# to $OUT/gpu-check.txt when OUT is set, with the cuzkd log and the proofs.
# Budget: under 8 minutes on a 16-core machine; each step has its own timeout.
# Environment: BUILD (build), JOBS (nproc), CUDA_ARCHS, PIPE_PARTS (32), FIXTURE,
#   SKIP_BUILD=1 (use the existing build).
set -uo pipefail
# shellcheck source=../tests/fixtures/env.sh
. "$(dirname "${BASH_SOURCE[0]}")/../tests/fixtures/env.sh" # ROOT, BUILD (absolute)
cd "$ROOT" || exit 1
JOBS="${JOBS:-$(nproc)}"
PARTS="${PIPE_PARTS:-32}"
OUT="${OUT:-}"
SEED=20261202
t_start=$SECONDS
tmp="$(mktemp -d)"
inst="gpuchk$$"
daemon_pid=""
failures=()
summary=()

if [ -n "$OUT" ]; then
  mkdir -p "$OUT"
  exec > >(tee "$OUT/gpu-check.txt") 2>&1
fi
cleanup() {
  if [ -n "$daemon_pid" ] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill -TERM "$daemon_pid" 2>/dev/null; sleep 2; kill -KILL "$daemon_pid" 2>/dev/null || true
  fi
  rm -f /dev/shm/cuzk-"$inst".* 2>/dev/null || true
  if [ -n "$OUT" ]; then cp "$tmp"/*.log "$tmp"/*.json "$OUT"/ 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
hdr() { echo; echo "== [$((SECONDS - t_start)) s] $*"; }
bad() { echo "FAIL: $*"; failures+=("$*"); }
finish() {
  hdr "summary"
  printf '%s\n' "${summary[@]}"
  echo "total time: $((SECONDS - t_start)) s"
  if [ ${#failures[@]} -gt 0 ]; then
    echo "FAILED (${#failures[@]}):"; printf '  - %s\n' "${failures[@]}"; exit 1
  fi
  echo "gpu-check: all steps passed"; exit 0
}

# ---- 1. environment ----------------------------------------------------------
hdr "environment"
date -u; uname -r; echo "cpus: $(nproc)"; free -g | sed -n 2p
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=index,name,memory.total,driver_version,compute_cap,pci.bus_id --format=csv \
    || bad "nvidia-smi failed"
else
  echo "nvidia-smi: not found (the driver may still work)"
fi
NVCC="${NVCC:-$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)}"
[ -n "$NVCC" ] && "$NVCC" --version | tail -n 2 || { bad "no nvcc: cannot build the CUDA backend"; finish; }
ldconfig -p 2>/dev/null | grep -m1 'libcuda.so.1 ' || echo "warning: libcuda.so.1 not in the ld cache (driver missing?)"
missing=""
for p in liburing numa hwloc jansson ncursesw; do pkg-config --exists "$p" 2>/dev/null || missing="$missing $p"; done
[ -z "$missing" ] || { bad "build libraries missing (pkg-config):$missing — cannot be installed here"; finish; }
if [ -z "${CUDA_ARCHS:-}" ] && command -v nvidia-smi >/dev/null; then
  CUDA_ARCHS="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d '. ')"
fi
echo "CUDA_ARCHS=${CUDA_ARCHS:-(Makefile default)}"

# ---- 2. build ----------------------------------------------------------------
hdr "build: make -j$JOBS CUDA=1 all gpu-tests"
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  t0=$SECONDS
  archs=(); [ -n "${CUDA_ARCHS:-}" ] && archs=(CUDA_ARCHS="$CUDA_ARCHS")
  if timeout 420 make -j"$JOBS" BUILD="$BUILD" CUDA=1 NVCC="$NVCC" "${archs[@]}" all gpu-tests >"$tmp/build.log" 2>&1; then
    echo "built in $((SECONDS - t0)) s"
    summary+=("build (CUDA=1): $((SECONDS - t0)) s on $JOBS cores")
  else
    tail -n 40 "$tmp/build.log"; bad "build failed (log: build.log)"; finish
  fi
fi
out="$("$BUILD/bin/cuzk-gpuworker" --instance "nosuch$$" --backend cuda 2>&1)"
if grep -q "not built" <<<"$out"; then bad "the CUDA backend is not in this build: $out"; finish; fi
for b in cuzk-gpuworker cuzkd; do
  echo "ldd $b:"; ldd "$BUILD/bin/$b" | sed 's/ (0x.*//; s/^/  /'
done
if ldd "$BUILD/bin/cuzk-gpuworker" | grep -q libcudart; then
  bad "cuzk-gpuworker links libcudart dynamically (expected the static runtime)"
fi

# ---- 3. GPU tests --------------------------------------------------------------
FIXTURE="${FIXTURE:-}"
if [ -z "$FIXTURE" ]; then
  for k in 20 18 16 14 13 12 10; do
    d="$ROOT/tests/fixtures/cache/bn128/mulchain-$k"
    [ -f "$d/circuit_final.zkey" ] && [ -f "$d/witness.wtns" ] && { FIXTURE="$d"; break; }
  done
fi
hdr "GPU tests (build/tests-gpu)"
shopt -s nullglob
tests=("$BUILD"/tests-gpu/*)
[ ${#tests[@]} -gt 0 ] || bad "no GPU test programs were built (tests/gpu/ empty?)"
for t in "${tests[@]}"; do
  [ -x "$t" ] || continue
  args=()
  if [ "$(basename "$t")" = gpu_test ] && [ -n "$FIXTURE" ]; then
    args=(--zkey "$FIXTURE/circuit_final.zkey" --wtns "$FIXTURE/witness.wtns")
  fi
  echo "-- $(basename "$t") ${args[*]}"
  rc=0; timeout 240 "$t" "${args[@]}" >"$tmp/$(basename "$t").log" 2>&1 || rc=$?
  tail -n 25 "$tmp/$(basename "$t").log"
  case $rc in
    0) summary+=("$(basename "$t"): passed") ;;
    77) bad "$(basename "$t"): SKIP (77): it saw no CUDA device on a GPU machine" ;;
    124) bad "$(basename "$t"): timed out (240 s)" ;;
    *) bad "$(basename "$t"): exit $rc" ;;
  esac
done

# ---- 4. MSM and NTT figures ------------------------------------------------------
hdr "MSM (BN254 G1 and G2) and NTT (Fr) on the device"
rc=0; timeout 200 "$BUILD/bench-gpu/gpu_bench" msm 20 22 24 26 | tee "$tmp/msm.log" || rc=$?
[ $rc = 0 ] || bad "gpu_bench msm: exit $rc"
rc=0; timeout 60 "$BUILD/bench-gpu/gpu_bench" ntt 20 24 | tee "$tmp/ntt.log" || rc=$?
[ $rc = 0 ] || bad "gpu_bench ntt: exit $rc"
g1_24="$(sed -n 's/^msm G1 2^24: \([0-9.]*\) ms kernels.*/\1/p' "$tmp/msm.log")"
ntt_24="$(sed -n 's/^ntt Fr 2^24: \([0-9.]*\) ms kernels.*/\1/p' "$tmp/ntt.log")"
target() {  # name, value, limit
  if [ -z "$2" ]; then summary+=("$1: no figure"); bad "$1: no figure"; return; fi
  summary+=("$1: $2 ms [target <= $3 ms: $(awk -v v="$2" -v l="$3" 'BEGIN{print (v <= l) ? "met" : "MISSED"}')]")
}
target "G1 MSM 2^24 (kernels)" "$g1_24" 50
target "NTT 2^24 (kernels)" "$ntt_24" 5
grep '^msm\|^ntt' "$tmp/msm.log" "$tmp/ntt.log" | sed 's/^[^:]*://' | while read -r l; do echo "  $l"; done

# ---- 5. full proof: CUDA vs CPU, same seed ------------------------------------------
if [ -z "$FIXTURE" ]; then
  bad "no fixture (tests/fixtures/cache/bn128/mulchain-*/ with circuit_final.zkey and witness.wtns; or FIXTURE=DIR)"
  finish
fi
Z="$FIXTURE/circuit_final.zkey"; W="$FIXTURE/witness.wtns"
hdr "full proof of $(basename "$FIXTURE"): CUDA backend vs CPU backend, --insecure-seed $SEED"
rc=0; timeout 120 "$BUILD/bin/cuzk-gpuworker" prove --backend cpu --insecure-seed "$SEED" "$Z" "$W" \
  "$tmp/cpu.proof.json" "$tmp/cpu.public.json" || rc=$?
[ $rc = 0 ] || bad "CPU backend proof: exit $rc"
rc=0; timeout 120 "$BUILD/bin/cuzk-gpuworker" prove --backend cuda:0 --repeat 5 --insecure-seed "$SEED" "$Z" "$W" \
  "$tmp/cuda.proof.json" "$tmp/cuda.public.json" | tee "$tmp/cuda-prove.log" || rc=$?
[ $rc = 0 ] || bad "CUDA backend proof: exit $rc"
if [ -f "$tmp/cpu.proof.json" ] && [ -f "$tmp/cuda.proof.json" ]; then
  if cmp -s "$tmp/cpu.proof.json" "$tmp/cuda.proof.json" && cmp -s "$tmp/cpu.public.json" "$tmp/cuda.public.json"; then
    echo "ok: the CUDA and CPU backends' proofs are byte-identical (and pairing-verified)"
    summary+=("full proof $(basename "$FIXTURE"): CUDA == CPU; $(sed -n 's/.*: prove \([0-9.]* ms\) (best of \([0-9]*\).*device \([0-9.]* ms\).*/\1 (best of \2, device \3)/p' "$tmp/cuda-prove.log")")
  else
    diff "$tmp/cpu.proof.json" "$tmp/cuda.proof.json" | head -n 20
    bad "the CUDA backend's proof differs from the CPU backend's for the same seed"
  fi
fi
# Other curves' fixtures, when cached (the kernels take BLS12-381 too).
for d in "$ROOT"/tests/fixtures/cache/bls12381/mulchain-13 "$ROOT"/tests/fixtures/cache/bn128/poseidon; do
  [ -f "$d/circuit_final.zkey" ] && [ -f "$d/witness.wtns" ] || continue
  n="$(basename "$(dirname "$d")")-$(basename "$d")"
  r1=0; r2=0
  timeout 120 "$BUILD/bin/cuzk-gpuworker" prove --backend cpu --insecure-seed "$SEED" "$d/circuit_final.zkey" \
    "$d/witness.wtns" "$tmp/$n.cpu.proof.json" "$tmp/$n.cpu.public.json" >/dev/null || r1=$?
  timeout 120 "$BUILD/bin/cuzk-gpuworker" prove --backend cuda:0 --insecure-seed "$SEED" "$d/circuit_final.zkey" \
    "$d/witness.wtns" "$tmp/$n.cuda.proof.json" "$tmp/$n.cuda.public.json" || r2=$?
  if [ $r1 = 0 ] && [ $r2 = 0 ] && cmp -s "$tmp/$n.cpu.proof.json" "$tmp/$n.cuda.proof.json"; then
    summary+=("full proof $n: CUDA == CPU")
  else
    bad "full proof $n: cpu exit $r1, cuda exit $r2, or the proofs differ"
  fi
done

# ---- 6. pipeline through cuzkd --devices cuda:0 ----------------------------------------
hdr "pipeline: $PARTS partitions of $(basename "$FIXTURE") through cuzkd --devices cuda:0"
dom="$(sed -n 's/.*domain=\([0-9]*\).*/\1/p' "$FIXTURE/info.txt" 2>/dev/null)"
nv="$(sed -n 's/.*nVars=\([0-9]*\).*/\1/p' "$FIXTURE/info.txt" 2>/dev/null)"
buf_mb=$(( ( (3 * ${dom:-65536} + ${nv:-65536}) * 32 + (1 << 20) - 1) >> 20 ))
run="$tmp/run"
mkdir -p "$tmp/in" "$tmp/out"
# copies (or hard links), not symlinks: cuzk names each output after the resolved file
for i in $(seq 1 "$PARTS"); do ln "$W" "$tmp/in/w$i.wtns" 2>/dev/null || cp "$W" "$tmp/in/w$i.wtns"; done
"$BUILD/bin/cuzkd" --plan --devices cuda:0 2>&1 | sed 's/^/  plan: /'
"$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --state-dir "$tmp/state" --devices cuda:0 --buffers 8 \
  --buffer-mb "$buf_mb" --foreground >"$tmp/cuzkd.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 1 100); do [ -S "$run/$inst.sock" ] && break; sleep 0.1; done
cz() { "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" "$@"; }
if [ ! -S "$run/$inst.sock" ]; then
  tail -n 20 "$tmp/cuzkd.log"; bad "cuzkd did not start"; finish
fi
# Warm: one partition first, so the circuit upload and the CUDA context are not in
# the measured backlog (the cold figure is printed too).
t0=$(date +%s.%N)
cz prove --zkey "$Z" --out "$tmp/out" --wait "$tmp/in/w1.wtns" >"$tmp/warm.log" 2>&1 \
  || { cat "$tmp/warm.log"; tail -n 30 "$tmp/cuzkd.log"; bad "warm-up job failed"; finish; }
echo "cold first partition (context, circuit upload, zkey load): $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.3f", b-a}') s"
rm -f "$tmp/out"/*
sleep 0.3
"$BUILD/bench-gpu/gpu_bench" snap "$inst" "$tmp/before.snap" || bad "stats snapshot"
t0=$(date +%s.%N)
rc=0; timeout 300 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" prove --zkey "$Z" --out "$tmp/out" \
  --wait "$tmp/in"/w*.wtns >"$tmp/job.log" 2>&1 || rc=$?
t1=$(date +%s.%N)
"$BUILD/bench-gpu/gpu_bench" snap "$inst" "$tmp/after.snap" || bad "stats snapshot"
[ $rc = 0 ] || { cat "$tmp/job.log"; bad "the $PARTS-partition job failed (exit $rc)"; }
n_ok="$(ls "$tmp/out"/*.proof.json 2>/dev/null | wc -l)"
wall="$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}')"
echo "$n_ok of $PARTS proofs in $wall s ($(awk -v n="$n_ok" -v w="$wall" 'BEGIN{printf "%.1f", n/w}') partitions/s, submit to last proof written)"
[ "$n_ok" = "$PARTS" ] || bad "$n_ok of $PARTS proofs written"
vk="$FIXTURE/verification_key.json"
if [ -f "$vk" ]; then
  for i in 1 "$PARTS"; do
    "$BUILD/bin/cuzk" verify "$vk" "$tmp/out/w$i.public.json" "$tmp/out/w$i.proof.json" >/dev/null 2>&1 \
      || bad "cuzk verify rejects the pipeline's w$i.proof.json"
  done
fi
"$BUILD/bench-gpu/gpu_bench" report "$tmp/before.snap" "$tmp/after.snap" | tee "$tmp/report.log" \
  || bad "stats report"
busy="$(sed -n 's/.*device busy ([^)]*) \([0-9.]*\)%.*/\1/p' "$tmp/report.log" | head -n1)"
kern="$(sed -n 's/.*kernels alone ([^)]*) \([0-9.]*\)%.*/\1/p' "$tmp/report.log" | head -n1)"
gaps="$(sed -n 's/^worker 0: gaps[^:]*: \(.*\)/\1/p' "$tmp/report.log")"
summary+=("pipeline $PARTS x $(basename "$FIXTURE"): $wall s; device busy ${busy:-?}% (kernels ${kern:-?}%) [target >= 95%: $(awk -v v="${busy:-0}" 'BEGIN{print (v >= 95) ? "met" : "MISSED"}')]; gaps $gaps")
grep -i "device fault\|exited with code\|killed by signal" "$tmp/cuzkd.log" && bad "a stage died during the pipeline run (cuzkd.log)"
cz shutdown >/dev/null 2>&1 || true
for _ in $(seq 1 100); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
daemon_pid=""
finish
