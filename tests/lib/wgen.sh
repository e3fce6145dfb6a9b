# shellcheck shell=bash
# Source me: wgen_for FIXTURE_DIR prints the path of that fixture's witness generator,
# built with `cuzk build-witness` from its circuit_cpp/ on first use and kept in
# $BUILD/wgen/ (rebuilt when the cuzk binary or the circuit's .dat is newer), so the
# tests that use one pay the compile (seconds) once. Needs BUILD and CUZK set.
# With two tests asking at once, one builds and the other waits (flock).
wgen_for() {  # fixture dir
  local d="$1" curve name out
  curve="$(basename "$(dirname "$d")")"
  name="$(basename "$d")"
  out="$BUILD/wgen/$curve-$name.wgen"
  mkdir -p "$BUILD/wgen"
  (
    exec 8>"$out.lock"
    if command -v flock >/dev/null 2>&1; then flock 8; fi
    if [ ! -f "$out" ] || [ "$CUZK" -nt "$out" ] || [ "$d/circuit_cpp/circuit.dat" -nt "$out" ]; then
      "$CUZK" build-witness --prime "$curve" "$d/circuit_cpp" "$out" >/dev/null ||
        { echo "FAIL: cuzk build-witness $d/circuit_cpp failed" >&2; exit 1; }
    fi
  ) || return 1
  echo "$out"
}

# wgen_skip_without_tools: exit 77 (SKIP) when g++ or nasm is missing.
wgen_skip_without_tools() {
  local t
  for t in "${CXX:-g++}" "${NASM:-nasm}"; do
    command -v "$t" >/dev/null 2>&1 || { echo "SKIP: $t not installed (deploy/install-deps.sh installs it)"; exit 77; }
  done
}
