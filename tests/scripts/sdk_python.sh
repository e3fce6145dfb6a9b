#!/usr/bin/env bash
# The Python SDK (clients/python, package cuzk_client) against a real cuzkd (--listen,
# CPU backend, circuit mul: bn128 mulchain-10 with its generator):
# - it installs with pip into a throwaway venv (--system-site-packages for Debian's
#   setuptools and wheel, --no-index --no-build-isolation: no network), and the run imports that
#   installed copy;
# - tests/lib/sdk_drive.py through it: circuits; submit of an object (wait: the proof
#   inline), an array (wait_job, proofs over pages, the idempotency key), a .wtns
#   (job(wait), proof); vkey; calldata; metadata kept; list over pages, newest first,
#   with its filters; errors as ApiError with the problem's members;
#   a 429 (a tenant of MAX-RUNNING-JOBS 1) retried after its Retry-After while the hook
#   cancels the job in the way; max_retries=0 raises it;
#   pushed completions: events() of a job to its end through tests/lib/sse_cut_proxy.py,
#   which cuts the first stream after its first event, resumed with Last-Event-ID (and
#   by the caller's last_event_id); a callback_url on submit and on prove, each callback
#   the receiver (tests/lib/callback_receiver.py) got passing verify_callback, refused
#   with a byte of the body, the timestamp or the secret altered, or t stale;
# - every proof it fetched verified by snarkjs; the vkey and calldata it got byte-equal
#   to what the API serves to curl.
# shellcheck disable=SC2154 # tok_sdk, tok_one: set by api_tokens (api.sh, printf -v); proxy_base: proxy_start's
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
. "$ROOT/tests/lib/wgen.sh"
. "$ROOT/tests/lib/api.sh"
daemon_init sdkpy
# An interpreter that builds a package offline: venv and ensurepip (Debian:
# python3-venv), setuptools and wheel (python3-setuptools, python3-wheel). The python3
# on PATH first, else the system's (a python3 of pyenv or alike may lack wheel).
py=""
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import ensurepip, venv, setuptools, wheel' 2>/dev/null; then
    py="$p"
    break
  fi
done
[ -n "$py" ] || {
  echo "SKIP: no python3 with venv, ensurepip, setuptools and wheel (Debian: python3-venv python3-setuptools python3-wheel)"
  exit 77
}
sdk_serve

"$py" -m venv --system-site-packages "$tmp/venv" >"$tmp/venv.log" 2>&1 || fail "python3 -m venv: $(tail -3 "$tmp/venv.log")"
# From a copy: pip builds in the source folder and leaves build/ and *.egg-info there.
cp -r "$ROOT/clients/python" "$tmp/sdk-src"
PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 "$tmp/venv/bin/python" -m pip install --no-build-isolation \
  "$tmp/sdk-src" >"$tmp/pip.log" 2>&1 || fail "pip install clients/python: $(tail -5 "$tmp/pip.log")"
echo "ok: pip install clients/python into a venv, offline ($(grep -o 'Successfully installed.*' "$tmp/pip.log"))"

mkdir -p "$tmp/out"
(cd "$tmp" && "$tmp/venv/bin/python" "$ROOT/tests/lib/sdk_drive.py" "$api_base" "$tok_sdk" "$tok_one" \
  "$FX/witness.wtns" "$tmp/out" "http://127.0.0.1:$rport" "$tmp/recv.log" "$tmp/sdk.secret" \
  "$proxy_base" "$tmp/proxy.log") || fail "the Python SDK's run (above)"

sdk_outputs 8 "$tok_sdk"
daemon_shutdown_clean
echo "PASS: sdk_python ($n proofs verified by snarkjs)"
