# shellcheck shell=bash
# Source me: wgen_for FIXTURE_DIR prints the path of that fixture's witness generator,
# built with `cuzk build-witness` from its circuit_cpp/ on first use and kept in
# $BUILD/wgen/ (rebuilt when what goes into it changes: the circuit's .dat and .cpp,
# the ABI sources cuzk embeds, build_witness.c, the r1cs whose circuit fingerprint
# goes in (--r1cs); not on every relink of cuzk), so
# the tests that use one pay the compile (about 10 s each) once. Needs BUILD, CUZK, ROOT.
# With two tests asking at once, one builds and the other waits (flock).
wgen_for() { # fixture dir
  local d="$1" curve name out stamp
  curve="$(basename "$(dirname "$d")")"
  name="$(basename "$d")"
  out="$BUILD/wgen/$curve-$name.wgen"
  mkdir -p "$BUILD/wgen"
  stamp="$(cat "$ROOT/synth/wgen_abi.cpp" "$ROOT/proto/wgen_abi.h" "$ROOT/synth/wgen_assert.h" \
    "$ROOT/tools/build_witness.c" "$d/circuit_cpp/circuit.dat" "$d/circuit_cpp/circuit.cpp" "$d/circuit.sym" "$d/circuit.r1cs" |
    sha256sum | cut -d' ' -f1)"
  (
    exec 8>"$out.lock"
    if command -v flock >/dev/null 2>&1; then flock 8; fi
    if [ ! -f "$out" ] || [ "$(cat "$out.stamp" 2>/dev/null)" != "$stamp" ]; then
      "$CUZK" build-witness --prime "$curve" --r1cs "$d/circuit.r1cs" "$d/circuit_cpp" "$out" >/dev/null ||
        {
          echo "FAIL: cuzk build-witness $d/circuit_cpp failed" >&2
          exit 1
        }
      echo "$stamp" >"$out.stamp"
    fi
  ) || return 1
  echo "$out"
}

# wgen_skip_without_tools: exit 77 (SKIP) when g++ or nasm is missing.
wgen_skip_without_tools() {
  local t
  for t in "${CXX:-g++}" "${NASM:-nasm}"; do
    command -v "$t" >/dev/null 2>&1 || {
      echo "SKIP: $t not installed (deploy/install-deps.sh installs it)"
      exit 77
    }
  done
}

# wgen_script_init: the start of a standalone script test of witness generators (run
# from tests/scripts/, not through daemon.sh): sets ROOT, BUILD (absolute), CUZK;
# exits 77 without g++/nasm; builds the fixtures and sources their env.sh; makes tmp,
# removed at exit.
wgen_script_init() {
  # shellcheck source=common.sh
  . "$(dirname "${BASH_SOURCE[0]}")/common.sh"
  need_cuzk
  wgen_skip_without_tools
  use_fixtures
  use_tmp
}

# wgen_daemon_init NAME: the start of a daemon test of witness generators (after
# tests/lib/daemon.sh): exits 77 without g++/nasm; CUZK; daemon_init NAME; the fixtures.
wgen_daemon_init() {
  wgen_skip_without_tools
  CUZK="$BUILD/bin/cuzk"
  daemon_init "$1"
  bash "$MAKE_FIXTURES" -q >/dev/null
}
