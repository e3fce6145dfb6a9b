#!/usr/bin/env bash
# Issue 16 item 2 across a restart (the job store of issue 17): a resumed job cannot use
# the descriptors its client passed (they died with the previous cuzkd), and the paths
# the client named are only its words: the attacker passes its own witness's
# descriptor under the name of root's 0600 witness in a 0700 directory (a witness of
# other public signals), and swaps its second witness's path for a symlink to it, then
# cuzkd is killed and started again on the same store. No such path may be opened as a
# file of the job: a resumed job is proved from cuzkd's durable copies of the files the
# client passed (STATE_DIR/INSTANCE.copies, which the attacker cannot read), so every
# partition ends done with the attacker's own public signals, never root's; cuzkd
# stays up, and snarkjs accepts every proof.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
attack_daemon secres mulchain-10
mkdir -p "$tmp/atk/in" "$tmp/atk/out"
cp "$A/circuit_final.zkey" "$tmp/atk/in/c.zkey"
for w in a b c; do cp "$A/witness.wtns" "$tmp/atk/in/$w.wtns"; done
chown -R "$atk:$atk" "$tmp/atk"
mkdir -m 0700 "$tmp/private"
# root's secret: a witness of the same circuit with other public signals (x = 8)
node "$SNARKJS" wtns calculate "$A/circuit_js/circuit.wasm" <(echo '{"x": "8", "k": "1234567"}') \
  "$tmp/private/secret.wtns" >/dev/null 2>&1 || fail "snarkjs wtns calculate"
chmod 0600 "$tmp/private/secret.wtns"
"$BUILD/bin/cuzk" prove-local "$A/circuit_final.zkey" "$A/witness.wtns" "$tmp/own.proof.json" "$tmp/own.public.json" \
  >/dev/null || fail "prove-local of the attacker's witness"
"$BUILD/bin/cuzk" prove-local "$A/circuit_final.zkey" "$tmp/private/secret.wtns" "$tmp/sec.proof.json" \
  "$tmp/sec.public.json" >/dev/null || fail "prove-local of root's witness"
cmp -s "$tmp/own.public.json" "$tmp/sec.public.json" && fail "root's witness has the attacker's public signals"

# Nothing is proved before the kill: the worker is stopped first (a SIGKILL still ends
# it when cuzkd dies).
stop_worker
# Job 1: one partition, the attacker's a.wtns passed under the name of root's witness.
r="$(asend_fds "{\"req\":\"submit\",\"fds\":3,\"zkey\":{\"fd\":0,\"path\":\"$tmp/atk/in/c.zkey\"},\"out_dir\":{\"fd\":1,\"path\":\"$tmp/atk/out\"},\"witnesses\":[{\"fd\":2,\"path\":\"$tmp/private/secret.wtns\",\"name\":\"s1\"}]}" \
  "$tmp/atk/in/c.zkey" "$tmp/atk/out" "$tmp/atk/in/a.wtns")"
grep -q '"ok":true' <<<"$r" || fail "the attacker's first submit: $r"
job1="$(js 'r.job' "$r")"
# Job 2, partitions (in this order): "c" honest; "b" its own b.wtns, whose path is swapped
# for a symlink to root's witness after the submit; "secret": its own a.wtns passed
# under the name of root's witness.
r="$(asend_fds "{\"req\":\"submit\",\"fds\":5,\"zkey\":{\"fd\":0,\"path\":\"$tmp/atk/in/c.zkey\"},\"out_dir\":{\"fd\":1,\"path\":\"$tmp/atk/out\"},\"witnesses\":[{\"fd\":4,\"path\":\"$tmp/atk/in/c.wtns\"},{\"fd\":3,\"path\":\"$tmp/atk/in/b.wtns\"},{\"fd\":2,\"path\":\"$tmp/private/secret.wtns\"}]}" \
  "$tmp/atk/in/c.zkey" "$tmp/atk/out" "$tmp/atk/in/a.wtns" "$tmp/atk/in/b.wtns" "$tmp/atk/in/c.wtns")"
grep -q '"ok":true' <<<"$r" || fail "the attacker's submit: $r"
job="$(js 'r.job' "$r")"
as_attacker rm "$tmp/atk/in/b.wtns"
as_attacker ln -s "$tmp/private/secret.wtns" "$tmp/atk/in/b.wtns"
daemon_kill9 "$wpid"
before="$(cd "$tmp/atk/out" && { ls -- *.proof.json 2>/dev/null || true; } | sed 's/\.proof\.json$//' | tr '\n' ' ')"
echo "killed cuzkd; proofs published before: ${before:-none}"
mv "$tmp/cuzkd.log" "$tmp/cuzkd.1.log"
chmod 0750 "$run"       # attacker_reach opened it; cuzkd refuses a run dir open to others
rm -f "$run/$inst.sock" # daemon_start waits for the new one
daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16 --group "$atk"
attacker_reach
res="$(timeout 120 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json wait "$job" 2>&1)" || true
kill -0 "$daemon_pid" 2>/dev/null || fail "cuzkd died"
grep -q "job $job resumed from the job store" "$tmp/cuzkd.log" || fail "job $job was not resumed: $(tail -5 "$tmp/cuzkd.log")"
# The copies are cuzkd's: the attacker can neither list nor read them.
cdir="$tmp/state/$inst.copies"
[ -n "$(ls -A "$cdir")" ] || fail "no durable copies in $cdir"
as_attacker ls "$cdir" >/dev/null 2>&1 && fail "the attacker can list cuzkd's copies"
for f in "$cdir"/*; do as_attacker head -c1 "$f" >/dev/null 2>&1 && fail "the attacker can read $f"; done
echo "ok: the durable copies ($(dir_count "$cdir" '[!.]*')) are not the attacker's to read"
# Every partition is proved from what the attacker passed, never from what a path names.
resumed() { # name reply: done, with the attacker's own public signals
  local st
  st="$(jq -r --arg n "$1" '.job.parts[] | select(.name == $n) | .state' <<<"$2")"
  [ "$st" = "done" ] || fail "partition $1 ended $st after the resume: $2"
  cmp -s "$tmp/atk/out/$1.public.json" "$tmp/own.public.json" ||
    fail "$1 was proved from another witness: $(cat "$tmp/atk/out/$1.public.json")"
}
for n in c b secret; do
  resumed "$n" "$res"
  case " $before " in *" $n "*) echo "ok: $n was proved before the kill (from the descriptor passed)" ;;
  *) echo "ok: $n resumed from cuzkd's copy of the descriptor passed, not from its path" ;; esac
done
res1="$(timeout 120 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json wait "$job1" 2>&1)" || true
resumed s1 "$res1"
echo "ok: s1, passed under root's path as a name, proved from the attacker's own witness"
for n in c b secret s1; do
  "$SNARKJS" groth16 verify "$A/verification_key.json" "$tmp/atk/out/$n.public.json" "$tmp/atk/out/$n.proof.json" 2>&1 |
    grep -q OK || fail "snarkjs rejects $n"
done
echo "ok: after the restart no path the client named was used as one of its files; snarkjs accepts all 4"
daemon_stop
