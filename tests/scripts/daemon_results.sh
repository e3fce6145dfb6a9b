#!/usr/bin/env bash
# Results kept in the job store, for a client that keeps no files (the HTTP API
# process): a submit by circuit name with "results":"store", its inputs passed as
# sealed memfds (as the API passes a request body), a tenant and an idempotency key;
# the job JSON's circuit, tenant, results, submitted_unix and per-part timings_ms; the
# proof request's answers (snarkjs verifies every proof it returns) and refusals
# (another job's kind, an index out of range, no such job); the same key and body
# again answers the first job, another body is idempotency_conflict. kill -9 of cuzkd
# right after a submit is accepted: the next cuzkd resumes it and serves its proofs,
# and serves the first job's from the store (status too), the idempotency keys hold
# across the restart. The CLI: `cuzk prove --circuit NAME --keep-in-store` and `cuzk
# proof JOB K --out DIR`; `cuzk status` shows the circuit and tenant. Then a clean
# shutdown.
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

memfd() { python3 "$ROOT/tests/lib/send_memfd.py" "$run/$inst.sock" "$@"; }
sha() { printf '%s' "$1" | sha256sum | cut -c1-64; }
submit_line() {  # key sha n: a store submit of mul-bn with n witnesses (memfds 0..n-1)
  local ws="" i
  for i in $(seq 1 "$3"); do ws="$ws${ws:+,}{\"fd\":$((i - 1)),\"path\":\"body-$i\",\"name\":\"p$i\"}"; done
  echo "{\"req\":\"submit\",\"circuit\":\"mul-bn\",\"fds\":$3,\"witnesses\":[$ws],\"results\":\"store\",\"tenant\":\"acme\",\"idempotency_key\":\"$1\",\"body_sha256\":\"$2\"}"
}
# proof JOB K: the proof request's answer, checked by snarkjs (files under $tmp/p)
proof_ok() {
  local r; r="$(send "{\"req\":\"proof\",\"job\":$1,\"index\":$2}")"
  [ "$(js 'r.ok' "$r")" = true ] || fail "proof $1/$2: $r"
  js 'JSON.stringify(r.proof)' "$r" >"$tmp/p/$1-$2.proof.json"
  js 'JSON.stringify(r.public)' "$r" >"$tmp/p/$1-$2.public.json"
  "$SNARKJS" groth16 verify "$VK" "$tmp/p/$1-$2.public.json" "$tmp/p/$1-$2.proof.json" 2>&1 | grep -q OK \
    || fail "snarkjs rejects the stored proof $1/$2: $r"
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
[ "$(js '[r.job.circuit,r.job.tenant,r.job.results,r.job.state].join(" ")' "$st")" = "mul-bn acme store done" ] \
  || fail "job JSON: $st"
[ "$(js 'r.job.submitted_unix > 1600000000 && r.job.parts.every(p => ["queue_wait","witness","prove","finalize"].every(k => typeof p.timings_ms[k] == "number") && !p.proof)' "$st")" = true ] \
  || fail "submitted_unix / timings_ms: $st"
proof_ok "$j1" 0
proof_ok "$j1" 1
echo "ok: submit by name over sealed memfds with \"results\":\"store\": job $j1 done, its JSON has circuit, tenant, results, submitted_unix, timings_ms; 2 stored proofs verify"
