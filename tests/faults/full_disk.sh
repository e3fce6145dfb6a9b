#!/usr/bin/env bash
# Full disk: a job whose output directory is a 16 KiB tmpfs (room for about two
# proof/public pairs). The partitions that do not fit fail with a reason naming the
# full disk; no temp file is left and no file under a final name is half written
# (each proof there verifies); another job on a roomy disk is DONE.
# Needs root to mount a tmpfs: prints SKIP and exits 77 when the mount fails.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
ft_init fdisk
mnt="$FT_TMP/small/out"
mkdir -p "$mnt"
if ! mount -t tmpfs -o size=16k,mode=0755 cuzk-fault-test "$mnt" 2>/dev/null; then
  echo "SKIP: cannot mount a tmpfs here (not root?)"; exit 77
fi
umount_it() { umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true; }
trap 'umount_it; ft_cleanup' EXIT
ft_start --devices cpu:1 --buffers 4 --buffer-mb 16
a="$(ft_submit bn128 6 small)"
b="$(ft_submit bn128-chain 4 big)"
r="$(timeout 120 "$BUILD/bin/cuzk" --instance "$FT_INST" --run-dir "$FT_RUN" --json wait "$a")" || true
[ "$(jq -r .job.state <<<"$r")" = failed ] || ft_fail "job on the full disk: $r"
nf="$(jq '[.job.parts[] | select(.state == "failed")] | length' <<<"$r")"
[ "$nf" -ge 1 ] || ft_fail "no partition failed: $r"
jq -r '.job.parts[] | select(.state == "failed") | .reason' <<<"$r" | grep -qi "no space" \
  || ft_fail "reasons do not name the full disk: $(jq -c '[.job.parts[].reason]' <<<"$r")"
echo "ok: $nf of 6 failed: $(jq -r '[.job.parts[] | select(.state == "failed") | .reason][0]' <<<"$r")"
left="$(ls -A "$mnt" | grep '\.tmp\.' || true)"
[ -z "$left" ] || ft_fail "temp files left: $left"
for p in $(jq -r '.job.parts[] | select(.state == "done") | .name' <<<"$r"); do
  [ -s "$mnt/$p.proof.json" ] || ft_fail "$p is done but its proof is missing"
done
# whatever is under a final name is whole: every proof there verifies
ls "$mnt"/*.proof.json >/dev/null 2>&1 && ft_verify bn128 small
for f in "$mnt"/*.public.json; do [ -e "$f" ] || continue; jq -e . "$f" >/dev/null || ft_fail "half-written $f"; done
r="$(timeout 120 "$BUILD/bin/cuzk" --instance "$FT_INST" --run-dir "$FT_RUN" --json wait "$b")" || ft_fail "job b: $r"
[ "$(jq -r .job.state <<<"$r")" = done ] || ft_fail "job b: $r"
ft_check_files big 4; ft_verify bn128-chain big
[ "$(ft_pool_in_use)" = 0 ] || ft_fail "pool in use: $(ft_pool_in_use)"
ft_shutdown
