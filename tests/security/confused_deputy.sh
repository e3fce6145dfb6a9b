#!/usr/bin/env bash
# Issue 16 item 2: the confused deputy. cuzkd runs as root here; the attacker is an
# admitted (--group) but unprivileged user. With the real client and with raw requests
# it tries to make cuzkd
#   - write a proof into a directory only root may write (0755, root's),
#   - replace root's proof in root's directory, and in a sticky (1777) one,
#   - give it the public signals of root's 0600 witness in a 0700 directory,
#   - tell it whether a path it cannot see exists (the error text as an oracle).
# Each must fail; the attacker's own job (its files, its out dir) must still prove, and
# root's proofs stay as they were. Every proof made is verified with snarkjs.
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$(dirname "$0")/lib.sh"
attack_daemon secdep mulchain-10

# The attacker's own tree: the client binary and its inputs (the checkout may not be
# readable by other users in CI).
mkdir -p "$tmp/atk/in" "$tmp/atk/out"
install -m 0755 "$BUILD/bin/cuzk" "$tmp/atk/cuzk"
cp "$A/circuit_final.zkey" "$tmp/atk/in/c.zkey"
cp "$A/witness.wtns" "$tmp/atk/in/w.wtns"
chown -R "$atk:$atk" "$tmp/atk"
acuzk() { as_attacker "$tmp/atk/cuzk" --instance "$inst" --run-dir "$run" "$@"; }
# Raw requests with descriptors, opened as the attacker (tests/lib/daemon.sh send_fds).
asend() { as_attacker bash -c "$(declare -f send send_fds); run='$run' inst='$inst' send \"\$@\"" _ "$@"; }

# Root's files.
mkdir -m 0755 "$tmp/rootonly" # root's, no write for others
mkdir -m 0755 "$tmp/rootout"
printf 'ROOTS PROOF\n' >"$tmp/rootout/w.proof.json"
printf 'ROOTS PUBLIC\n' >"$tmp/rootout/w.public.json"
mkdir -m 1777 "$tmp/shared" # sticky, writable by all
printf 'ROOTS PROOF\n' >"$tmp/shared/w.proof.json"
printf 'ROOTS PUBLIC\n' >"$tmp/shared/w.public.json"
mkdir -m 0700 "$tmp/private"
cp "$A/witness.wtns" "$tmp/private/secret.wtns"
chmod 0600 "$tmp/private/secret.wtns"

refused() { # what, output...: the attempt must have failed with a refusal
  local what="$1"
  shift
  grep -q '"ok":false\|cuzk: ' <<<"$*" || fail "$what: not refused: $*"
  echo "ok: $what refused: $(grep -o '"message":"[^"]*"\|cuzk: .*' <<<"$*" | head -1)"
}

# 1. A proof into root's 0755 directory: the client can open it (search rights), but
#    cuzkd checks the attacker could create files there itself.
r="$(acuzk prove --zkey "$tmp/atk/in/c.zkey" --out "$tmp/rootonly" --wait "$tmp/atk/in/w.wtns" 2>&1)" && fail "proof into root's dir accepted: $r"
refused "a proof into root's 0755 directory" "$r"
grep -q "may not create files" <<<"$r" || fail "the refusal does not say why: $r"
r="$(asend_fds '{"req":"submit","fds":3,"zkey":{"fd":0,"path":"c.zkey"},"out_dir":{"fd":1,"path":"/tmp"},"witnesses":[{"fd":2,"path":"w.wtns"}]}' \
  "$tmp/atk/in/c.zkey" "$tmp/rootonly" "$tmp/atk/in/w.wtns")"
refused "the same, raw, with a harmless display path" "$r"

# 2. Replace root's proof: in root's directory, and in a sticky shared one.
r="$(acuzk prove --zkey "$tmp/atk/in/c.zkey" --out "$tmp/rootout" --wait "$tmp/atk/in/w.wtns" 2>&1)" && fail "overwrite in root's dir accepted: $r"
refused "replacing root's proof in root's directory" "$r"
r="$(acuzk prove --zkey "$tmp/atk/in/c.zkey" --out "$tmp/shared" --wait "$tmp/atk/in/w.wtns" 2>&1)" && fail "overwrite in a sticky dir accepted: $r"
refused "replacing root's proof in a sticky directory" "$r"
grep -q "another user's file" <<<"$r" || fail "the sticky refusal does not say why: $r"
for d in rootout shared; do
  [ "$(cat "$tmp/$d/w.proof.json")" = "ROOTS PROOF" ] && [ "$(cat "$tmp/$d/w.public.json")" = "ROOTS PUBLIC" ] ||
    fail "root's proof in $d was replaced"
done
[ -z "$(ls -A "$tmp/rootonly")" ] || fail "files appeared in root's directory: $(ls -A "$tmp/rootonly")"
echo "ok: root's files unchanged, nothing written into root's directory"

# 3. Root's 0600 witness in a 0700 directory: the client cannot open it; a raw request
#    naming its path gets no file opened (paths are refused outright).
r="$(acuzk prove --zkey "$tmp/atk/in/c.zkey" --out "$tmp/atk/out" --wait "$tmp/private/secret.wtns" 2>&1)" && fail "root's witness accepted: $r"
refused "root's 0600 witness through the client" "$r"
r="$(asend "{\"req\":\"submit\",\"zkey\":\"$tmp/atk/in/c.zkey\",\"out_dir\":\"$tmp/atk/out\",\"witnesses\":[\"$tmp/private/secret.wtns\"]}")"
refused "root's 0600 witness by path, raw" "$r"
# ... nor by handing over a descriptor of the attacker's own file under root's path name.
r="$(asend_fds "{\"req\":\"submit\",\"fds\":3,\"zkey\":{\"fd\":0,\"path\":\"c.zkey\"},\"out_dir\":{\"fd\":1,\"path\":\"out\"},\"witnesses\":[{\"fd\":2,\"path\":\"$tmp/private/secret.wtns\"}]}" \
  "$tmp/atk/in/c.zkey" "$tmp/atk/out" "$tmp/atk/in/w.wtns")"
grep -q '"ok":true' <<<"$r" || fail "the attacker's own witness under another name was refused: $r"
j="$(js 'r.job' "$r")"
cuzk wait "$j" >/dev/null || fail "job $j"
# The proof is of the attacker's witness: it verifies, and it is what the attacker
# could compute anyway (its public signals are its own witness's).
"$SNARKJS" groth16 verify "$A/verification_key.json" "$tmp/atk/out/secret.public.json" "$tmp/atk/out/secret.proof.json" 2>&1 | grep -q OK ||
  fail "snarkjs rejects the attacker's proof"
echo "ok: a display path is only a name: cuzkd read the descriptor passed, never root's file"

# 4. No existence oracle: a path request for an existing and a missing file of root's
#    get the same reply (paths are never resolved).
r1="$(asend "{\"req\":\"submit\",\"zkey\":\"$tmp/private/secret.wtns\",\"out_dir\":\"$tmp/atk/out\",\"witnesses\":[\"x\"]}")"
r2="$(asend "{\"req\":\"submit\",\"zkey\":\"$tmp/private/nothing.wtns\",\"out_dir\":\"$tmp/atk/out\",\"witnesses\":[\"x\"]}")"
[ "$r1" = "$r2" ] || fail "replies differ for an existing and a missing path: $r1 / $r2"
r1="$(asend "{\"req\":\"preload\",\"zkey\":\"$tmp/private/secret.wtns\"}")"
r2="$(asend "{\"req\":\"preload\",\"zkey\":\"$tmp/private/nothing.wtns\"}")"
[ "$r1" = "$r2" ] || fail "preload replies differ for an existing and a missing path: $r1 / $r2"
echo "ok: the same reply for an existing and a missing path (submit, preload)"

# The attacker's legitimate job: its files, its directory.
out="$(acuzk --json prove --zkey "$tmp/atk/in/c.zkey" --out "$tmp/atk/out" --wait "$tmp/atk/in/w.wtns" 2>&1)" || fail "the attacker's own job: $out"
"$SNARKJS" groth16 verify "$A/verification_key.json" "$tmp/atk/out/w.public.json" "$tmp/atk/out/w.proof.json" 2>&1 | grep -q OK ||
  fail "snarkjs rejects the attacker's own proof"
echo "ok: the attacker's own job, in its own directory, proves and verifies"
kill -0 "$daemon_pid" 2>/dev/null || fail "cuzkd died"
daemon_stop
