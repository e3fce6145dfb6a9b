#!/usr/bin/env bash
# A resumed job's failure reason is no oracle. A resumed job reopens its out dir by
# the path its client named (a display name only, opened with cuzkd's rights) and
# fails when that is not the directory passed. The attacker names, for its own out
# dir, "$tmp/z/there" (a directory in root's 0700 z) in one job and "$tmp/z/absent" in
# another; cuzkd is killed and started again, and both jobs fail. Before, the reasons
# differed ("... another directory now" against "No such file or directory"), telling
# the attacker what exists under root's directory; now they are the same sentence but
# for the path, and say neither. cuzkd stays up, and an honest job still proves.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
attack_daemon secorc mulchain-10
mkdir -p "$tmp/atk/in" "$tmp/atk/out"
cp "$A/circuit_final.zkey" "$tmp/atk/in/c.zkey"
cp "$A/witness.wtns" "$tmp/atk/in/w.wtns"
install -m 0755 "$BUILD/bin/cuzk" "$tmp/atk/cuzk" # the build tree may be out of the attacker's reach
chown -R "$atk:$atk" "$tmp/atk"
mkdir -m 0700 "$tmp/z"
mkdir "$tmp/z/there"
stop_worker
jobs=()
for p in there absent; do
  r="$(asend_fds "{\"req\":\"submit\",\"fds\":3,\"zkey\":{\"fd\":0,\"path\":\"c.zkey\"},\"out_dir\":{\"fd\":1,\"path\":\"$tmp/z/$p\"},\"witnesses\":[{\"fd\":2,\"path\":\"w.wtns\",\"name\":\"$p\"}]}" \
    "$tmp/atk/in/c.zkey" "$tmp/atk/out" "$tmp/atk/in/w.wtns")"
  grep -q '"ok":true' <<<"$r" || fail "the attacker's submit ($p): $r"
  jobs+=("$(js 'r.job' "$r")")
done
daemon_kill9 "$wpid"
mv "$tmp/cuzkd.log" "$tmp/cuzkd.1.log"
chmod 0750 "$run"
rm -f "$run/$inst.sock"
daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16 --group "$atk"
attacker_reach
reason() { # job: its partition's reason, as the attacker reads it, the path made P
  as_attacker "$tmp/atk/cuzk" --instance "$inst" --run-dir "$run" --json wait "${jobs[$1]}" >/dev/null 2>&1 || true
  { as_attacker "$tmp/atk/cuzk" --instance "$inst" --run-dir "$run" --json status "${jobs[$1]}" || true; } |
    jq -r '.job.parts[0].state + ": " + (.job.parts[0].reason // "")' | sed "s#$tmp/z/[a-z]*#P#g"
}
r0="$(reason 0)"
r1="$(reason 1)"
echo "there:  $r0"
echo "absent: $r1"
grep -q '^failed: ' <<<"$r0" && grep -q '^failed: ' <<<"$r1" || fail "the resumed jobs did not fail"
[ "$r0" = "$r1" ] || fail "the reasons differ: they tell whether a path under root's 0700 directory exists"
grep -qi "no such file\|another directory\|permission denied" <<<"$r0" && fail "the reason says what the path is: $r0"
echo "ok: both reasons read the same"
mkdir -p "$tmp/rootout"
cuzk prove --zkey "$A/circuit_final.zkey" --out "$tmp/rootout" --wait "$A/witness.wtns" >/dev/null || fail "an honest job after the resume"
"$SNARKJS" groth16 verify "$A/verification_key.json" "$tmp/rootout/witness.public.json" "$tmp/rootout/witness.proof.json" >/dev/null ||
  fail "snarkjs rejects the honest proof"
echo "ok: cuzkd stays up: an honest job proves (snarkjs verifies)"
daemon_shutdown_clean
echo "PASS: resume_oracle"
