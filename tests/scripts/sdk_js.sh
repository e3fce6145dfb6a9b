#!/usr/bin/env bash
# The JavaScript SDK (clients/js, ESM with a hand-written index.d.ts) against a real
# cuzkd (--listen, CPU backend, circuit mul: bn128 mulchain-10 with its generator):
# - `npm pack` makes its package (offline), which holds index.js, index.d.ts and the
#   README and imports with every export;
# - tests/lib/sdk_drive.mjs through the tree's clients/js/index.js: the same steps as
#   sdk_python.sh's (submit of an object, an array, a .wtns; waitJob; proofs over pages;
#   vkey; calldata; metadata; list over pages; errors as CuzkApiError; a 429 retried after its Retry-After while
#   the hook cancels the job in the way; maxRetries 0 throws it; pushed completions:
#   events() of a job to its end through tests/lib/sse_cut_proxy.py, which cuts the
#   first stream, resumed with Last-Event-ID; a callbackUrl on submit and on prove, each
#   callback the receiver (tests/lib/callback_receiver.py) got passing verifyCallback,
#   refused with a byte of the body, the timestamp or the secret altered, or t stale);
# - every proof it fetched verified by snarkjs; the vkey and calldata it got byte-equal
#   to what the API serves to curl.
# shellcheck disable=SC2154 # tok_sdk, tok_one: set by api_tokens (api.sh, printf -v); proxy_base: proxy_start's
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
. "$ROOT/tests/lib/wgen.sh"
. "$ROOT/tests/lib/api.sh"
daemon_init sdkjs
for t in node npm; do
  command -v "$t" >/dev/null || {
    echo "SKIP: $t missing (Debian: nodejs, npm)"
    exit 77
  }
done
[ "$(node -p 'Number(process.versions.node.split(".")[0]) >= 18 && typeof fetch === "function"')" = true ] || {
  echo "SKIP: node $(node --version) has no fetch (the SDK needs Node 18 or newer)"
  exit 77
}

# The package: npm pack's tarball, unpacked, imports and has its types.
mkdir -p "$tmp/pack"
(cd "$ROOT/clients/js" && npm_config_offline=true npm pack --pack-destination "$tmp/pack" >"$tmp/pack.log" 2>&1) ||
  fail "npm pack clients/js: $(tail -5 "$tmp/pack.log")"
tar -xzf "$tmp/pack"/cuzk-client-*.tgz -C "$tmp/pack"
[ "$(cd "$tmp/pack/package" && find . -type f | sort | tr '\n' ' ')" = "./README.md ./index.d.ts ./index.js ./package.json " ] ||
  fail "npm pack's files: $(cd "$tmp/pack/package" && find . -type f | sort | tr '\n' ' ')"
got="$(node --input-type=module -e "const m = await import('$tmp/pack/package/index.js');
  console.log(Object.keys(m).sort().join(' '))")"
[ "$got" = "CuzkApiError CuzkClient CuzkError CuzkJobTimeout CuzkSignatureError CuzkTransportError verifyCallback" ] ||
  fail "the packed module's exports: $got"
echo "ok: npm pack -> $(basename "$tmp/pack"/cuzk-client-*.tgz): index.js, index.d.ts, README.md, package.json; imports with its 7 exports"

sdk_serve
mkdir -p "$tmp/out"
(cd "$tmp" && node "$ROOT/tests/lib/sdk_drive.mjs" "$ROOT/clients/js/index.js" "$api_base" "$tok_sdk" "$tok_one" \
  "$FX/witness.wtns" "$tmp/out" "http://127.0.0.1:$rport" "$tmp/recv.log" "$tmp/sdk.secret" \
  "$proxy_base" "$tmp/proxy.log") || fail "the JS SDK's run (above)"

sdk_outputs 8 "$tok_sdk"
daemon_shutdown_clean
echo "PASS: sdk_js ($n proofs verified by snarkjs)"
