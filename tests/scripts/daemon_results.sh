#!/usr/bin/env bash
# Results kept in the job store, for a client that keeps no files (the HTTP API
# process): a submit by circuit name with "results":"store", its inputs passed as
# sealed memfds (as the API passes a request body), a tenant and an idempotency key;
# the job JSON's circuit, tenant, results, submitted_unix and per-part timings_ms; the
# proof request's answers (snarkjs verifies every proof it returns) and refusals
# (another job's kind, an index out of range, no such job, a failed partition:
# part_failed with its reason); an input.json body too; the same key and body
# again answers the first job, another body is idempotency_conflict. kill -9 of cuzkd
# right after a submit is accepted: the next cuzkd resumes it and serves its proofs,
# and serves the first job's from the store (status too), the idempotency keys hold
# across the restart. cuzkd stopped (SIGSTOP) while its stages finish a job, then
# killed: the next cuzkd finds the proofs in the job's spool dir, verifies and stores
# them. The CLI: `cuzk prove --circuit NAME --keep-in-store` and `cuzk proof JOB K
# --out DIR`; `cuzk status` shows the circuit and tenant. --store-keep-days: an old
# job's proofs and key leave the store with it. A cuzkd with --no-store refuses a
# store submit. Clean shutdowns.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
daemon_init res
bash "$MAKE_FIXTURES" -q >/dev/null

BN="$FIXTURES/bn128/mulchain-10"
VK="$BN/verification_key.json"
[ -f "$BN/circuit_final.zkey" ] || fail "fixture $BN missing"
mkdir -p "$tmp/z" "$tmp/in" "$tmp/p"
cp "$BN/circuit_final.zkey" "$tmp/z/bn.zkey"
for i in 1 2 3 4; do cp "$BN/witness.wtns" "$tmp/in/w$i.wtns"; done
conf="$tmp/cuzkd.conf"
printf 'buffer-mb = 16\n[circuit mul-bn]\nzkey = %s\nr1cs = %s\n' "$tmp/z/bn.zkey" "$BN/circuit.r1cs" >"$conf"
# The circuit's generator, for an input.json body, when this machine can build one.
gen=""
if command -v "${CXX:-g++}" >/dev/null 2>&1 && command -v "${NASM:-nasm}" >/dev/null 2>&1; then
  . "$ROOT/tests/lib/wgen.sh"
  gen="$(CUZK="$BUILD/bin/cuzk" wgen_for "$BN")" || fail "building the generator"
  echo "witness-gen = $gen" >>"$conf"
else
  echo "note: no g++/nasm: the input.json body over a memfd is left out"
fi

memfd() { python3 "$ROOT/tests/lib/send_memfd.py" "$run/$inst.sock" "$@"; }
sha() { printf '%s' "$1" | sha256sum | cut -c1-64; }
submit_line() { # key sha n: a store submit of mul-bn with n witnesses (memfds 0..n-1)
  local ws="" i
  for i in $(seq 1 "$3"); do ws="$ws${ws:+,}{\"fd\":$((i - 1)),\"path\":\"body-$i\",\"name\":\"p$i\"}"; done
  echo "{\"req\":\"submit\",\"circuit\":\"mul-bn\",\"fds\":$3,\"witnesses\":[$ws],\"results\":\"store\",\"tenant\":\"acme\",\"idempotency_key\":\"$1\",\"body_sha256\":\"$2\"}"
}
# proof JOB K: the proof request's answer, checked by snarkjs (files under $tmp/p)
proof_ok() {
  local r
  r="$(send "{\"req\":\"proof\",\"job\":$1,\"index\":$2}")"
  [ "$(js 'r.ok' "$r")" = true ] || fail "proof $1/$2: $r"
  js 'JSON.stringify(r.proof)' "$r" >"$tmp/p/$1-$2.proof.json"
  js 'JSON.stringify(r.public)' "$r" >"$tmp/p/$1-$2.public.json"
  "$SNARKJS" groth16 verify "$VK" "$tmp/p/$1-$2.public.json" "$tmp/p/$1-$2.proof.json" 2>&1 | grep -q OK ||
    fail "snarkjs rejects the stored proof $1/$2: $r"
  nproofs=$((nproofs + 1))
}
nproofs=0

daemon_start --config "$conf" --devices cpu:1 --keep-finished 3600

# ---- submit with sealed memfds, results in the store ---------------------------------
s1="$(sha body-one)"
r="$(memfd "$(submit_line k1 "$s1" 2)" "$tmp/in/w1.wtns" "$tmp/in/w2.wtns")"
[ "$(js 'r.ok && r.partitions' "$r")" = 2 ] || fail "store submit over memfds: $r"
j1="$(js 'r.job' "$r")"
cuzk wait "$j1" >/dev/null || fail "job $j1 did not finish"
st="$(cuzk --json status "$j1")"
[ "$(js '[r.job.circuit,r.job.tenant,r.job.results,r.job.state].join(" ")' "$st")" = "mul-bn acme store done" ] ||
  fail "job JSON: $st"
[ "$(js 'r.job.submitted_unix > 1600000000 && r.job.parts.every(p => ["queue_wait","witness","prove","finalize"].every(k => typeof p.timings_ms[k] == "number") && !p.proof)' "$st")" = true ] ||
  fail "submitted_unix / timings_ms: $st"
proof_ok "$j1" 0
proof_ok "$j1" 1
echo "ok: submit by name over sealed memfds with \"results\":\"store\": job $j1 done, its JSON has circuit, tenant, results, submitted_unix, timings_ms; 2 stored proofs verify"

if [ -n "$gen" ]; then
  r="$(memfd '{"req":"submit","circuit":"mul-bn","fds":1,"inputs":[{"fd":0,"path":"body"}],"results":"store","tenant":"acme"}' "$BN/input.json")"
  ji="$(js 'r.job' "$r")"
  [ "$(js 'r.ok' "$r")" = true ] || fail "input.json over a memfd: $r"
  cuzk wait "$ji" >/dev/null || fail "input.json job $ji: $(cuzk --json status "$ji")"
  proof_ok "$ji" 0
  echo "ok: an input.json body over a sealed memfd (job $ji): the circuit's generator computed the witness; the stored proof verifies"
  echo '{"nosuch": 1}' >"$tmp/in/bad.json"
  r="$(memfd '{"req":"submit","circuit":"mul-bn","fds":1,"inputs":[{"fd":0,"path":"bad"}],"results":"store"}' "$tmp/in/bad.json")"
  jf="$(js 'r.job' "$r")"
  cuzk wait "$jf" >/dev/null 2>&1 || true
  r="$(send "{\"req\":\"proof\",\"job\":$jf,\"index\":0}")"
  [ "$(js 'r.error' "$r")" = part_failed ] && grep -q nosuch <<<"$r" || fail "proof of a failed partition: $r"
  echo "ok: proof of a partition whose input.json names no signal of the circuit -> part_failed: $(js 'r.message' "$r" | cut -c1-100)"
fi

# ---- idempotency: the same key and body answer the first job; another body conflicts --
r="$(memfd "$(submit_line k1 "$s1" 2)" "$tmp/in/w1.wtns" "$tmp/in/w2.wtns")"
[ "$(js '[r.ok, r.job, r.partitions, r.existing].join(" ")' "$r")" = "true $j1 2 true" ] || fail "same key and body: $r"
r="$(memfd "$(submit_line k1 "$(sha body-two)" 1)" "$tmp/in/w3.wtns")"
[ "$(js 'r.error' "$r")" = idempotency_conflict ] || fail "same key, another body: $r"
echo "ok: idempotency key k1 again -> job $j1 (existing); with another body -> idempotency_conflict: $(js 'r.message' "$r")"

# ---- the proof request's refusals ----------------------------------------------------------
expect_error "proof of an index out of range" bad_request "{\"req\":\"proof\",\"job\":$j1,\"index\":2}"
expect_error "proof of no such job" no_such_job '{"req":"proof","job":999999,"index":0}'
expect_error "proof without an index" bad_request "{\"req\":\"proof\",\"job\":$j1}"
expect_error "results and out_dir both" bad_request \
  '{"req":"submit","circuit":"mul-bn","fds":1,"witnesses":[{"fd":0,"path":"a"}],"results":"store","out_dir":{"fd":0,"path":"o"}}'
expect_error "a tenant name with a slash" bad_request \
  '{"req":"submit","circuit":"mul-bn","fds":1,"witnesses":[{"fd":0,"path":"a"}],"results":"store","tenant":"a/b"}'
expect_error "a key without the body hash" bad_request \
  '{"req":"submit","circuit":"mul-bn","fds":1,"witnesses":[{"fd":0,"path":"a"}],"results":"store","idempotency_key":"x"}'
mkdir -p "$tmp/o"
out="$(cuzk --json prove --circuit mul-bn --out "$tmp/o" --wait "$tmp/in/w4.wtns")" || fail "prove to an out dir: $out"
jo="$(js 'r.job' "$(head -n1 <<<"$out")")"
expect_error "proof of a job with an out dir" bad_request "{\"req\":\"proof\",\"job\":$jo,\"index\":0}"

# ---- kill -9 of cuzkd right after a submit is accepted -------------------------------------
# The worker stopped first: the job is surely unfinished when cuzkd dies.
mapfile -t wpids < <(stage_pids gpuworker)
[ ${#wpids[@]} -gt 0 ] || fail "no gpuworker"
kill -STOP "${wpids[@]}"
s2="$(sha body-three)"
r="$(memfd "$(submit_line k2 "$s2" 4)" "$tmp/in/w1.wtns" "$tmp/in/w2.wtns" "$tmp/in/w3.wtns" "$tmp/in/w4.wtns")"
j2="$(js 'r.job' "$r")"
[ "$(js 'r.ok && r.partitions' "$r")" = 4 ] || fail "second store submit: $r"
[ "$(js 'r.job.done' "$(cuzk --json status "$j2")")" = 0 ] || fail "job $j2 has proofs with its worker stopped"
expect_error "proof of a partition not yet proved" not_ready "{\"req\":\"proof\",\"job\":$j2,\"index\":3}"
kill -KILL "$daemon_pid"
wait "$daemon_pid" 2>/dev/null || true
kill -KILL "${wpids[@]}"
kill -CONT "${wpids[@]}" 2>/dev/null || true
daemon_start --config "$conf" --devices cpu:1 --keep-finished 3600
cuzk wait "$j2" >/dev/null || fail "job $j2 did not finish after the restart: $(cuzk --json status "$j2")"
for k in 0 1 2 3; do proof_ok "$j2" "$k"; done
proof_ok "$j1" 0
proof_ok "$j1" 1
st="$(cuzk --json status "$j1")"
[ "$(js '[r.job.state, r.job.tenant, r.job.circuit, r.job.stored, r.job.parts.length].join(" ")' "$st")" = "done acme mul-bn true 2" ] ||
  fail "status of a job before the restart, from the store: $st"
r="$(memfd "$(submit_line k1 "$s1" 2)" "$tmp/in/w1.wtns" "$tmp/in/w2.wtns")"
[ "$(js '[r.job, r.existing].join(" ")' "$r")" = "$j1 true" ] || fail "key k1 after the restart: $r"
r="$(memfd "$(submit_line k2 "$s1" 2)" "$tmp/in/w1.wtns" "$tmp/in/w2.wtns")"
[ "$(js 'r.error' "$r")" = idempotency_conflict ] || fail "key k2 with another body after the restart: $r"
[ "$(dir_count "$tmp/state/$inst.results" '[!.]*')" -eq 0 ] || fail "spool dirs left: $(dir_list "$tmp/state/$inst.results" | tr '\n' ' ')"
grep -q "job $j2 resumed from the job store" "$tmp/cuzkd.log" || fail "job $j2 was not resumed"
echo "ok: kill -9 after job $j2 was accepted (its worker stopped): the next cuzkd resumed and finished it, 4 stored proofs verify; job $j1's proofs and status come from the store; keys k1, k2 hold across the restart; no spool dir left"

# ---- cuzkd stopped while its stages finish a job: the proofs are on disk, not in the
# store; kill -9; the next cuzkd finds them in the spool dir, verifies and stores them
# (the worker held until cuzkd is stopped: the job cannot end before that)
mapfile -t wpids < <(stage_pids gpuworker)
[ ${#wpids[@]} -gt 0 ] || fail "no gpuworker"
kill -STOP "${wpids[@]}"
s3="$(sha body-four)"
r="$(memfd "$(submit_line k3 "$s3" 2)" "$tmp/in/w1.wtns" "$tmp/in/w2.wtns")"
j4="$(js 'r.job' "$r")"
kill -STOP "$daemon_pid"
kill -CONT "${wpids[@]}"
for _ in $(seq 1 1200); do
  [ "$(dir_count "$tmp/state/$inst.results/$j4" '[!.]*.proof.json')" = 2 ] && break
  sleep 0.1
done
[ "$(dir_count "$tmp/state/$inst.results/$j4" '[!.]*.proof.json')" = 2 ] || fail "job $j4's proofs never reached its spool dir"
kill -KILL "$daemon_pid"
kill -CONT "$daemon_pid" 2>/dev/null || true
wait "$daemon_pid" 2>/dev/null || true
for p in $(pgrep -f -- "--instance $inst " || true); do kill -KILL "$p" 2>/dev/null || true; done
daemon_start --config "$conf" --devices cpu:1 --keep-finished 3600
grep -q "job $j4 resumed from the job store: 2 of 2 partition(s) done (2 found on disk and verified)" "$tmp/cuzkd.log" ||
  fail "job $j4 not resumed from its spooled proofs: $(grep "job $j4" "$tmp/cuzkd.log")"
proof_ok "$j4" 0
proof_ok "$j4" 1
echo "ok: cuzkd stopped while job $j4 finished, then killed: the next cuzkd found both proofs in its spool dir, verified and stored them"

# ---- the CLI: prove --keep-in-store, proof JOB K --out DIR, status ---------------------------
out="$(cuzk prove --circuit mul-bn --keep-in-store --wait "$tmp/in/w1.wtns" "$tmp/in/w2.wtns")" || fail "prove --keep-in-store: $out"
grep -q "circuit mul-bn" <<<"$out" && grep -q "in the job store" <<<"$out" || fail "prove --keep-in-store --wait printed: $out"
j3="$(sed -n 's/^job \([0-9]*\):.*/\1/p' <<<"$out" | head -n1)"
mkdir -p "$tmp/cli"
for k in 0 1; do
  cuzk proof "$j3" "$k" --out "$tmp/cli" >/dev/null || fail "cuzk proof $j3 $k"
  "$SNARKJS" groth16 verify "$VK" "$tmp/cli/$j3-$k.public.json" "$tmp/cli/$j3-$k.proof.json" 2>&1 | grep -q OK ||
    fail "snarkjs rejects cuzk proof $j3 $k"
  nproofs=$((nproofs + 1))
done
[ "$(js 'r.publicSignals.length' "$(cuzk proof "$j3" 0)")" = 2 ] || fail "cuzk proof without --out: $(cuzk proof "$j3" 0)"
rc=0
cuzk proof "$j3" 5 >/dev/null 2>&1 || rc=$?
[ "$rc" = 21 ] || fail "cuzk proof of an index out of range exited $rc, expected 21 (refused)"
cuzk status | grep "job $j3 " | grep -q "circuit mul-bn" || fail "cuzk status: $(cuzk status | tail -n 8)"
cuzk status "$j2" | head -n1 | grep -q "circuit mul-bn  tenant acme" || fail "cuzk status $j2: $(cuzk status "$j2")"
echo "ok: cuzk prove --circuit mul-bn --keep-in-store (job $j3), cuzk proof $j3 K --out DIR: snarkjs verifies; status shows tenant and circuit"

echo "ok: $nproofs stored proofs verified by snarkjs"
daemon_shutdown_clean

# ---- --store-keep-days: job j1 made 3 days old in the store leaves it at the next start,
# with its proofs and its key (a new submit with k1 is a new job)
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("UPDATE jobs SET finished = finished - 3*86400 WHERE id = ?", (int(sys.argv[2]),)); c.commit()' \
  "$tmp/state/$inst.db" "$j1"
daemon_start --config "$conf" --devices cpu:1 --store-keep-days 1
expect_error "proof of a job past --store-keep-days" no_such_job "{\"req\":\"proof\",\"job\":$j1,\"index\":0}"
proof_ok "$j2" 0
r="$(memfd "$(submit_line k1 "$s1" 1)" "$tmp/in/w1.wtns")"
[ "$(js 'r.ok && r.job != '"$j1"' && !r.existing' "$r")" = true ] || fail "key k1 after its job was pruned: $r"
echo "ok: --store-keep-days 1: job $j1 (3 days old) left the store with its proofs and key; job $j2's proof is still served"
daemon_shutdown_clean

# ---- --no-store: nothing to keep proofs or keys in --------------------------------------------
daemon_start --config "$conf" --devices cpu:1 --no-store
r="$(memfd "$(submit_line k9 "$s1" 1)" "$tmp/in/w1.wtns")"
[ "$(js 'r.error' "$r")" = bad_request ] || fail "a store submit under --no-store: $r"
echo "ok: a store submit to a cuzkd with --no-store -> bad_request: $(js 'r.message' "$r")"
daemon_shutdown_clean
