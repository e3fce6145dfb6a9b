#!/usr/bin/env bash
# Full disk: a job whose output directory is a 16 KiB tmpfs (room for about two
# proof/public pairs). The partitions that do not fit fail with a reason naming the
# full disk; no temp file is left and no file under a final name is half written
# (each proof there verifies); another job on a roomy disk is DONE.
# Needs root to mount a tmpfs: prints SKIP and exits 77 when the mount fails.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
daemon_init fdisk
mnt="$tmp/small/out"
mkdir -p "$mnt"
if ! mount -t tmpfs -o size=16k,mode=0755 cuzk-fault-test "$mnt" 2>/dev/null; then
  echo "SKIP: cannot mount a tmpfs here (not root?)"
  exit 77
fi
umount_it() { umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true; }
daemon_on_exit=umount_it # first at exit, before daemon.sh's own cleanup
daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16
a="$(submit_copies bn128 6 small)"
b="$(submit_copies bn128-chain 4 big)"
r="$(timeout 120 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json wait "$a")" || true
[ "$(jq -r .job.state <<<"$r")" = failed ] || fail "job on the full disk: $r"
nf="$(jq '[.job.parts[] | select(.state == "failed")] | length' <<<"$r")"
[ "$nf" -ge 1 ] || fail "no partition failed: $r"
jq -r '.job.parts[] | select(.state == "failed") | .reason' <<<"$r" | grep -qi "no space" ||
  fail "reasons do not name the full disk: $(jq -c '[.job.parts[].reason]' <<<"$r")"
echo "ok: $nf of 6 failed: $(jq -r '[.job.parts[] | select(.state == "failed") | .reason][0]' <<<"$r")"
left="$(dir_list "$mnt" '*.tmp.*')"
[ -z "$left" ] || fail "temp files left: $left"
for p in $(jq -r '.job.parts[] | select(.state == "done") | .name' <<<"$r"); do
  [ -s "$mnt/$p.proof.json" ] || fail "$p is done but its proof is missing"
done
# whatever is under a final name is whole: every proof there verifies
ls "$mnt"/*.proof.json >/dev/null 2>&1 && verify_jobs bn128 small
for f in "$mnt"/*.public.json; do
  [ -e "$f" ] || continue
  jq -e . "$f" >/dev/null || fail "half-written $f"
done
r="$(timeout 120 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json wait "$b")" || fail "job b: $r"
[ "$(jq -r .job.state <<<"$r")" = "done" ] || fail "job b: $r"
check_out_files big 4
verify_jobs bn128-chain big
[ "$(pool_in_use)" = 0 ] || fail "pool in use: $(pool_in_use)"
daemon_shutdown_clean
