#!/usr/bin/env bash
# The three stage executables (cuzk-synth, cuzk-gpuworker x2, cuzk-finalizer) prove
# the bn128 and bn128-chain fixtures through shared memory, and snarkjs accepts every
# proof they wrote. The instance is made and the jobs submitted by test_pipeline's
# "stage binaries" case (pipeline_create + pipeline_submit_job, as cuzkd does); it
# leaves the outputs in $PIPELINE_OUT, which this script then verifies:
#   * `snarkjs groth16 verify` says OK for each proof, with the fixture's vkey;
#   * public.json equals the fixture's public.json;
#   * a tampered public signal is rejected (the check is not vacuous).
# Environment: BUILD (default build).
set -euo pipefail

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
need_built tests/test_pipeline bin/cuzk-synth bin/cuzk-gpuworker bin/cuzk-finalizer
use_fixtures

use_tmp

# Only the test case that runs the executables (Check selects it by name).
# shellcheck disable=SC2097,SC2098 # BUILD passed on to the test, as it is here
if ! CK_RUN_SUITE=pipeline CK_RUN_CASE=executables CK_DEFAULT_TIMEOUT=300 \
  PIPELINE_OUT="$tmp" BUILD="$BUILD" \
  "$BUILD/tests/test_pipeline" >"$tmp/test.log" 2>&1; then
  cat "$tmp/test.log" >&2
  echo "FAIL: test_pipeline (which runs the stages) failed" >&2
  exit 1
fi
if ! grep -q "Checks: 1, Failures: 0, Errors: 0" "$tmp/test.log" || grep -q SKIP "$tmp/test.log"; then
  cat "$tmp/test.log" >&2
  echo "FAIL: the executables case of test_pipeline did not run" >&2
  exit 1
fi

fail=0
check() { # fixture-set name
  local set="$1" name="$2" fx="$REF_FIXTURES/$1"
  local proof="$tmp/$name.proof.json" public="$tmp/$name.public.json" out
  if [ ! -s "$proof" ] || [ ! -s "$public" ]; then
    echo "FAIL  $name: missing $proof or $public"
    fail=1
    return
  fi
  if ! out="$("$SNARKJS" groth16 verify "$fx/verification_key.json" "$public" "$proof" 2>&1)" ||
    ! grep -q "OK" <<<"$out"; then
    echo "FAIL  $name: snarkjs groth16 verify: $out"
    fail=1
    return
  fi
  if ! node -e 'const fs=require("fs");const a=JSON.parse(fs.readFileSync(process.argv[1]));
      const b=JSON.parse(fs.readFileSync(process.argv[2]));
      process.exit(JSON.stringify(a)===JSON.stringify(b)?0:1)' "$public" "$fx/public.json"; then
    echo "FAIL  $name: public signals differ from $fx/public.json"
    fail=1
    return
  fi
  node -e 'const fs=require("fs");const a=JSON.parse(fs.readFileSync(process.argv[1]));
      a[0]=(BigInt(a[0])+1n).toString();fs.writeFileSync(process.argv[2],JSON.stringify(a))' \
    "$public" "$tmp/$name.bad.json"
  if "$SNARKJS" groth16 verify "$fx/verification_key.json" "$tmp/$name.bad.json" "$proof" 2>&1 |
    grep -q "OK"; then
    echo "FAIL  $name: snarkjs accepts a tampered public signal"
    fail=1
    return
  fi
  echo "PASS  $name ($set): snarkjs verifies the pipeline's proof"
}
check bn128 bn128-a
check bn128 bn128-b
check bn128-chain bn128-chain-a
check bn128-chain bn128-chain-b
exit $fail
