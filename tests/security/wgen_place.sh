#!/usr/bin/env bash
# A witness generator is native code that cuzkd's synth stage (root here) loads, and
# loading a shared object runs its constructors. The attacker (an admitted user) names
#   1. a root-owned 0755 .so with a constructor, outside the operator's --wgen-dir
#      (the old check took any file of root's that no one else could write);
#   2. the same kind of file inside --wgen-dir, with the cuzk_wgen_* functions but no
#      cuzk_wgen_abi, and 3. one whose cuzk_wgen_abi is 999;
#   4. a real generator of its own, outside --wgen-dir;
#   5. a shared object of this ABI (cuzk_wgen_abi right) on a FUSE mount the attacker
#      serves on a folder of its own beneath --wgen-dir: its server says uid 0 and
#      mode 0755 for the folder and the file, so only the file system's type (statfs:
#      FUSE) tells (tests/security/fuse_stall.py --serve; skipped without /dev/fuse).
# Each must be refused at submit, and no constructor may have run (each writes a
# marker file as it loads). Then a real generator that the operator put in --wgen-dir
# proves for the attacker, and the proof is verified with snarkjs.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/lib/wgen.sh"
wgen_skip_without_tools
CUZK="$BUILD/bin/cuzk"
daemon_init secwgen
attacker_init
M="$FIXTURES/bn128/mulchain-10"
mkdir -m 0755 "$tmp/gen" "$tmp/lib"
install -m 0755 "$(wgen_for "$M")" "$tmp/gen/m.wgen"
daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16 --group "$atk" --max-attempts 1 \
  --wgen-dir "$tmp/gen"
attacker_reach

mkdir -p "$tmp/atk/in" "$tmp/atk/out"
install -m 0755 "$CUZK" "$tmp/atk/cuzk"
cp "$M/circuit_final.zkey" "$tmp/atk/in/c.zkey"
cp "$M/input.json" "$tmp/atk/in/in.json"
acuzk() { as_attacker "$tmp/atk/cuzk" --instance "$inst" --run-dir "$run" "$@"; }
# Raw requests with descriptors, opened as the attacker: the real client would load
# the generator itself first (its own check), an attacker's need not.

evil() { # out.so marker extra-C: a shared object whose constructor writes marker
  cat >"$tmp/evil.c" <<C
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void pwn(void) { close(open("$2", O_CREAT | O_WRONLY, 0644)); }
void *cuzk_wgen_describe(void) { return 0; }
void *cuzk_wgen_new(void) { return 0; }
void cuzk_wgen_set(void) {}
int cuzk_wgen_run(void) { return 1; }
void cuzk_wgen_get(void) {}
void cuzk_wgen_free(void) {}
$3
C
  cc -shared -fPIC -o "$1" "$tmp/evil.c" || fail "cc of the test's shared object"
  chmod 0755 "$1"
}
evil "$tmp/lib/evil.so" "$tmp/pwned1" ""
evil "$tmp/gen/noabi.so" "$tmp/pwned2" ""
evil "$tmp/gen/abi999.so" "$tmp/pwned3" "const unsigned cuzk_wgen_abi = 999;"
cp "$tmp/gen/m.wgen" "$tmp/atk/own.wgen"
chown -R "$atk:$atk" "$tmp/atk"

try() { # what generator expect-text
  local r
  r="$(asend_fds "{\"req\":\"submit\",\"fds\":4,\"zkey\":{\"fd\":0,\"path\":\"c.zkey\"},\"out_dir\":{\"fd\":1,\"path\":\"out\"},\"inputs\":[{\"fd\":2,\"path\":\"in.json\"}],\"witness_gen\":{\"fd\":3,\"path\":\"$2\"}}" \
    "$tmp/atk/in/c.zkey" "$tmp/atk/out" "$tmp/atk/in/in.json" "$2")"
  if grep -q '"job"' <<<"$r"; then
    cuzk wait "$(js 'r.job' "$r")" >/dev/null 2>&1 || true
    fail "$1: accepted: $r"
  fi
  grep -q "$3" <<<"$r" || fail "$1: not refused for the right reason: $r"
  echo "ok: $1 refused: $(grep -o 'refused: [^.]*\|not a cuzk[^)]*)' <<<"$r" | head -1)"
}
try "a root-owned .so outside --wgen-dir" "$tmp/lib/evil.so" "not beneath --wgen-dir"
try "a .so in --wgen-dir without cuzk_wgen_abi" "$tmp/gen/noabi.so" "no cuzk_wgen_abi"
try "a .so in --wgen-dir of ABI 999" "$tmp/gen/abi999.so" "built for ABI 999"
try "the attacker's own generator" "$tmp/atk/own.wgen" "belong to root"
if [ -c /dev/fuse ]; then
  mkdir -m 0755 "$tmp/gen/atk"
  chown "$atk:$atk" "$tmp/gen/atk"
  abi="$(awk '/#define CUZK_WGEN_ABI /{print $3}' "$ROOT/proto/wgen_abi.h")"
  evil "$tmp/lib/fused.wgen" "$tmp/pwned4" "const unsigned cuzk_wgen_abi = $abi;"
  python3 "$(dirname "$0")/fuse_stall.py" "$tmp/gen/atk" 0 "$tmp/fuse.read" --serve "$tmp/lib/fused.wgen" \
    --as-user "$ATTACKER_UID" 2>"$tmp/fuse.log" &
  fuse_pid=$!
  daemon_on_exit="kill $fuse_pid 2>/dev/null; umount -l '$tmp/gen/atk' 2>/dev/null; ${daemon_on_exit:-}"
  wait_until 50 [ -f "$tmp/gen/atk/fused.wgen" ] || fail "the attacker's FUSE mount did not come up: $(cat "$tmp/fuse.log")"
  [ "$(stat -c '%u %a' "$tmp/gen/atk" "$tmp/gen/atk/fused.wgen" | tr '\n' ' ')" = "0 755 0 755 " ] ||
    fail "the FUSE mount does not claim root's 0755: $(stat -c '%n %u %a' "$tmp/gen/atk" "$tmp/gen/atk/fused.wgen")"
  try "a generator of this ABI on the attacker's FUSE mount (uid 0, 0755 as its server says)" \
    "$tmp/gen/atk/fused.wgen" "FUSE, NFS"
  kill "$fuse_pid" 2>/dev/null
  wait "$fuse_pid" 2>/dev/null || true
  umount -l "$tmp/gen/atk" 2>/dev/null || true
else
  echo "skip: the FUSE case (no /dev/fuse here)"
fi
for i in 1 2 3 4; do
  [ ! -e "$tmp/pwned$i" ] || fail "a constructor of shared object $i ran in cuzkd's synth (as root)"
done
echo "ok: no constructor ran"

acuzk prove --zkey "$tmp/atk/in/c.zkey" --witness-gen "$tmp/gen/m.wgen" --out "$tmp/atk/out" --wait \
  "$tmp/atk/in/in.json" >/dev/null 2>&1 || fail "the operator's generator did not prove"
"$SNARKJS" groth16 verify "$M/verification_key.json" "$tmp/atk/out/in.public.json" \
  "$tmp/atk/out/in.proof.json" >/dev/null || fail "snarkjs rejects the generator's proof"
echo "ok: the operator's generator in --wgen-dir proves (snarkjs verifies)"
echo "PASS: wgen_place"
