#!/usr/bin/env bash
# make test: the single-fault tests of tests/faults/ (hung stage, graceful restarts,
# poison partition, one killed from outside, backpressure, supervisor death), one daemon each. The full-disk
# test is faults_full_disk.sh, apart, so that its SKIP (not root) shows as SKIP.
set -u
dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../faults" && pwd)"
rc=0
for t in stall long_call restart poison poison_kill busy supervisor_death; do
  t0=$(date +%s)
  if bash "$dir/$t.sh"; then echo "PASS faults/$t ($(( $(date +%s) - t0 )) s)"
  else echo "FAIL faults/$t"; rc=1; fi
done
exit $rc
