#!/usr/bin/env bash
# make test: the single-fault tests of tests/faults/ (hung stage, graceful restarts,
# poison partition, backpressure, supervisor death, full disk), one daemon each.
set -u
dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../faults" && pwd)"
rc=0
for t in stall restart poison busy supervisor_death full_disk; do
  t0=$(date +%s)
  if bash "$dir/$t.sh"; then echo "PASS faults/$t ($(( $(date +%s) - t0 )) s)"
  else echo "FAIL faults/$t"; rc=1; fi
done
exit $rc
