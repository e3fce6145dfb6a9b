#!/usr/bin/env bash
# bench/gpu-check.sh's dry run (CUDA builds; no GPU needed): the script a GPU machine
# runs unattended, started here as it will be started there, with OUT set. Every build
# and fixture step runs (the bundle packed from this build, its libraries resolved from
# the bundle alone, mulchain fixtures of both curves made by mulchain_gen + cuzk
# test-setup, the CPU backend's proofs of them), the daemon step runs on --devices
# cpu:1 (the backlog, the stats snapshots and their report, a clean shutdown: the
# stages' "exited with code 0" is no death), and every GPU step SKIPs with the device
# probe's reason.
# The fixture is 2^12 (--lg 12), not the GPU run's 2^20: the key setup alone would take
# minutes on 2 cores, and the steps are the same. Checked: exit 0, at most 8 files under
# OUT with the summary table first, each GPU step a SKIP with a reason, the CPU proof
# accepted by snarkjs; then the same through the packed loader and libc (the fallback
# for a machine whose glibc is older than the bundle needs).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$ROOT/tests/fixtures/env.sh"
[ -x "$SNARKJS" ] || bash "$MAKE_FIXTURES" -q >/dev/null # snarkjs only: the fixture is made by the script
use_tmp
fail() {
  echo "FAIL: $*"
  [ -f "$tmp/out/summary.txt" ] && cat "$tmp/out/summary.txt"
  exit 1
}
if [ ! -x "$BUILD/tests-gpu/gpu_test" ] || [ ! -x "$BUILD/bench-gpu/gpu_bench" ]; then
  echo "SKIP: not a CUDA build (no $BUILD/tests-gpu/gpu_test): the GPU check packs the CUDA programs"
  exit 77
fi
# (lists read whole, never piped into grep -q: under pipefail the writer's SIGPIPE would
# turn a match into a failure)
if command -v nvidia-smi >/dev/null && grep -q '^GPU' <<<"$(nvidia-smi -L 2>/dev/null)"; then
  echo "SKIP: this machine has a GPU: bench/gpu-check.sh runs for real here"
  exit 77
fi
need_built bin/cuzk bin/cuzkd bin/cuzk-gpuworker bench/mulchain_gen
gpu_steps=(gpu-test closed proof proof-bls cupti msm ntt h2d proof-22 memcheck racecheck)

rc=0
# no --bundle: the dry run packs one from this build ($BUILD/gpu-bundle.tar.gz), its first step
OUT="$tmp/out" bash "$ROOT/bench/gpu-check.sh" --dry-run --lg 12 --work "$tmp/work" >"$tmp/run.log" 2>&1 || rc=$?
[ $rc = 0 ] || {
  tail -n 30 "$tmp/run.log"
  fail "gpu-check.sh --dry-run exited $rc"
}
n="$(find "$tmp/out" -type f | wc -l)"
[ "$n" -le 8 ] || fail "$n files under OUT (at most 8)"
[ "$(head -n 1 "$tmp/out/summary.txt" | cut -c1-9)" = "gpu-check" ] || fail "summary.txt does not start with its title"
grep -q '^| step ' "$tmp/out/summary.txt" || fail "no table in summary.txt"
for s in pack env libs fixture fixture-bls fixture-big cpu-proof cpu-proof-bls daemon; do
  grep -Eq "^\| $s +\| ok " "$tmp/out/summary.txt" || fail "step $s did not run ok"
done
for s in probe "${gpu_steps[@]}"; do
  line="$(grep -E "^\| $s +\|" "$tmp/out/summary.txt")" || fail "step $s is missing from the table"
  grep -Eq '\| SKIP \| +[0-9]+ \| .*(CUDA|driver|device).{10,}' <<<"$line" || fail "step $s is no SKIP with a reason: $line"
done
tar -tzf "$tmp/out/logs.tar.gz" >"$tmp/logs.list" || fail "logs.tar.gz cannot be read"
grep -q 'logs/fixture.log' "$tmp/logs.list" || fail "the step logs are not packed"
head -n 1 "$tmp/out/gpu-check.log" | grep -q '^gpu-check (dry run) on .*: runtime ' || fail "the log does not start with the runtime: $(head -n 1 "$tmp/out/gpu-check.log")"
# the order: correctness, then the daemon, then the times, the sanitizers last
order="$(grep -oE '^\| [a-z0-9-]+ ' "$tmp/out/summary.txt" | tr -d '| ' | tr '\n' ' ')"
grep -q 'proof-bls .*daemon cupti msm .*proof-22 memcheck racecheck' <<<"$order" || fail "step order: $order"
# the daemon step's report: the device's figures on the CPU backend
for f in backlog.txt trace.json cuzkd.log; do [ -s "$tmp/out/$f" ] || fail "no $f under OUT"; done
grep -Eq '^worker 0: 3[26] partitions .*gpu_busy \(.*\) [0-9.]+% of wall; in-flight occupancy \(host clock\) [0-9.]+%' \
  "$tmp/out/backlog.txt" || fail "backlog.txt has no gpu_busy line: $(cat "$tmp/out/backlog.txt")"
grep -q '^worker 0: gap histogram:' "$tmp/out/backlog.txt" || fail "backlog.txt has no gap histogram"
grep -q '^synth 0: busy ' "$tmp/out/backlog.txt" || fail "backlog.txt has no synth share"
grep -q '^ring_worker0 depth over [1-9]' "$tmp/out/backlog.txt" || fail "backlog.txt has no ring depth"
grep -q 'exited with code 0' "$tmp/out/cuzkd.log" || fail "cuzkd.log shows no clean exit (the case the step must accept)"
echo "ok: the daemon step ran on cpu:1: $(grep -E '^\| daemon ' "$tmp/out/summary.txt" | cut -d'|' -f5 | cut -c1-120)"
echo "ok: $n files under OUT; $(grep -c '| ok ' "$tmp/out/summary.txt") steps ran, $(grep -c '| SKIP ' "$tmp/out/summary.txt") skipped: $(grep -E '^\| gpu-test' "$tmp/out/summary.txt" | cut -d'|' -f5 | cut -c1-90)"

# the fixture's CPU proof, by snarkjs
fx="$tmp/work/fx"
"$SNARKJS" zkey export verificationkey "$fx/circuit_final.zkey" "$tmp/vk.json" >/dev/null
"$SNARKJS" groth16 verify "$tmp/vk.json" "$tmp/work/logs/cpu.public.json" "$tmp/work/logs/cpu.proof.json" \
  >"$tmp/verify.log" 2>&1 || true
grep -q OK "$tmp/verify.log" || fail "snarkjs rejects the dry run's CPU proof: $(cat "$tmp/verify.log")"
grep -q '^constraints=4093 nPublic=2 nVars=4096 domain=4096' "$fx/info.txt" || fail "info.txt: $(cat "$fx/info.txt")"
echo "ok: snarkjs verifies the CPU backend's proof of the fixture; $(cat "$fx/info.txt")"
# the BLS12-381 fixture's CPU proof and one of the daemon's, by snarkjs
"$SNARKJS" zkey export verificationkey "$tmp/work/fxl/circuit_final.zkey" "$tmp/vkl.json" >/dev/null
"$SNARKJS" groth16 verify "$tmp/vkl.json" "$tmp/work/logs/cpu-bls.public.json" "$tmp/work/logs/cpu-bls.proof.json" \
  >"$tmp/verify.log" 2>&1 || true
grep -q OK "$tmp/verify.log" || fail "snarkjs rejects the BLS12-381 CPU proof: $(cat "$tmp/verify.log")"
p1="$(find "$tmp/work/out" -name '*.proof.json' | head -n 1)"
[ -n "$p1" ] || fail "no proof of the daemon step kept"
"$SNARKJS" groth16 verify "$tmp/vk.json" "${p1%.proof.json}.public.json" "$p1" >"$tmp/verify.log" 2>&1 || true
grep -q OK "$tmp/verify.log" || fail "snarkjs rejects the daemon step's proof $p1: $(cat "$tmp/verify.log")"
echo "ok: snarkjs verifies the BLS12-381 CPU proof and a daemon proof of the backlog"

# the fallback: every program through the packed loader and libc
rm -rf "$tmp/out2"
rc=0
GPU_CHECK_LOADER=1 OUT="$tmp/out2" bash "$ROOT/bench/gpu-check.sh" --dry-run --lg 8 --bundle "$BUILD/gpu-bundle.tar.gz" \
  >"$tmp/run2.log" 2>&1 || rc=$?
[ $rc = 0 ] || {
  tail -n 30 "$tmp/run2.log"
  fail "the packed-loader dry run exited $rc"
}
for s in libs fixture cpu-proof; do
  grep -Eq "^\| $s +\| ok " "$tmp/out2/summary.txt" || fail "packed loader: step $s did not run ok"
done
echo "ok: the same steps run through the packed loader and libc"
