#!/usr/bin/env bash
# Random kills: a backlog of jobs over two circuits (>= 24 partitions, --devices cpu:2)
# while a driver SIGKILLs a randomly chosen stage process at random times (>= KILLS
# kills, every stage kind hit). At the end: every partition DONE with exactly one
# proof/public pair, snarkjs accepts every proof, nothing else in the out dirs, the
# pool's in-use count back to 0, every stage running again, and after shutdown no
# process or segment left.
#   KILLS (default 12)  DURATION (seconds of killing, default 0 = until KILLS reached)
#   PARTS (partitions per job, default 12)  SEED (RANDOM seed)
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
KILLS="${KILLS:-12}"
DURATION="${DURATION:-0}"
PARTS="${PARTS:-12}"
RANDOM="${SEED:-$$}"
MAX_S="${MAX_S:-$((DURATION > 90 ? DURATION + 60 : 150))}" # give up killing after this long (fails)
daemon_init rk

t0=$(date +%s)
# An external kill -9 counts a try against the partitions the stage held (like any
# crash): with 12 random kills one partition may be held at 3 of them. These kills are
# the test's, not the partitions' fault, and every partition must end DONE: a high
# --max-attempts keeps them from being poisoned.
daemon_start --devices cpu:2 --buffers 6 --buffer-mb 16 --max-attempts 1000
fx=(bn128 bn128-chain)
jobs=() jobfx=() waiters=() checked=()
round=0
submit_job() { # fixture name: submit, and wait for it in the background (a waiting
  # connection also keeps the decided job from being retired)
  local id
  id="$(submit_copies "$1" "$PARTS" "$2")"
  jobs+=("$id")
  jobfx+=("$1:$2")
  timeout 400 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json wait "$id" \
    >"$tmp/wait.$id" 2>&1 &
  waiters+=($!)
  checked+=(0)
}
total=0
check_job() { # index: its waiter has exited; the job must be DONE, every partition DONE
  local i="$1" id="${jobs[$1]}" r st nd
  wait "${waiters[$i]}" || fail "job $id (${jobfx[$i]}) did not finish: $(cat "$tmp/wait.$id")"
  r="$(cat "$tmp/wait.$id")"
  st="$(jq -r .job.state <<<"$r")"
  [ "$st" = "done" ] || fail "job $id (${jobfx[$i]}) ended $st: $(jq -c '.job.parts[] | select(.state != "done")' <<<"$r")"
  nd="$(jq '[.job.parts[] | select(.state == "done")] | length' <<<"$r")"
  [ "$nd" -eq "$PARTS" ] || fail "job $id: $nd of $PARTS partitions done"
  total=$((total + nd))
  checked[i]=1
}
reap_jobs() { # check the jobs whose waiters have exited (keeps connections few in a soak)
  for i in "${!jobs[@]}"; do
    # the reply is written when the waiter ends (kill -0 would see its zombie)
    [ "${checked[$i]}" -eq 0 ] && [ -s "$tmp/wait.${jobs[$i]}" ] && check_job "$i"
  done
  return 0
}
submit_round() { # one job per circuit
  for k in 0 1; do submit_job "${fx[$k]}" "r${round}j$k"; done
  round=$((round + 1))
}
submit_round
submit_round
declare -A hit=([synth]=0 [gpuworker]=0 [finalizer]=0)
kinds=(synth gpuworker finalizer)
kills=0
running() { # how many jobs are still running
  cuzk --json status | jq '[.jobs[] | select(.state == "running")] | length'
}
while :; do
  now=$(date +%s)
  if [ "$DURATION" -gt 0 ]; then
    [ $((now - t0)) -ge "$DURATION" ] && [ "$kills" -ge "$KILLS" ] && break
  else
    [ "$kills" -ge "$KILLS" ] && [ "${hit[synth]}" -gt 0 ] && [ "${hit[gpuworker]}" -gt 0 ] &&
      [ "${hit[finalizer]}" -gt 0 ] && break
  fi
  [ $((now - t0)) -lt "$MAX_S" ] || fail "only $kills kill(s) in $MAX_S s"
  # keep a backlog: kills must land on busy stages
  reap_jobs
  [ "$(running)" -ge 2 ] || submit_round
  sleep "$(awk -v r="$RANDOM" 'BEGIN{printf "%.2f", 0.1 + (r % 80) / 100.0}')"
  # a kind not hit yet first, else any
  k=""
  for c in "${kinds[@]}"; do [ "${hit[$c]}" -eq 0 ] && {
    k=$c
    break
  }; done
  [ -n "$k" ] && [ $((RANDOM % 2)) -eq 0 ] || k="${kinds[$((RANDOM % 3))]}"
  mapfile -t pids < <(stage_pids "$k")
  [ ${#pids[@]} -gt 0 ] || continue # restarting (back-off)
  p="${pids[$((RANDOM % ${#pids[@]}))]}"
  if kill -KILL "$p" 2>/dev/null; then
    kills=$((kills + 1))
    hit[$k]=$((hit[$k] + 1))
    echo "kill $kills: $k pid $p at +$(($(date +%s) - t0)) s"
  fi
done
t_kill=$(date +%s)
echo "killing done: $kills kills (synth ${hit[synth]}, worker ${hit[gpuworker]}, finalizer ${hit[finalizer]}) in $((t_kill - t0)) s, $round round(s) of jobs"

# every job ends DONE, every partition DONE
for i in "${!jobs[@]}"; do [ "${checked[$i]}" -eq 1 ] || check_job "$i"; done
t_done=$(date +%s)
echo "all ${#jobs[@]} jobs done: $total partitions in $((t_done - t0)) s"

# the pool drains back to 0 buffers in use
u=""
for _ in $(seq 1 50); do
  u="$(pool_in_use)"
  [ "$u" = 0 ] && break
  sleep 0.1
done
[ "$u" = 0 ] || fail "pool in-use count is $u after every job finished"
# every stage is back (restarts may still be backing off: allow 35 s)
for _ in $(seq 1 350); do
  down="$(cuzk --json status | jq '[.children[] | select(.pid == 0)] | length')"
  [ "$down" -eq 0 ] && break
  sleep 0.1
done
[ "$down" -eq 0 ] || fail "$down stage(s) not running again"

for j in "${jobfx[@]}"; do check_out_files "${j#*:}" "$PARTS"; done
for f in "${fx[@]}"; do
  js=()
  for j in "${jobfx[@]}"; do [ "${j%%:*}" = "$f" ] && js+=("${j#*:}"); done
  verify_jobs "$f" "${js[@]}"
done
echo "ok: $total proofs verified by snarkjs, one per partition, no stray file"
daemon_shutdown_clean
echo "ok: $kills kills survived ($((t_done - t0)) s to finish, $(($(date +%s) - t0)) s in all); no orphan process or segment"
