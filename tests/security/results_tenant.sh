#!/usr/bin/env bash
# Jobs whose proofs cuzkd keeps in its job store, against a second, unprivileged user
# B (a real user made for the run, admitted by --group; cuzkd runs as root): B may
# submit such a job by circuit name and fetch its own proofs (snarkjs verifies them),
# but may not name a "tenant" (that is for the API process, which runs as cuzkd's user:
# not_permitted), neither in a submit nor in a status, wait, cancel or proof, may not fetch root's stored proof (not_owner), and may not `cuzk
# reload` the operator's circuits (not_permitted; cuzk exits 21); an idempotency key B
# sends never answers root's job of the same key. SKIP (77) when not root.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
daemon_init secres
attacker_init
F="$FIXTURES/bn128/mulchain-10"
conf="$tmp/cuzkd.conf"
printf 'buffer-mb = 16\n[circuit mul-bn]\nzkey = %s\n' "$F/circuit_final.zkey" >"$conf"
daemon_start --config "$conf" --devices cpu:1 --buffers 4 --group "$atk"
attacker_reach
B="$tmp/B"
mkdir -p "$B"
cp "$F/witness.wtns" "$B/w1.wtns"
install -m 0755 "$BUILD/bin/cuzk" "$B/cuzk"
chown -R "$atk:$atk" "$B"
bcuzk() { as_attacker "$B/cuzk" --instance "$inst" --run-dir "$run" "$@"; }
refused_with() { # code what reply
  [ "$(js 'r.ok === false && r.error' "$3")" = "$1" ] || fail "$2: not refused with \"$1\": $3"
  echo "ok: $2 refused ($1): $(js r.message "$3")"
}
line() { # extra fields of a store submit of B's witness (fd 0)
  echo "{\"req\":\"submit\",\"circuit\":\"mul-bn\",\"fds\":1,\"witnesses\":[{\"fd\":0,\"path\":\"w1.wtns\"}],\"results\":\"store\"$1}"
}

refused_with not_permitted "B naming a tenant" "$(asend_fds "$(line ',"tenant":"acme"')" "$B/w1.wtns")"
r="$(asend_fds "$(line '')" "$B/w1.wtns")"
[ "$(js 'r.ok' "$r")" = true ] || fail "B's own store submit: $r"
jb="$(js 'r.job' "$r")"
bcuzk wait "$jb" >/dev/null || fail "B's job $jb"
bcuzk proof "$jb" 0 --out "$B" >/dev/null || fail "B fetching its own proof"
"$SNARKJS" groth16 verify "$F/verification_key.json" "$B/$jb-0.public.json" "$B/$jb-0.proof.json" 2>&1 | grep -q OK ||
  fail "snarkjs rejects B's stored proof"
echo "ok: B's store job $jb by circuit name; its stored proof fetched by B verifies"

cp "$F/witness.wtns" "$tmp/r1.wtns"
jr="$(js 'r.job' "$(send_fds "$(line ',"tenant":"ops"')" "$tmp/r1.wtns")")"
cuzk wait "$jr" >/dev/null || fail "root's job $jr"
refused_with not_owner "B fetching root's stored proof" \
  "$(as_attacker bash -c "$(declare -f send send_fds); run='$run' inst='$inst' send \"\$@\"" _ "{\"req\":\"proof\",\"job\":$jr,\"index\":0}")"
for q in '"req":"status"' '"req":"wait","timeout_ms":1' '"req":"cancel"' '"req":"proof","index":0'; do
  refused_with not_permitted "B's {$q} naming tenant ops" \
    "$(as_attacker bash -c "$(declare -f send send_fds); run='$run' inst='$inst' send \"\$@\"" _ "{$q,\"job\":$jr,\"tenant\":\"ops\"}")"
done
# Idempotency keys are per tenant, or without one per user: B's key never answers root's job.
sha=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
key=',"idempotency_key":"same","body_sha256":"'$sha'"'
jk="$(js 'r.job' "$(send_fds "$(line "$key")" "$tmp/r1.wtns")")"
r="$(asend_fds "$(line "$key")" "$B/w1.wtns")"
[ "$(js 'r.ok && !r.existing && r.job != '"$jk"'' "$r")" = true ] || fail "B's key \"same\" after root's: $r"
echo "ok: the same idempotency key and body from B and from root: two jobs ($jk, $(js r.job "$r")), each user's own"
rc=0
r="$(bcuzk reload 2>&1)" || rc=$?
[ "$rc" = 21 ] && grep -q not_permitted <<<"$r" || fail "cuzk reload as B: exit $rc: $r"
echo "ok: cuzk reload as B refused (exit 21): $r"
daemon_shutdown_clean
