#!/usr/bin/env bash
# The README's "The daemon in five lines" and "The HTTP API in five lines" run as they
# are written: each block is read out of README.md (its indented lines) and run by
# bash -e from the clone's root, after what `make demo` leaves (the binaries, the
# example's fixture). Then: the daemon's proof and the API's answer verify with snarkjs,
# the API's job id is the one its Location named, and both cuzkd are gone.
# The lines use the default run and state directories and port 8080, so they run in a
# private mount and network namespace (unshare) with tmpfs over /run/cuzk,
# /var/lib/cuzk and /dev/shm: nothing of this machine is touched, and tests beside it are not
# disturbed. The block's `make api-demo` finds everything built (CUDA as this build
# was made: a build without zk/cuda objects gets CUDA=0, so a machine with nvcc does
# not rebuild the tree with it). SKIP when not root, without unshare, or with BUILD
# other than build.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
[ "$(id -u)" = 0 ] || {
  echo "SKIP: not root (the lines run in a private mount and network namespace)"
  exit 77
}
command -v unshare >/dev/null && command -v ip >/dev/null || {
  echo "SKIP: unshare or ip missing"
  exit 77
}
[ "$BUILD" = "$ROOT/build" ] || {
  echo "SKIP: BUILD=$BUILD: the README's lines use build/"
  exit 77
}
need_built bin/cuzkd bin/cuzk bin/cuzk-api
need_tool curl
use_fixtures
use_tmp
# The namespaces mount their tmpfs on /run/cuzk and /var/lib/cuzk: a mount point made
# here for them is removed again at the end (left, it would tell deb_install that a
# package or an operator owns the path, and that test would skip).
made_dirs=()
for d in /run/cuzk /var/lib/cuzk; do
  [ -e "$d" ] || { mkdir "$d" && made_dirs+=("$d"); }
done
trap 'rm -rf "$tmp"; for d in "${made_dirs[@]}"; do rmdir "$d" 2>/dev/null || true; done' EXIT
. "$ROOT/tests/lib/wgen.sh"
wgen_skip_without_tools

# block TITLE: the indented lines under "## TITLE", up to the next heading
block() {
  awk -v t="## $1" '$0 == t { on = 1; next } /^## / { on = 0 } on && /^    / { sub(/^    /, ""); print }' README.md
}
block "The daemon in five lines" >"$tmp/daemon.sh"
block "The HTTP API in five lines" >"$tmp/api.sh"
[ "$(wc -l <"$tmp/daemon.sh")" = 5 ] || {
  cat "$tmp/daemon.sh"
  echo "FAIL: the daemon block is not five lines"
  exit 1
}
[ "$(wc -l <"$tmp/api.sh")" = 5 ] || {
  cat "$tmp/api.sh"
  echo "FAIL: the API block is not five lines"
  exit 1
}

# Each block in its own namespaces; after it, the checks (in the same namespaces: its
# files are on the tmpfs). J, the job's path, is printed for the check.
cat >"$tmp/ns.sh" <<'NS'
set -euo pipefail
ip link set lo up
mount -t tmpfs -o mode=0700 tmpfs /run/cuzk
mount -t tmpfs -o mode=0700 tmpfs /var/lib/cuzk
mount -t tmpfs -o mode=1777 tmpfs /dev/shm # the default instance's segments: ours alone
cd "$ROOT"
# a block that fails half-way leaves no cuzkd behind (it would keep the namespace)
trap '"$ROOT/build/bin/cuzk" shutdown >/dev/null 2>&1 || true' EXIT
set +u
. "$1"
echo "J=${J:-}"
NS
fx="$FIXTURES/bn128/mulchain-10"
[ -d "$BUILD/obj/zk/cuda" ] || export CUDA=0

mkdir -p "$ROOT/build/demo/out" # as make demo leaves it
rm -f "$ROOT/build/demo/out/witness.proof.json" "$ROOT/build/demo/out/witness.public.json"
ROOT="$ROOT" unshare --mount --net --propagation private bash "$tmp/ns.sh" "$tmp/daemon.sh" >"$tmp/daemon.out" 2>&1 ||
  {
    cat "$tmp/daemon.out"
    echo "FAIL: the daemon's five lines"
    exit 1
  }
"$SNARKJS" groth16 verify "$fx/verification_key.json" "$ROOT/build/demo/out/witness.public.json" \
  "$ROOT/build/demo/out/witness.proof.json" 2>&1 | grep -q OK ||
  {
    cat "$tmp/daemon.out"
    echo "FAIL: snarkjs rejects build/demo/out/witness.proof.json"
    exit 1
  }
echo "ok: the daemon's five lines ran as written; snarkjs verifies build/demo/out/witness.proof.json"

ROOT="$ROOT" unshare --mount --net --propagation private bash "$tmp/ns.sh" "$tmp/api.sh" >"$tmp/api.out" 2>&1 ||
  {
    cat "$tmp/api.out"
    echo "FAIL: the API's five lines"
    exit 1
  }
J="$(sed -n 's/^J=//p' "$tmp/api.out" | tail -n1)"
[[ "$J" =~ ^/v1/jobs/[0-9]+$ ]] || {
  cat "$tmp/api.out"
  echo "FAIL: no job path from Location: '$J'"
  exit 1
}
# the last answer of the block is the proof: {"proof":...,"publicSignals":...}
grep -o '{"proof":.*}' "$tmp/api.out" | tail -n1 >"$tmp/answer.json"
node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  require("fs").writeFileSync(process.argv[2], JSON.stringify(r.proof));
  require("fs").writeFileSync(process.argv[3], JSON.stringify(r.publicSignals));' \
  "$tmp/answer.json" "$tmp/proof.json" "$tmp/public.json" || {
  cat "$tmp/api.out"
  echo "FAIL: no proof answer"
  exit 1
}
"$SNARKJS" groth16 verify "$fx/verification_key.json" "$tmp/public.json" "$tmp/proof.json" 2>&1 | grep -q OK ||
  {
    cat "$tmp/api.out"
    echo "FAIL: snarkjs rejects the API's proof"
    exit 1
  }
grep -q '"state":"done"' "$tmp/api.out" || {
  cat "$tmp/api.out"
  echo "FAIL: the job is not done"
  exit 1
}
grep -q "api-demo: job .* verified by snarkjs" "$tmp/api.out" || {
  cat "$tmp/api.out"
  echo "FAIL: make api-demo did not verify"
  exit 1
}
echo "ok: the API's five lines ran as written (make api-demo first): job $J done, its proof verified by snarkjs"
echo "PASS: readme_lines (2 blocks, 3 proofs verified by snarkjs)"
