#!/usr/bin/env bash
# cuzkd control protocol: bad requests get a clear error reply and disturb nothing.
# While one job runs: malformed JSON, a non-object, an oversized line, an unknown
# request, a missing field, paths instead of descriptors (refused: the daemon opens no
# path a client names), descriptors announced but not sent or out of range, a witness
# for another circuit, duplicate or unsafe output names (client and daemon), a bad
# out_dir, a FIFO or a device as input (refused before any read), an unknown job; then
# the job finishes and its proofs verify.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
daemon_init ptest

daemon_start --devices cpu:1 --buffer-mb 16

A="$REF_FIXTURES/bn128"
B="$REF_FIXTURES/bn128-chain"
mkdir -p "$tmp/in" "$tmp/out" "$tmp/dup/x" "$tmp/dup/y"
for i in 1 2 3 4; do cp "$A/witness.wtns" "$tmp/in/w$i.wtns"; done
cp "$A/witness.wtns" "$tmp/dup/x/w.wtns"
cp "$A/witness.wtns" "$tmp/dup/y/w.wtns"
cp "$B/witness.wtns" "$tmp/other.wtns"

out="$(cuzk --json prove --zkey "$A/circuit_final.zkey" --out "$tmp/out" "$tmp/in"/w*.wtns)" || fail "submit: $out"
job="$(node -e 'console.log(JSON.parse(process.argv[1]).job)' "$out")"
# Wait from now on: a job being waited for is not retired (30 s after it finished),
# however long the requests below take on a loaded machine.
timeout 300 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "$job" >"$tmp/wait.out" 2>&1 &
waiter=$!

expect_error "malformed JSON" bad_json '{"req":"status",'
expect_error "not an object" bad_json '[1,2,3]'
expect_error "oversized line" line_too_long "{\"req\":\"status\",\"pad\":\"$(head -c 70000 /dev/zero | tr '\0' x)\"}"
expect_error "unknown request" unknown_request '{"req":"frobnicate"}'
expect_error "missing field" bad_request "{\"req\":\"submit\",\"fds\":1,\"out_dir\":{\"fd\":0,\"path\":\"o\"},\"witnesses\":[]}"
# Files go as descriptors (control.h): a path the daemon would open is refused.
expect_error "paths instead of descriptors" bad_request "{\"req\":\"submit\",\"zkey\":\"$A/circuit_final.zkey\",\"out_dir\":\"$tmp/out\",\"witnesses\":[\"$tmp/in/w1.wtns\"]}"
send "{\"req\":\"submit\",\"zkey\":\"$A/circuit_final.zkey\",\"out_dir\":\"$tmp/out\",\"witnesses\":[\"$tmp/in/w1.wtns\"]}" |
  grep -q "opens no path" || fail "a raw path submit is not told to pass descriptors"
expect_error "a path where a descriptor goes" bad_request "{\"req\":\"submit\",\"fds\":1,\"zkey\":\"$A/circuit_final.zkey\",\"out_dir\":{\"fd\":0,\"path\":\"o\"},\"witnesses\":[{\"fd\":0,\"path\":\"w\"}]}"
expect_error "descriptors announced, none sent" bad_request "{\"req\":\"submit\",\"fds\":3,\"zkey\":{\"fd\":0,\"path\":\"z\"},\"out_dir\":{\"fd\":1,\"path\":\"o\"},\"witnesses\":[{\"fd\":2,\"path\":\"w1.wtns\"}]}"
Z='{"fd":0,"path":"z.zkey"}'
O='{"fd":1,"path":"out"}'
sub() { echo "{\"req\":\"submit\",\"fds\":$1,\"zkey\":$Z,\"out_dir\":$O,\"witnesses\":[$2]}"; }
expect_fds "descriptor index out of range" bad_request "$(sub 3 '{"fd":3,"path":"w1.wtns"}')" \
  "$A/circuit_final.zkey" "$tmp/out" "$tmp/in/w1.wtns"
expect_fds "witness for another circuit" bad_input "$(sub 3 '{"fd":2,"path":"other.wtns"}')" \
  "$A/circuit_final.zkey" "$tmp/out" "$tmp/other.wtns"
expect_fds "duplicate names" bad_input "$(sub 4 '{"fd":2,"path":"x/w.wtns"},{"fd":3,"path":"y/w.wtns"}')" \
  "$A/circuit_final.zkey" "$tmp/out" "$tmp/dup/x/w.wtns" "$tmp/dup/y/w.wtns"
expect_fds "output name with a slash" bad_input "$(sub 3 '{"fd":2,"path":"w1.wtns","name":"../w1"}')" \
  "$A/circuit_final.zkey" "$tmp/out" "$tmp/in/w1.wtns"
expect_fds "output name .." bad_input "$(sub 3 '{"fd":2,"path":"w1.wtns","name":".."}')" \
  "$A/circuit_final.zkey" "$tmp/out" "$tmp/in/w1.wtns"
expect_fds "out_dir not a directory" bad_output "$(sub 3 '{"fd":2,"path":"w1.wtns"}')" \
  "$A/circuit_final.zkey" "$tmp/in/w2.wtns" "$tmp/in/w1.wtns"
expect_fds "zkey is a directory" bad_input "$(sub 3 '{"fd":2,"path":"w1.wtns"}')" \
  "$tmp/dup" "$tmp/out" "$tmp/in/w1.wtns"
# Issue 16 item 5: a FIFO (or any non-regular file) is refused before any read, so
# it cannot hang the daemon (nothing ever writes to this one).
mkfifo "$tmp/fifo.wtns"
expect_fds "a FIFO as witness" bad_input "$(sub 3 '{"fd":2,"path":"fifo.wtns"}')" \
  "$A/circuit_final.zkey" "$tmp/out" "$tmp/fifo.wtns"
send_fds "$(sub 3 '{"fd":2,"path":"fifo.wtns"}')" "$A/circuit_final.zkey" "$tmp/out" "$tmp/fifo.wtns" |
  grep -q "FIFO" || fail "the FIFO refusal does not say what the file is"
expect_fds "/dev/zero as zkey" bad_input "$(sub 3 '{"fd":2,"path":"w1.wtns"}')" \
  /dev/zero "$tmp/out" "$tmp/in/w1.wtns"
expect_error "unknown job" no_such_job '{"req":"status","job":999999}'
expect_error "wait timeout type" bad_request '{"req":"wait","job":"x"}'

rc=0
cuzk prove --zkey "$A/circuit_final.zkey" --out "$tmp/out" "$tmp/dup/x/w.wtns" "$tmp/dup/y/w.wtns" 2>"$tmp/err" || rc=$?
[ $rc -eq 2 ] && grep -q "rename one" "$tmp/err" || fail "client accepted duplicate basenames (rc $rc: $(cat "$tmp/err"))"
echo "ok: client refuses duplicate basenames before submit"

wait "$waiter" || fail "job $job did not finish: $(cat "$tmp/wait.out")"
for i in 1 2 3 4; do
  "$SNARKJS" groth16 verify "$A/verification_key.json" "$tmp/out/w$i.public.json" "$tmp/out/w$i.proof.json" 2>&1 |
    grep -q OK || fail "snarkjs rejects w$i"
done
echo "ok: the job running meanwhile finished and its 4 proofs verify"
daemon_shutdown_clean
