#!/usr/bin/env bash
# The repository stands alone: a `git clone` of it into an empty folder runs the
# README's first command, `bash deploy/install-deps.sh && make demo`, to its verified
# proofs, while the folder that holds this checkout (and whatever sits beside it) is
# hidden behind an empty tmpfs in a private mount namespace, so a file read from
# outside the clone fails the run instead of being found. Without the rights for a
# mount namespace the clone still sits in a folder with nothing beside it.
# Also: no tracked file names ../shared.
# Reused, because they are caches keyed by what they hold and the suite builds them the
# same way: the npm tools and the powers of tau of tests/fixtures/cache (so the clone
# runs circom and the snarkjs setup of its fixture, not npm or a 2^12 ceremony).
# The build is not reused: the clone compiles from its own sources.
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../fixtures" && pwd)/env.sh"
fail() {
  echo "FAIL: $*"
  exit 1
}
command -v git >/dev/null || {
  echo "SKIP: git is not installed"
  exit 77
}
git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1 || {
  echo "SKIP: $ROOT is not a git checkout"
  exit 77
}

# Tracked files that name the folder beside the repository (this file excepted: it
# names it to look for it).
hits="$(git -C "$ROOT" grep -n -F '../shared' -- . ':!tests/scripts/standalone_clone.sh' || true)"
[ -z "$hits" ] || fail "tracked files name ../shared: $hits"
echo "ok: no tracked file names ../shared"

parent="$(cd "$ROOT/.." && pwd -P)"
base=""
for b in "${TMPDIR:-/tmp}" /var/tmp /tmp; do
  b="$(cd "$b" 2>/dev/null && pwd -P)" || continue
  case "$b/" in "$parent"/*) continue ;; esac
  base="$b"
  break
done
[ -n "$base" ] || {
  echo "SKIP: no temp folder outside $parent to clone into"
  exit 77
}
tmp="$(mktemp -d "$base/cuzk-clone.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
git clone -q --no-hardlinks "$ROOT" "$tmp/cuzk"
clone="$tmp/cuzk"
mkdir -p "$clone/tests/fixtures/cache"
for c in node ptau; do
  [ -d "$FIXTURES/$c" ] && cp -a "$FIXTURES/$c" "$clone/tests/fixtures/cache/"
done

# Can this process hide $parent? (root, and a kernel that lets it unshare mounts)
hide=0
# shellcheck disable=SC2016 # "$1" is the inner shell's
if [ "$parent" != / ] && [ "$(id -u)" = 0 ] && command -v unshare >/dev/null &&
  unshare --mount --propagation private sh -c 'mount -t tmpfs -o size=1m,mode=0755 none "$1"' _ "$parent" 2>/dev/null; then
  hide=1
fi

log="$tmp/demo.log"
# shellcheck disable=SC2016  # expanded by the inner shell
run='cd "$2" && bash deploy/install-deps.sh && make demo'
# As a user's fresh shell (with make -jN): none of the suite's variables (BUILD, ROOT...),
# which would point the clone's build back into this checkout.
# Temp files (nvcc's, node's, mktemp's) go beside the clone: the hidden folder may be
# the system's temp folder itself.
mkdir -p "$tmp/tmpdir"
clean_env=(env -i PATH="$PATH" HOME="${HOME:-/root}" LANG=C.UTF-8 MAKEFLAGS="-j$(nproc)" TMPDIR="$tmp/tmpdir")
rc=0
if [ $hide -eq 1 ]; then
  echo "running 'bash deploy/install-deps.sh && make demo' in a clone, with $parent hidden"
  # shellcheck disable=SC2016 # "$1" is the inner shell's
  "${clean_env[@]}" unshare --mount --propagation private bash -c \
    'mount -t tmpfs -o size=1m,mode=0755 none "$1" && [ -z "$(ls -A "$1")" ] || exit 90; '"$run" \
    _ "$parent" "$clone" >"$log" 2>&1 || rc=$?
  [ $rc -ne 90 ] || fail "could not hide $parent"
else
  echo "note: no mount namespace here (not root, or unshare refused): the clone only sits in an empty folder"
  "${clean_env[@]}" bash -c "$run" _ "$parent" "$clone" >"$log" 2>&1 || rc=$?
fi
[ $rc -eq 0 ] || fail "make demo in the clone: exit $rc; last lines:
$(tail -n 25 "$log")"
grep -q "^demo: .* all verified by snarkjs" "$log" || fail "the demo did not say its proofs verified: $(tail -n 25 "$log")"
! grep -q -F "../shared" "$log" || fail "the demo's output names ../shared: $(grep -F ../shared "$log")"
[ -d "$clone/build/bin" ] || fail "the clone has no build of its own"
echo "ok: a clone with nothing beside it built, proved the bundled example and verified it"
