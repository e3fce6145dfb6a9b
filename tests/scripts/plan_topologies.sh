#!/usr/bin/env bash
# cuzkd --plan on the hwloc XML topologies of tests/topologies/ (planning only: no GPU,
# no CUDA needed): the placement is printed and exits 0; a GPU that the topology shows
# but the driver does not list (--driver-gpus stands in for the driver) is named, and
# the plan uses the others. Each XML also loads in lstopo where hwloc-nox is installed.
# The placement properties themselves are asserted by tests/unit/test_topologies.c.
set -euo pipefail
BUILD="${BUILD:-build}"
cuzkd="$BUILD/bin/cuzkd"
fail() {
  echo "plan_topologies: FAIL: $*" >&2
  exit 1
}
out_f="$(mktemp)"
trap 'rm -f "$out_f"' EXIT
for f in tests/topologies/*.xml; do
  if command -v lstopo-no-graphics >/dev/null 2>&1; then
    lstopo-no-graphics --input "$f" --of console >/dev/null || fail "lstopo cannot load $f"
  fi
  echo "== cuzkd --plan --topology $f --devices cuda:all"
  "$cuzkd" --plan --topology "$f" --devices cuda:all --buffers 16 | tee "$out_f"
  grep -q '^note: every process has its own cores' "$out_f" || fail "$f: cores shared"
done
command -v lstopo-no-graphics >/dev/null 2>&1 || echo "plan_topologies: lstopo-no-graphics missing (apt-get install hwloc-nox): XML not cross-checked"
[ "$("$cuzkd" --plan --topology tests/topologies/dual-xeon-8gpu.xml --devices cuda:all | grep -c '^worker')" = 8 ] ||
  fail "dual-xeon: not 8 workers"
[ "$("$cuzkd" --plan --topology tests/topologies/epyc-4gpu.xml --devices cuda:all | grep -c '^worker')" = 4 ] ||
  fail "epyc: not 4 workers"
echo "== the driver lists 7 of the 8 GPUs (b4:00.0 missing)"
out="$("$cuzkd" --plan --topology tests/topologies/dual-xeon-8gpu.xml --devices cuda:all \
  --driver-gpus 0000:1a:00.0,0000:34:00.0,0000:4d:00.0,0000:67:00.0,0000:9b:00.0,0000:cd:00.0,0000:e6:00.0)"
echo "$out"
echo "$out" | grep -q '^warning: the topology shows an NVIDIA GPU at PCI 0000:b4:00.0 that the CUDA driver does not list' ||
  fail "no warning for the missing GPU"
[ "$(echo "$out" | grep -c '^worker')" = 7 ] || fail "not 7 workers"
echo "== the driver lists none"
rc=0
err="$("$cuzkd" --plan --topology tests/topologies/epyc-4gpu.xml --devices cuda:all --driver-gpus none 2>&1)" || rc=$?
echo "$err"
[ $rc -eq 2 ] && echo "$err" | grep -q 'the CUDA driver lists no GPU (the topology shows 4' || fail "rc $rc: $err"
echo "plan_topologies: ok"
