#!/usr/bin/env bash
# The out dir is judged with the user's real rights, ACLs included. Two directories
# of root's, each with a POSIX access ACL (written as the kernel's xattr, as setfacl
# would):
#   1. mode 0777 (anyone may write, by the mode bits) but "user:ATTACKER:---": the
#      kernel stops the attacker there. Before, cuzkd (root) read the bits only and
#      wrote the attacker's proof there; now the submit is refused "permission".
#   2. mode 0755 but "user:ATTACKER:rwx": the kernel lets the attacker write. It was
#      refused before; now the job proves there (snarkjs verifies).
# SKIP (77) where the file system keeps no ACLs.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
attack_daemon secacl mulchain-10
mkdir -p "$tmp/atk/in"
cp "$A/circuit_final.zkey" "$tmp/atk/in/c.zkey"
cp "$A/witness.wtns" "$tmp/atk/in/w.wtns"
install -m 0755 "$BUILD/bin/cuzk" "$tmp/atk/cuzk"
chown -R "$atk:$atk" "$tmp/atk"
mkdir -m 0777 "$tmp/deny"
mkdir -m 0755 "$tmp/grant"
setacl() { # dir, then tag:perm:id triples in the kernel's order
  python3 - "$@" <<'PY'
import os, struct, sys
tags = {"user_obj": 1, "user": 2, "group_obj": 4, "group": 8, "mask": 16, "other": 32}
b = struct.pack("<I", 2)
for e in sys.argv[2:]:
    t, p, i = e.split(":")
    b += struct.pack("<HHI", tags[t], int(p), int(i) if i else 0xffffffff)
os.setxattr(sys.argv[1], "system.posix_acl_access", b)
PY
}
setacl "$tmp/deny" user_obj:7: user:0:"$ATTACKER_UID" group_obj:7: mask:7: other:7: 2>"$tmp/acl.err" ||
  {
    echo "SKIP: this file system keeps no POSIX ACLs ($(tail -1 "$tmp/acl.err"))"
    exit 77
  }
setacl "$tmp/grant" user_obj:7: user:7:"$ATTACKER_UID" group_obj:5: mask:7: other:5:
# The kernel's word first: the ACLs do what they say.
as_attacker touch "$tmp/deny/probe" 2>/dev/null && fail "the deny ACL does not stop the attacker (kernel)"
as_attacker touch "$tmp/grant/probe" || fail "the grant ACL does not let the attacker write (kernel)"
rm -f "$tmp/grant/probe"
echo "ok: the kernel: deny stops the attacker, grant lets it write"
acuzk() { as_attacker "$tmp/atk/cuzk" --instance "$inst" --run-dir "$run" "$@"; }
r="$(acuzk prove --zkey "$tmp/atk/in/c.zkey" --out "$tmp/deny" --wait "$tmp/atk/in/w.wtns" 2>&1)" &&
  fail "a proof into a directory whose ACL denies the attacker: accepted: $r"
grep -q "may not create files" <<<"$r" || fail "not refused for the right reason: $r"
[ -z "$(ls -A "$tmp/deny")" ] || fail "something was written into the denying directory: $(ls -A "$tmp/deny")"
echo "ok: ACL deny: refused: $(grep -o 'out_dir.*' <<<"$r" | head -1)"
acuzk prove --zkey "$tmp/atk/in/c.zkey" --out "$tmp/grant" --wait "$tmp/atk/in/w.wtns" >/dev/null 2>&1 ||
  fail "a proof into a directory whose ACL grants the attacker: refused"
"$SNARKJS" groth16 verify "$A/verification_key.json" "$tmp/grant/w.public.json" "$tmp/grant/w.proof.json" >/dev/null ||
  fail "snarkjs rejects the proof"
echo "ok: ACL grant: proved there (snarkjs verifies)"
daemon_shutdown_clean
echo "PASS: acl_outdir"
