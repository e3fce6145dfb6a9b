#!/usr/bin/env bash
# test: exclusive (creates and removes Unix users: useradd and userdel lock /etc/passwd)
# Issue 16 items 4 and 8 (tests/security/): connection exhaustion on the control
# socket and a slowloris on the metrics port, each as an unprivileged second user.
# SKIP (77) when not root (the tests create that user with useradd).
set -uo pipefail
dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../security" && pwd)"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: tests/security needs root (useradd)"; exit 77; }
rc=0
for t in conn_exhaustion metrics_slowloris; do
  echo "== $t"
  bash "$dir/$t.sh"; r=$?
  if [ $r -eq 77 ]; then [ $rc -ne 0 ] || rc=77; elif [ $r -ne 0 ]; then rc=1; fi
done
exit $rc
