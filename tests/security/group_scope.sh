#!/usr/bin/env bash
# A member of cuzkd's group sees only the jobs submitted under their own uid. Members
# reach the control socket (--group) to submit and follow their own jobs, but
# `cuzk status` listed every job of every user and of every API tenant, with its out
# dir, its inputs' names and its failure reasons (which quote input values), and
# `cuzk status ID` / `cuzk wait ID` answered any job. Two real users B and V (members of
# the group, cuzkd runs as root) and root submit; root also submits for an API tenant.
# B's and V's lists hold only their own job, a job of another (another user's, root's,
# a tenant's, live or retired into the job store) answers as one that never was, and
# root still sees every job. Every proof made is checked by snarkjs. SKIP (77) without
# root.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
# Finished jobs stay in the table for the whole test (the default retires them after 30 s).
attack_daemon secscope mulchain-10 --keep-finished 3600
victim_init
sec_user_reaches_tree "$atk"
sec_user_reaches_tree "$VICTIM"
usermod -a -G "$atk" "$VICTIM" || fail "usermod: V into group $atk"
for u in B V; do
  mkdir -p "$tmp/$u/out"
  cp "$A/witness.wtns" "$tmp/$u/w$u.wtns"
  install -m 0755 "$BUILD/bin/cuzk" "$tmp/$u/cuzk"
done
chown -R "$atk:$atk" "$tmp/B"
chown -R "$VICTIM:$VICTIM" "$tmp/V"
mkdir -p "$tmp/root/out"
cp "$A/witness.wtns" "$tmp/root/secret-value-4242.wtns"
ucuzk() { # USER DIR ARGS...
  local u="$1" d="$2"
  shift 2
  runuser -u "$u" -- "$d/cuzk" --instance "$inst" --run-dir "$run" "$@"
}
jr="$(cuzk --json prove --zkey "$A/circuit_final.zkey" --out "$tmp/root/out" "$tmp/root/secret-value-4242.wtns" | jq -r .job)"
jt="$(js 'r.job' "$(send_fds "{\"req\":\"submit\",\"fds\":3,\"tenant\":\"acme\",\"zkey\":{\"fd\":0,\"path\":\"c.zkey\"},\"out_dir\":{\"fd\":1,\"path\":\"$tmp/root/out\"},\"witnesses\":[{\"fd\":2,\"path\":\"tenant-input.wtns\"}]}" \
  "$A/circuit_final.zkey" "$tmp/root/out" "$A/witness.wtns")")"
jb="$(ucuzk "$atk" "$tmp/B" --json prove --zkey "$A/circuit_final.zkey" --out "$tmp/B/out" "$tmp/B/wB.wtns" | jq -r .job)"
jv="$(ucuzk "$VICTIM" "$tmp/V" --json prove --zkey "$A/circuit_final.zkey" --out "$tmp/V/out" "$tmp/V/wV.wtns" | jq -r .job)"
for j in "$jr" "$jt" "$jb" "$jv"; do
  [[ "$j" =~ ^[0-9]+$ ]] || fail "a submit failed: job '$j'"
  cuzk wait "$j" >/dev/null || fail "job $j did not prove"
done
for v in "root/out/secret-value-4242" "root/out/tenant-input" "B/out/wB" "V/out/wV"; do
  "$SNARKJS" groth16 verify "$A/verification_key.json" "$tmp/$v.public.json" "$tmp/$v.proof.json" | grep -q OK ||
    fail "snarkjs rejects $v's proof"
done
echo "ok: jobs $jr (root), $jt (tenant acme), $jb (B), $jv (V) proved; snarkjs verifies all four"

# who dir own others...
sees_only() {
  local u="$1" d="$2" own="$3" ids j st
  shift 3
  ids="$(ucuzk "$u" "$d" --json status | jq -r '[.jobs[].id] | sort | join(" ")')"
  [ "$ids" = "$own" ] || fail "$u's cuzk status lists jobs '$ids', not only its own ($own)"
  ucuzk "$u" "$d" status | grep -q secret-value && fail "$u's cuzk status shows root's input's name"
  for j in "$@"; do
    st="$(ucuzk "$u" "$d" --json status "$j" 2>&1 || true)"
    [ "$(js 'r.error' "$st")" = no_such_job ] || fail "$u's cuzk status $j (another's job): $st"
    st="$(ucuzk "$u" "$d" --json wait "$j" 2>&1 || true)"
    [ "$(js 'r.error' "$st")" = no_such_job ] || fail "$u's cuzk wait $j (another's job): $st"
  done
  st="$(ucuzk "$u" "$d" --json status "$own")"
  [ "$(js 'r.job.id' "$st")" = "$own" ] || fail "$u's cuzk status $own (its own): $st"
  echo "ok: $u sees its own job $own alone; $* answer as no job"
}
sees_only "$atk" "$tmp/B" "$jb" "$jr" "$jt" "$jv"
sees_only "$VICTIM" "$tmp/V" "$jv" "$jr" "$jt" "$jb"
all="$(cuzk --json status | jq -r '[.jobs[].id] | sort_by(tonumber) | join(" ")')"
[ "$all" = "$(printf '%s\n' "$jr" "$jt" "$jb" "$jv" | sort -n | tr '\n' ' ' | sed 's/ $//')" ] ||
  fail "root's cuzk status lists '$all', not every job"
echo "ok: root sees every job: $all"

# Retired into the job store: a stored job answers only its owner (and root) too.
daemon_stop
chmod 0750 "$run" # attacker_reach opened it to others; cuzkd refuses such a run dir
daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16 --group "$atk"
attacker_reach
st="$(cuzk --json status "$jr")"
[ "$(js 'r.job.id' "$st")" = "$jr" ] || fail "root's status of its stored job $jr: $st"
st="$(ucuzk "$atk" "$tmp/B" --json status "$jr" 2>&1 || true)"
[ "$(js 'r.error' "$st")" = no_such_job ] || fail "B's status of root's stored job $jr: $st"
st="$(ucuzk "$atk" "$tmp/B" --json status "$jb" 2>&1 || true)"
[ "$(js 'r.job.id' "$st")" = "$jb" ] || fail "B's status of its own stored job $jb: $st"
echo "ok: after a restart, root's stored job $jr answers B as no job; B's own ($jb) answers B"
daemon_stop
echo "PASS: group_scope"
