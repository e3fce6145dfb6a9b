#!/usr/bin/env bash
# Names a user gives are shown escaped. The attacker names its partitions with a
# right-to-left override (U+202E: "a<RLO>nosj.foorp" reads as another name) and a C1
# control (U+0085, NEL) and its out dir with U+202E too; both are valid file names and
# the job proves (snarkjs verifies). Neither character may reach root's terminal or
# cuzkd's log raw: `cuzk status` shows \u202e and \u0085, `cuzk --json status` is pure
# ASCII (the characters as JSON \u escapes), and cuzkd's log has no such byte.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
attack_daemon secname mulchain-10
RLO=$'\xe2\x80\xae' NEL=$'\xc2\x85'
od="$tmp/atk/o${RLO}ut"
mkdir -p "$tmp/atk/in" "$od"
cp "$A/circuit_final.zkey" "$tmp/atk/in/c.zkey"
cp "$A/witness.wtns" "$tmp/atk/in/w.wtns"
chown -R "$atk:$atk" "$tmp/atk"
r="$(asend_fds "{\"req\":\"submit\",\"fds\":3,\"zkey\":{\"fd\":0,\"path\":\"c.zkey\"},\"out_dir\":{\"fd\":1,\"path\":\"$od\"},\"witnesses\":[{\"fd\":2,\"path\":\"w.wtns\",\"name\":\"a${RLO}nosj.foorp\"},{\"fd\":2,\"path\":\"w.wtns\",\"name\":\"b${NEL}x\"}]}" \
  "$tmp/atk/in/c.zkey" "$od" "$tmp/atk/in/w.wtns")"
job="$(js 'r.job' "$r")"
[ -n "$job" ] && [ "$job" != undefined ] || fail "submit: $r"
cuzk wait "$job" >/dev/null 2>&1 || fail "job $job did not prove"
node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" "$A/verification_key.json" \
  "$od" | grep -qx "2 verified" || fail "snarkjs does not verify both proofs"
raw() { LC_ALL=C grep -c $'\xe2\x80\xae\|\xc2\x85' "$1" || true; }
cuzk status >"$tmp/st.txt"
cuzk status "$job" >>"$tmp/st.txt" || true
[ "$(raw "$tmp/st.txt")" = 0 ] || fail "cuzk status shows the raw characters"
grep -qF 'a\u202enosj.foorp' "$tmp/st.txt" && grep -qF 'b\u0085x' "$tmp/st.txt" && grep -qF 'o\u202eut' "$tmp/st.txt" ||
  fail "cuzk status does not show them escaped: $(cat "$tmp/st.txt")"
echo "ok: cuzk status: $(grep -oF 'a\u202enosj.foorp' "$tmp/st.txt" | head -1), $(grep -oF 'b\u0085x' "$tmp/st.txt" | head -1)"
cuzk --json status "$job" >"$tmp/st.json" || true
LC_ALL=C grep -q $'[\x80-\xff]' "$tmp/st.json" && fail "cuzk --json status is not ASCII"
[ "$(jq -r '.job.parts[0].name' "$tmp/st.json")" = "a${RLO}nosj.foorp" ] || fail "the JSON no longer carries the name"
echo "ok: cuzk --json status is ASCII and carries the names exactly"
[ "$(raw "$tmp/cuzkd.log")" = 0 ] || fail "cuzkd's log has the raw characters"
grep -qF 'o\u202eut' "$tmp/cuzkd.log" || fail "cuzkd's log does not name the out dir escaped"
echo "ok: cuzkd's log: $(grep -F 'o\u202eut' "$tmp/cuzkd.log" | head -1 | cut -c1-160)"
daemon_shutdown_clean
echo "PASS: name_display"
