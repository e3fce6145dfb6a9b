#!/usr/bin/env bash
# Issue 16 item 2 across a restart (the job store of issue 17): a resumed job cannot use
# the descriptors its client passed (they died with the previous cuzkd), so it reopens
# its files by the paths the client named. Those are the client's words: the attacker
# passes its own witness's descriptor under the name of root's 0600 witness in a 0700
# directory, and swaps its second witness's path for another file, then cuzkd is
# killed and started again on the same store. No such path may be opened as a file of
# the job: resume reopens a path only while it names the file passed (the identity the
# store recorded), else the job's unfinished partitions fail with the reason; cuzkd
# stays up, and what was proved before the kill verifies.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
daemon_init secres
attacker_init
A="$FIXTURES/bn128/mulchain-10"
daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16 --group "$atk"
attacker_reach
mkdir -p "$tmp/atk/in" "$tmp/atk/out"
cp "$A/circuit_final.zkey" "$tmp/atk/in/c.zkey"
for w in a b c; do cp "$A/witness.wtns" "$tmp/atk/in/$w.wtns"; done
chown -R "$atk:$atk" "$tmp/atk"
mkdir -m 0700 "$tmp/private"
cp "$A/witness.wtns" "$tmp/private/secret.wtns"; chmod 0600 "$tmp/private/secret.wtns"
asend_fds() { as_attacker bash -c "$(declare -f send_fds); run='$run' inst='$inst' send_fds \"\$@\"" _ "$@"; }

# Nothing is proved before the kill: the worker is stopped first (a SIGKILL still ends
# it when cuzkd dies).
wpid=""
for _ in $(seq 1 100); do
  wpid="$(js '(r.children.find(c=>c.stage=="worker")||{}).pid||""' "$(cuzk --json status)")"
  [ -n "$wpid" ] && [ "$wpid" != 0 ] && break; sleep 0.1
done
[ -n "$wpid" ] && [ "$wpid" != 0 ] || fail "no worker"
kill -STOP "$wpid"
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
kill -KILL "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true; daemon_pid=""
for _ in $(seq 1 250); do [ -z "$(pgrep -f -- "--instance $inst " || true)" ] && break; sleep 0.02; done
before="$(cd "$tmp/atk/out" && { ls -- *.proof.json 2>/dev/null || true; } | sed 's/\.proof\.json$//' | tr '\n' ' ')"
echo "killed cuzkd; proofs published before: ${before:-none}"
mv "$tmp/cuzkd.log" "$tmp/cuzkd.1.log"
chmod 0750 "$run" # attacker_reach opened it; cuzkd refuses a run dir open to others
rm -f "$run/$inst.sock" # daemon_start waits for the new one
daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16 --group "$atk"
attacker_reach
res="$(timeout 120 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json wait "$job" 2>&1)" || true
kill -0 "$daemon_pid" 2>/dev/null || fail "cuzkd died"
grep -q "resumed from the job store" "$tmp/cuzkd.log" || fail "job $job was not resumed: $(tail -5 "$tmp/cuzkd.log")"
grep -q "no longer the file submitted\|gone or not a regular file" "$tmp/cuzkd.log" || fail "no refusal of the swapped paths logged"
# Nothing is proved after the resume from what a path names now: each partition not
# published before the kill is failed, with the reason.
for n in c b secret; do
  case " $before " in *" $n "*) echo "ok: $n was proved before the kill (from the descriptor passed)"; continue ;; esac
  st="$(jq -r --arg n "$n" '.job.parts[] | select(.name == $n) | .state' <<<"$res")"
  why="$(jq -r --arg n "$n" '.job.parts[] | select(.name == $n) | .reason // ""' <<<"$res")"
  [ "$st" = failed ] || fail "partition $n ended $st after the resume: $res"
  [ ! -e "$tmp/atk/out/$n.public.json" ] || fail "$n.public.json written after the resume"
  grep -q "no longer the file submitted\|gone or not a regular file" <<<"$why" || fail "$n: reason: $why"
  echo "ok: $n not resumed: $why"
done
for n in $before; do
  "$SNARKJS" groth16 verify "$A/verification_key.json" "$tmp/atk/out/$n.public.json" "$tmp/atk/out/$n.proof.json" 2>&1 \
    | grep -q OK || fail "snarkjs rejects $n"
done
res1="$(timeout 120 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json wait "$job1" 2>&1)" || true
case " $before " in
  *" s1 "*) echo "note: s1 was proved before the kill (from the descriptor passed); its resume not tested" ;;
  *) st="$(jq -r '.job.parts[0].state' <<<"$res1")"; why="$(jq -r '.job.parts[0].reason // ""' <<<"$res1")"
     [ "$st" = failed ] || fail "s1 (root's path as a name) ended $st after the resume: $res1"
     grep -q "no longer the file submitted" <<<"$why" || fail "s1: reason: $why"
     [ ! -e "$tmp/atk/out/s1.public.json" ] || fail "s1.public.json written after the resume"
     echo "ok: a witness passed under root's path is not reopened by that path: $why" ;;
esac
echo "ok: after the restart no path the client named was used as one of its files"
daemon_stop
