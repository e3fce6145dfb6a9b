#!/usr/bin/env bash
# Issue 16 item 7, "no owners": every job and preload records the uid that submitted
# it. Two unprivileged users, A (the victim) and B (the attacker), both admitted by
# --group; cuzkd runs as root. As B, with the real client and raw requests, the test
# tries to
#   - cancel A's job, evict A's preload and root's preload (refused: "not_owner"),
#   - restart a stage, drain, shut down (refused: "not_permitted"),
#   - fill the job table, the queue and the preload slots (refused: "quota", with the
#     quota and its value; cuzk exits 24),
# while A and root can still submit. The stages are frozen (SIGSTOP) while the table is
# filled, so that the jobs stay running whatever the machine's speed; then A's jobs
# complete and their proofs verify with snarkjs. `cuzk status --json` shows each job's
# owner, and so does plain `cuzk status`. SKIP (77) when not root.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
daemon_init secown
attacker_init # B: $atk, $ATTACKER_UID
victim_init   # A: $VICTIM, $vuid
usermod -a -G "$atk" "$VICTIM" || {
  echo "SKIP: usermod failed"
  exit 77
}
F="$FIXTURES/bn128/mulchain-10"
daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16 --group "$atk" \
  --quota-jobs 2 --quota-partitions 4 --quota-preloads 1 --stall-timeout 0
attacker_reach

# Each user's own tree: the client, a zkey, witnesses, an out dir (the checkout may not
# be readable by other users in CI). The zkeys are distinct files: distinct preloads.
tree() { # user dir
  mkdir -p "$2/in" "$2/out"
  install -m 0755 "$BUILD/bin/cuzk" "$2/cuzk"
  cp "$F/circuit_final.zkey" "$2/in/c.zkey"
  cp "$F/circuit_final.zkey" "$2/in/d.zkey"
  for i in 1 2 3 4 5; do cp "$F/witness.wtns" "$2/in/w$i.wtns"; done
  chown -R "$1:$1" "$2"
}
A="$tmp/A" B="$tmp/B" R="$tmp/R"
tree "$VICTIM" "$A"
tree "$atk" "$B"
tree root "$R"
as() {
  local u="$1"
  shift
  runuser -u "$u" -- "$@"
}
ucuzk() {
  local u="$1" d="$2"
  shift 2
  as "$u" "$d/cuzk" --instance "$inst" --run-dir "$run" "$@"
}
acuzk() { ucuzk "$VICTIM" "$A" "$@"; }
bcuzk() { ucuzk "$atk" "$B" "$@"; }
bsend() { as_attacker bash -c "$(declare -f send send_fds); run='$run' inst='$inst' send \"\$@\"" _ "$@"; }
refused_with() { # code what reply: the reply is a refusal with that error code
  local code="$1" what="$2" r="$3"
  [ "$(js 'r.ok === false && r.error' "$r")" = "$code" ] || fail "$what: not refused with \"$code\": $r"
  echo "ok: $what refused ($code): $(js r.message "$r")"
}

# ---- preloads: A's and root's are not B's to evict; B's own quota ----------------
acuzk preload "$A/in/c.zkey" >/dev/null || fail "A's preload"
cuzk preload "$R/in/c.zkey" >/dev/null || fail "root's preload"
refused_with not_owner "B evicting A's preload" "$(bsend "{\"req\":\"evict\",\"zkey\":\"$A/in/c.zkey\"}")"
refused_with not_owner "B evicting root's preload" "$(bsend "{\"req\":\"evict\",\"zkey\":\"$R/in/c.zkey\"}")"
r="$(bcuzk evict "$A/in/c.zkey" 2>&1)" && fail "B's cuzk evict of A's preload succeeded: $r"
grep -q not_owner <<<"$r" || fail "cuzk evict as B: $r"
bcuzk preload "$B/in/c.zkey" >/dev/null || fail "B's own preload"
rc=0
r="$(bcuzk --json preload "$B/in/d.zkey" 2>&1)" || rc=$?
refused_with quota "B's second preload (--quota-preloads 1)" "$r"
[ $rc -eq 24 ] || fail "cuzk exit code for a quota refusal: $rc, expected 24"
grep -q -- "--quota-preloads 1" <<<"$r" || fail "the quota refusal does not name the quota: $r"
bcuzk evict "$B/in/c.zkey" >/dev/null || fail "B evicting its own preload"
n="$(cuzk --json status | jq '[.circuits.entries[] | select(.action == "preload")] | length')"
[ "$n" -eq 2 ] || fail "expected A's and root's preloads to remain, found $n: $(cuzk --json status | jq -c .circuits.entries)"
echo "ok: A's and root's preloads are still there; B evicted only its own"

# ---- the operator's requests ------------------------------------------------------
refused_with not_permitted "B restarting a worker" "$(bsend '{"req":"restart","stage":"worker"}')"
refused_with not_permitted "B draining cuzkd" "$(bsend '{"req":"drain"}')"
refused_with not_permitted "B shutting cuzkd down" "$(bsend '{"req":"shutdown"}')"
bcuzk shutdown >/dev/null 2>&1 && fail "cuzk shutdown as B succeeded"
st="$(cuzk --json status)"
[ "$(jq -r .draining <<<"$st")" = false ] || fail "cuzkd is draining after B's requests"
[ "$(jq '[.children[] | select(.restarts > 0)] | length' <<<"$st")" -eq 0 ] || fail "a stage was restarted: $st"

# ---- jobs: freeze the stages so that every job stays running --------------------
freeze_stages
prove() { # user dir witness-names...: submit, print the reply (JSON), keep the exit code
  local u="$1" d="$2" ws=()
  shift 2
  for w in "$@"; do ws+=("$d/in/$w.wtns"); done
  if [ "$u" = root ]; then
    cuzk --json prove --zkey "$d/in/c.zkey" --out "$d/out" "${ws[@]}" 2>&1
  else ucuzk "$u" "$d" --json prove --zkey "$d/in/c.zkey" --out "$d/out" "${ws[@]}" 2>&1; fi
}
r="$(prove "$VICTIM" "$A" w1 w2)" || fail "A's job: $r"
ja="$(js r.job "$r")"
refused_with not_owner "B cancelling A's job $ja" "$(bsend "{\"req\":\"cancel\",\"job\":$ja}")"
r="$(bcuzk cancel "$ja" 2>&1)" && fail "cuzk cancel as B of A's job succeeded: $r"
grep -q not_owner <<<"$r" || fail "cuzk cancel as B: $r"

rc=0
r="$(prove "$atk" "$B" w1 w2 w3 w4 w5)" || rc=$?
refused_with quota "B's job of 5 partitions (--quota-partitions 4)" "$r"
[ $rc -eq 24 ] || fail "cuzk exit code for a quota refusal: $rc, expected 24"
grep -q -- "--quota-partitions 4" <<<"$r" || fail "the refusal does not name the quota: $r"
jb=()
for w in w1 w2 w3 w4 w5; do
  rc=0
  r="$(prove "$atk" "$B" "$w")" || rc=$?
  [ $rc -eq 0 ] || break
  jb+=("$(js r.job "$r")")
done
[ "${#jb[@]}" -eq 2 ] || fail "B got ${#jb[@]} one-partition jobs in, expected 2 (--quota-jobs 2)"
refused_with quota "B's third job (--quota-jobs 2)" "$r"
[ $rc -eq 24 ] || fail "cuzk exit code for a quota refusal: $rc, expected 24"
grep -q -- "--quota-jobs 2" <<<"$r" || fail "the refusal does not name the quota: $r"
r="$(prove "$VICTIM" "$A" w3)" || fail "A's second job while B is at its quota: $r"
ja2="$(js r.job "$r")"
r="$(prove root "$R" w1 w2 w3)" || fail "root's job while B is at its quota: $r"
jr="$(js r.job "$r")"
echo "ok: A (job $ja2) and root (job $jr) still submit while B is at its quota"

st="$(cuzk --json status)"
owner() { jq -r --argjson j "$1" '.jobs[] | select(.id == $j) | .owner' <<<"$st"; }
[ "$(owner "$ja")" = "$vuid" ] && [ "$(owner "$ja2")" = "$vuid" ] || fail "A's jobs' owner: $st"
[ "$(owner "${jb[0]}")" = "$ATTACKER_UID" ] && [ "$(owner "${jb[1]}")" = "$ATTACKER_UID" ] || fail "B's jobs' owner: $st"
[ "$(owner "$jr")" = 0 ] || fail "root's job's owner: $st"
echo "ok: status --json shows each job's owner (A $vuid, B $ATTACKER_UID, root 0)"
plain="$(cuzk status)"
for j in "$ja" "$ja2"; do grep -qE "^  job $j .* owner $VICTIM \($vuid\)" <<<"$plain" || fail "plain status, A's job $j: $plain"; done
grep -qE "^  job ${jb[0]} .* owner $atk \($ATTACKER_UID\)" <<<"$plain" || fail "plain status, B's job: $plain"
grep -qE "^  job $jr .* owner root \(0\)" <<<"$plain" || fail "plain status, root's job: $plain"
echo "ok: plain status shows each job's owner too (name and uid)"

# ---- thaw: A's work completes and verifies -------------------------------------
thaw
for j in "$ja" "$ja2" "$jr" "${jb[@]}"; do
  r="$(timeout 300 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" --json wait "$j")" || fail "job $j: $r"
  [ "$(jq -r .job.state <<<"$r")" = "done" ] || fail "job $j ended $(jq -c .job <<<"$r")"
done
for d in "$A" "$R"; do
  for p in "$d/out"/*.proof.json; do
    w="$(basename "$p" .proof.json)"
    "$SNARKJS" groth16 verify "$F/verification_key.json" "$d/out/$w.public.json" "$d/out/$w.proof.json" 2>&1 | grep -q OK ||
      fail "snarkjs rejects $d/out/$w"
  done
done
[ "$(dir_count "$A/out" '[!.]*.proof.json')" -eq 3 ] || fail "A's proofs: $(dir_list "$A/out" '[!.]*' | tr '\n' ' ')"
echo "ok: A's 3 proofs and root's 3 verify with snarkjs; B's own jobs ran too"
# A may cancel its own (decided) job: the owner is let through.
r="$(acuzk --json cancel "$ja")" || fail "A cancelling its own job: $r"
kill -0 "$daemon_pid" 2>/dev/null || fail "cuzkd died"
daemon_stop
