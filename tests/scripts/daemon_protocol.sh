#!/usr/bin/env bash
# cuzkd control protocol: bad requests get a clear error reply and disturb nothing.
# While one job runs: malformed JSON, a non-object, an oversized line, an unknown
# request, a missing field, a missing file, a witness for another circuit, duplicate
# basenames (client and daemon), a bad out_dir, an unknown job; then the job finishes
# and its proofs verify.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
daemon_init ptest
expect_error() {  # what, code, request line
  local r; r="$(send "$3")"
  grep -q "\"ok\":false" <<<"$r" && grep -q "\"error\":\"$2\"" <<<"$r" && grep -q '"message":"[^"]' <<<"$r" \
    || fail "$1: expected error $2, got: $r"
  echo "ok: $1 -> $(sed 's/.*"message":"\([^"]*\)".*/\1/' <<<"$r")"
}

daemon_start --devices cpu:1 --buffer-mb 16

A="$SHARED/fixtures/snarkjs-groth16/bn128"; B="$SHARED/fixtures/snarkjs-groth16/bn128-chain"
mkdir -p "$tmp/in" "$tmp/out" "$tmp/dup/x" "$tmp/dup/y"
for i in 1 2 3 4; do cp "$A/witness.wtns" "$tmp/in/w$i.wtns"; done
cp "$A/witness.wtns" "$tmp/dup/x/w.wtns"; cp "$A/witness.wtns" "$tmp/dup/y/w.wtns"
cp "$B/witness.wtns" "$tmp/other.wtns"

out="$(cuzk --json prove --zkey "$A/circuit_final.zkey" --out "$tmp/out" "$tmp/in"/w*.wtns)" || fail "submit: $out"
job="$(node -e 'console.log(JSON.parse(process.argv[1]).job)' "$out")"

expect_error "malformed JSON" bad_json '{"req":"status",'
expect_error "not an object" bad_json '[1,2,3]'
expect_error "oversized line" line_too_long "{\"req\":\"status\",\"pad\":\"$(head -c 70000 /dev/zero | tr '\0' x)\"}"
expect_error "unknown request" unknown_request '{"req":"frobnicate"}'
expect_error "missing field" bad_request "{\"req\":\"submit\",\"out_dir\":\"$tmp/out\",\"witnesses\":[\"$tmp/in/w1.wtns\"]}"
expect_error "missing zkey file" not_found "{\"req\":\"submit\",\"zkey\":\"$tmp/nope.zkey\",\"out_dir\":\"$tmp/out\",\"witnesses\":[\"$tmp/in/w1.wtns\"]}"
expect_error "missing witness file" not_found "{\"req\":\"submit\",\"zkey\":\"$A/circuit_final.zkey\",\"out_dir\":\"$tmp/out\",\"witnesses\":[\"$tmp/in/nope.wtns\"]}"
expect_error "witness for another circuit" bad_input "{\"req\":\"submit\",\"zkey\":\"$A/circuit_final.zkey\",\"out_dir\":\"$tmp/out\",\"witnesses\":[\"$tmp/other.wtns\"]}"
expect_error "duplicate basenames" bad_input "{\"req\":\"submit\",\"zkey\":\"$A/circuit_final.zkey\",\"out_dir\":\"$tmp/out\",\"witnesses\":[\"$tmp/dup/x/w.wtns\",\"$tmp/dup/y/w.wtns\"]}"
expect_error "out_dir missing" bad_output "{\"req\":\"submit\",\"zkey\":\"$A/circuit_final.zkey\",\"out_dir\":\"$tmp/nodir\",\"witnesses\":[\"$tmp/in/w1.wtns\"]}"
expect_error "unknown job" no_such_job '{"req":"status","job":999999}'
expect_error "wait timeout type" bad_request '{"req":"wait","job":"x"}'

rc=0; cuzk prove --zkey "$A/circuit_final.zkey" --out "$tmp/out" "$tmp/dup/x/w.wtns" "$tmp/dup/y/w.wtns" 2>"$tmp/err" || rc=$?
[ $rc -eq 2 ] && grep -q "rename one" "$tmp/err" || fail "client accepted duplicate basenames (rc $rc: $(cat "$tmp/err"))"
echo "ok: client refuses duplicate basenames before submit"

timeout 300 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "$job" >/dev/null || fail "job $job did not finish"
for i in 1 2 3 4; do
  "$SNARKJS" groth16 verify "$A/verification_key.json" "$tmp/out/w$i.public.json" "$tmp/out/w$i.proof.json" 2>&1 \
    | grep -q OK || fail "snarkjs rejects w$i"
done
echo "ok: the job running meanwhile finished and its 4 proofs verify"
cuzk shutdown >/dev/null
for _ in $(seq 1 300); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
rc=0; wait "$daemon_pid" || rc=$?; daemon_pid=""
[ $rc -eq 0 ] || fail "cuzkd exited with $rc"
echo "ok: clean shutdown"
