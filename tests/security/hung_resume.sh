#!/usr/bin/env bash
# A hung file system under a stored job's out dir does not keep cuzkd from starting.
# A job is accepted whose out dir's recorded path lies on a FUSE mount
# (tests/security/fuse_stall.py), cuzkd is killed with -9 before it proves, and the
# FUSE server is stopped (SIGSTOP: every request to the mount now waits forever, as
# on an NFS server that went away). Before, the resume's open() of that path hung
# cuzkd at start: no socket, no stages. Now the open has a deadline (5 s): cuzkd
# comes up, fails that job's partitions with "did not answer", and proves an honest
# job meanwhile (snarkjs verifies). SKIP (77) without root or /dev/fuse.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
[ "$(id -u)" = 0 ] && [ -c /dev/fuse ] || {
  echo "SKIP: hung_resume needs root and /dev/fuse"
  exit 77
}
daemon_init hungres
A="$FIXTURES/bn128/mulchain-10"
daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16
mkdir -p "$tmp/fuse" "$tmp/out" "$tmp/rootout"
python3 "$(dirname "$0")/fuse_stall.py" "$tmp/fuse" 4096 "$tmp/fuse.read" 2>"$tmp/fuse.log" &
fuse_pid=$!
daemon_on_exit="kill -CONT $fuse_pid 2>/dev/null; kill $fuse_pid 2>/dev/null; umount -l '$tmp/fuse' 2>/dev/null; ${daemon_on_exit:-}"
wait_until 50 [ -f "$tmp/fuse/c.zkey" ] || fail "the FUSE mount did not come up: $(cat "$tmp/fuse.log")"
wpid="$(js '(r.children.find(c=>c.stage=="worker")||{}).pid' "$(cuzk --json status)")"
kill -STOP "$wpid"
# The out dir passed is $tmp/out; its recorded path lies on the mount.
r="$(send_fds "{\"req\":\"submit\",\"fds\":3,\"zkey\":{\"fd\":0,\"path\":\"c.zkey\"},\"out_dir\":{\"fd\":1,\"path\":\"$tmp/fuse/out\"},\"witnesses\":[{\"fd\":2,\"path\":\"w.wtns\"}]}" \
  "$A/circuit_final.zkey" "$tmp/out" "$A/witness.wtns")"
job="$(js 'r.job' "$r")"
[ -n "$job" ] && [ "$job" != undefined ] || fail "submit: $r"
daemon_kill9 "$wpid"
kill -STOP "$fuse_pid"
echo "killed cuzkd with job $job unproved; the FUSE server is stopped (the mount hangs)"
mv "$tmp/cuzkd.log" "$tmp/cuzkd.1.log"
rm -f "$run/$inst.sock"
daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16
echo "ok: cuzkd came up with the stored job's out dir on a hung mount"
st="$(cuzk --json status "$job" || true)"
[ "$(jq -r '.job.parts[0].state' <<<"$st")" = failed ] || fail "job $job: $(jq -c .job <<<"$st")"
jq -r '.job.parts[0].reason' <<<"$st" | grep -q "did not answer" || fail "job $job's reason: $(jq -c .job <<<"$st")"
echo "ok: job $job failed: $(jq -r '.job.parts[0].reason' <<<"$st")"
cuzk prove --zkey "$A/circuit_final.zkey" --out "$tmp/rootout" --wait "$A/witness.wtns" >/dev/null || fail "an honest job"
"$SNARKJS" groth16 verify "$A/verification_key.json" "$tmp/rootout/witness.public.json" "$tmp/rootout/witness.proof.json" >/dev/null ||
  fail "snarkjs rejects the honest proof"
echo "ok: an honest job proves meanwhile (snarkjs verifies)"
kill -CONT "$fuse_pid"
kill "$fuse_pid" 2>/dev/null
wait "$fuse_pid" 2>/dev/null || true
umount -l "$tmp/fuse" 2>/dev/null || true
daemon_stop
echo "PASS: hung_resume"
