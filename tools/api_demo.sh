#!/usr/bin/env bash
# `make api-demo`: the README's "HTTP API in five lines", set up and run once. Writes
# into $BUILD/api-demo/ (nothing outside the clone but cuzkd's run directory):
#   cuzkd.conf   listen = 127.0.0.1:PORT, api-tokens, state-dir here, and [circuit mul]:
#                the bundled example (mulchain-10, BN254) with its zkey, r1cs and
#                witness generator
#   wgen/mul.wgen  the example's witness generator (cuzk build-witness, from circom's
#                C++), in the one directory cuzkd loads generators from (wgen-dir)
#   token        a tenant's bearer token (0600); api-tokens its line (the token's hash)
# then starts cuzkd with that config, submits one input.json over HTTP, long-polls the
# job (by the id in its Location), fetches the proof, verifies it with snarkjs groth16
# verify, prints each curl line with the real job id, and shuts cuzkd down. A config,
# generator and token already there are kept (the token stays valid across runs).
# Environment: BUILD (default build), API_DEMO_PORT (default 8080).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. tests/fixtures/env.sh # ROOT, and BUILD made absolute
PORT="${API_DEMO_PORT:-8080}"
D="$BUILD/api-demo"
U="http://127.0.0.1:$PORT"
PATH="$BUILD/bin:$PATH"

echo "== the example fixture (bn128/mulchain-10: circom + snarkjs setup, cached)"
bash "$MAKE_FIXTURES" -q --curve bn128 --only mulchain-10
fx="$FIXTURES/bn128/mulchain-10"
mkdir -p "$D/wgen"
chmod 0700 "$D"
chmod 0755 "$D/wgen" # cuzkd loads generators only from a directory no one else may write

if [ ! -f "$D/wgen/mul.wgen" ] || [ "$fx/circuit_cpp/circuit.cpp" -nt "$D/wgen/mul.wgen" ]; then
  echo "== its witness generator: cuzk build-witness -> $D/wgen/mul.wgen"
  cuzk build-witness --prime bn128 --r1cs "$fx/circuit.r1cs" "$fx/circuit_cpp" "$D/wgen/mul.wgen" >/dev/null
fi
if [ ! -s "$D/token" ] || [ ! -s "$D/api-tokens" ]; then
  echo "== a tenant, demo: its token in $D/token, the line with its hash in $D/api-tokens"
  (umask 077 && cuzk token demo >"$D/token.new" && tail -n1 "$D/token.new" >"$D/api-tokens" &&
    head -n1 "$D/token.new" >"$D/token" && rm -f "$D/token.new")
fi
cat >"$D/cuzkd.conf.new" <<CONF
# made by make api-demo (tools/api_demo.sh): the README's HTTP API lines run on it
devices = cpu:1
buffer-mb = 16
state-dir = $D/state
listen = 127.0.0.1:$PORT
api-tokens = $D/api-tokens
wgen-dir = $D/wgen

[circuit mul]
zkey = $fx/circuit_final.zkey
r1cs = $fx/circuit.r1cs
witness-gen = $D/wgen/mul.wgen
CONF
mv "$D/cuzkd.conf.new" "$D/cuzkd.conf"
echo "== $D: cuzkd.conf ([circuit mul], listen = 127.0.0.1:$PORT), wgen/mul.wgen, token, api-tokens"

started=0
cleanup() { [ "$started" = 0 ] || cuzk shutdown >/dev/null 2>&1 || true; }
trap cleanup EXIT
show() { printf '$ %s\n' "$*"; }

show "cuzkd --config $D/cuzkd.conf"
cuzkd --config "$D/cuzkd.conf"
started=1
show "curl -sf --retry 60 --retry-connrefused --retry-delay 1 $U/readyz"
curl -sf --retry 60 --retry-connrefused --retry-delay 1 "$U/readyz"
echo
A="Authorization: Bearer $(cat "$D/token")"
show "curl -s -D- -H \"\$A\" --json '{\"x\":\"7\",\"k\":\"1234567\"}' $U/v1/circuits/mul/proofs"
head="$(curl -s -D- -H "$A" --json '{"x":"7","k":"1234567"}' "$U/v1/circuits/mul/proofs")"
printf '%s\n' "$head" | tr -d '\r'
J="$(printf '%s\n' "$head" | tr -d '\r' | sed -n 's/^[Ll]ocation: *//p')"
[ -n "$J" ] || {
  echo "api-demo: no Location in the answer" >&2
  exit 1
}
show "curl -s -H \"\$A\" \"$U$J?wait=60\""
curl -s -H "$A" "$U$J?wait=60"
echo
show "curl -s -H \"\$A\" $U$J/proofs/0"
curl -s -H "$A" "$U$J/proofs/0" >"$D/answer.json"
cat "$D/answer.json"
echo
node -e 'const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  require("fs").writeFileSync(process.argv[2], JSON.stringify(r.proof));
  require("fs").writeFileSync(process.argv[3], JSON.stringify(r.publicSignals));' \
  "$D/answer.json" "$D/proof.json" "$D/public.json"
echo "== snarkjs groth16 verify of the proof"
v="$("$SNARKJS" groth16 verify "$fx/verification_key.json" "$D/public.json" "$D/proof.json" 2>&1)" || true
printf '%s\n' "$v" | tail -n1
grep -q OK <<<"$v" || {
  echo "api-demo: snarkjs rejects the proof" >&2
  exit 1
}
# `cuzk shutdown` answers at once; the README's lines start the same instance next,
# so this waits until the daemon is gone (its pid, from its status)
pid="$(cuzk --json status | node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(JSON.parse(s).pid))')"
show "cuzk shutdown"
cuzk shutdown
started=0
for _ in $(seq 1 600); do
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
kill -0 "$pid" 2>/dev/null && {
  echo "api-demo: cuzkd (pid $pid) did not stop within 60 s" >&2
  exit 1
}
echo "api-demo: job ${J##*/} proved over HTTP, verified by snarkjs; the README's lines use $D"
