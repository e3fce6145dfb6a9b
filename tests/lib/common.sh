# shellcheck shell=bash
# The preamble every script test shares (sourced, never run). After
# `. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"`:
#   ROOT   the repository root (absolute; also the current directory)
#   BUILD  the build dir, absolute (from $BUILD, default build)
#   need_cuzk          CUZK=$BUILD/bin/cuzk; FAIL (exit 1) when it is not built
#   need_built P...    FAIL unless $BUILD/P exists and is executable, for each P (the
#                      message says to run $NEED_MAKE, default "make tests")
#   use_fixtures       make the fixtures if needed (quietly), source tests/fixtures/env.sh
#   use_tmp            tmp=a new temp dir, removed on exit (trap EXIT)
#   prover_from_env    PROVER=( $PROVER_CMD ), default "$BUILD/bin/cuzk prove-local" (FAIL
#                      when that is not built); a relative command path made absolute
#   dir_list DIR [GLOB]   the names in DIR that match GLOB (default: all, dot files too;
#                      '[!.]*' leaves them out), one a line, sorted; nothing for a
#                      missing DIR. What `ls -A DIR | grep` said, for any name
#   dir_count DIR [GLOB]  how many names dir_list prints
#   need_tool CMD [WHY]   SKIP (exit 77) unless CMD is on the PATH; the line says WHY
#                      (default "CMD missing")
#   need_root WHY      SKIP (exit 77) unless run as root; the line says WHY
#   wait_until TRIES CMD...  run CMD every 0.1 s until it succeeds (return 0), at most
#                      TRIES times and once more at the end (return 1 if it never did):
#                      a liveness bound, never a speed check
#   bad MSG / ok MSG   for the scripts that check everything and exit 1 at the end if any
#                      check failed: bad prints "FAIL: MSG" and counts it in fails (the
#                      script sets fails=0 first), ok prints "ok    MSG"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT" || exit 1
BUILD="${BUILD:-build}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac

need_built() {
  local b
  for b in "$@"; do
    [ -x "$BUILD/$b" ] || {
      echo "FAIL: $BUILD/$b does not exist (run ${NEED_MAKE:-make tests} first)" >&2
      exit 1
    }
  done
}

need_cuzk() {
  # shellcheck disable=SC2034  # read by the scripts that call this
  CUZK="$BUILD/bin/cuzk"
  NEED_MAKE="make" need_built bin/cuzk
}

use_fixtures() {
  bash "$ROOT/tests/fixtures/make.sh" -q >/dev/null
  # shellcheck source=../fixtures/env.sh
  . "$ROOT/tests/fixtures/env.sh"
}

use_tmp() {
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
}

prover_from_env() {
  if [ -z "${PROVER_CMD:-}" ]; then
    if [ ! -x "$BUILD/bin/cuzk" ]; then
      echo "FAIL: the prover $BUILD/bin/cuzk does not exist (run make first, or set PROVER_CMD)" >&2
      exit 1
    fi
    PROVER_CMD="$BUILD/bin/cuzk prove-local"
  fi
  read -r -a PROVER <<<"$PROVER_CMD"
  case "${PROVER[0]}" in */*) PROVER[0]="$(cd "$(dirname "${PROVER[0]}")" && pwd)/$(basename "${PROVER[0]}")" ;; esac
}

dir_list() { { find "$1" -mindepth 1 -maxdepth 1 -name "${2:-*}" -printf '%f\n' 2>/dev/null || true; } | LC_ALL=C sort; }
dir_count() { { find "$1" -mindepth 1 -maxdepth 1 -name "${2:-*}" -printf . 2>/dev/null || true; } | wc -c; }

need_tool() {
  command -v "$1" >/dev/null || {
    echo "SKIP: ${2:-$1 missing}"
    exit 77
  }
}

need_root() {
  [ "$(id -u)" -eq 0 ] || {
    echo "SKIP: $1"
    exit 77
  }
}

wait_until() {
  local tries="$1" _
  shift
  for _ in $(seq 1 "$tries"); do
    "$@" && return 0
    sleep 0.1
  done
  "$@"
}

# A failure of a script that runs cuzkd: PREFIX and the message, then the last LINES
# lines of its log ($tmp/cuzkd.log), and exit 1.
fail_with_log() { # PREFIX LINES MESSAGE
  echo "${1}FAIL: $3"
  echo "--- cuzkd log"
  tail -n "$2" "$tmp/cuzkd.log" 2>/dev/null
  exit 1
}

bad() {
  echo "FAIL: $*"
  fails=$((${fails:-0} + 1))
}
ok() { echo "ok    $*"; }
