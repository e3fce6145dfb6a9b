#!/usr/bin/env bash
# The shipped units' system call filters let the daemon work: every system call that
# cuzkd, its stages and cuzk-api make while proving is in the set their unit allows
# (SystemCallFilter= in deploy/cuzkd.service.in and deploy/cuzk-api.service.in, the
# groups opened with `systemd-analyze syscall-filter`, the ~ lines taken out). Without
# a booted systemd here, the calls are recorded with strace -f instead:
#   cuzkd (one CPU worker, [circuit mul] with its witness generator) under strace: a
#     `cuzk prove` of the bundled example's witness and a `cuzk prove --circuit` from
#     input.json, each proof verified by snarkjs; then shutdown (the drained stop);
#   cuzk-api as its unit runs it (on its own, on cuzkd's socket, never changing user:
#     --user 0 keeps a root test's as it is) under a second strace:
#     a tenant's POST, the job waited for, the proof fetched and verified by snarkjs,
#     /metrics, /readyz, then SIGTERM.
# A call outside its unit's set would fail with EPERM under systemd
# (SystemCallErrorNumber=): the test fails naming it and who made it. The units under
# a real systemd: tests/scripts/deb_systemd.sh.
# Skips (77) without strace or systemd-analyze, or where ptrace is not allowed.
# shellcheck disable=SC2154 # tok_NAME: set by api_tokens (api.sh, printf -v)
set -euo pipefail
. "$(dirname "$0")/../lib/daemon.sh"
. "$ROOT/tests/lib/wgen.sh"
. "$ROOT/tests/lib/api.sh"
for t in strace systemd-analyze jq; do
  command -v "$t" >/dev/null || {
    echo "SKIP: $t not installed (deploy/install-deps.sh installs it)"
    exit 77
  }
done
strace -f -qq -o /dev/null true 2>/dev/null || {
  echo "SKIP: strace cannot trace here (ptrace not permitted)"
  exit 77
}
daemon_init unitsys
api_init

# The set a unit allows: its SystemCallFilter= lines in order (an allow list, then ~
# lines that take calls out), every @group opened recursively.
expand() { # @group or a call's name
  local w
  case "$1" in
    @*) systemd-analyze syscall-filter --no-pager "$1" | tail -n +2 | sed 's/^ *//' | grep -v '^#' | grep -v '^$' |
      while read -r w; do expand "$w"; done ;;
    *) echo "$1" ;;
  esac
}
allowed() { # UNIT.service.in OUT
  local line w
  : >"$2"
  while IFS= read -r line; do
    line="${line#SystemCallFilter=}"
    if [ "${line:0:1}" = "~" ]; then
      for w in ${line#\~}; do expand "$w"; done | sort -u >"$tmp/deny"
      sort -u "$2" | comm -23 - "$tmp/deny" >"$2.tmp" && mv "$2.tmp" "$2"
    else
      for w in $line; do expand "$w"; done >>"$2"
    fi
  done < <(grep '^SystemCallFilter=' "$1")
  sort -u -o "$2" "$2"
  [ -s "$2" ] || fail "$1 allows no system call (no SystemCallFilter=?)"
}
allowed deploy/cuzkd.service.in "$tmp/cuzkd.allowed"
allowed deploy/cuzk-api.service.in "$tmp/api.allowed"
echo "ok   the units allow $(wc -l <"$tmp/cuzkd.allowed") (cuzkd) and $(wc -l <"$tmp/api.allowed") (cuzk-api) system calls"

# The calls strace recorded (-f: one file, each line a pid and a call or its resumption).
calls() { grep -oE '^[0-9]+ +([a-z_0-9]+)\(|<\.\.\. [a-z_0-9]+ resumed>' "$1" | sed -E 's/^[0-9]+ +//; s/\($//; s/^<\.\.\. //; s/ resumed>$//' | sort -u; }
check() { # WHO TRACE ALLOWED
  calls "$2" >"$tmp/$1.calls"
  [ -s "$tmp/$1.calls" ] || fail "strace recorded no call of $1"
  comm -23 "$tmp/$1.calls" "$3" >"$tmp/$1.out"
  [ ! -s "$tmp/$1.out" ] || {
    while read -r c; do grep -m 3 -E "^[0-9]+ +$c\(" "$2" >&2 || true; done <"$tmp/$1.out"
    fail "$1 makes system calls its unit does not allow: $(tr '\n' ' ' <"$tmp/$1.out")"
  }
  echo "ok   $1: $(wc -l <"$tmp/$1.calls") distinct system calls, every one in its unit's set"
}

api_tokens alice
printf '[cuzkd]\nbuffer-mb = 16\n[circuit mul]\nzkey = %s\nr1cs = %s\nwitness-gen = %s\n' \
  "$FX/circuit_final.zkey" "$FX/circuit.r1cs" "$gen" >"$tmp/cuzkd.conf"
strace -f -qq -o "$tmp/cuzkd.trace" "$BUILD/bin/cuzkd" --instance "$inst" --run-dir "$run" --state-dir "$tmp/state" \
  --foreground --wgen-dir "$BUILD/wgen:$tmp" --config "$tmp/cuzkd.conf" --devices cpu:1 --buffers 4 >>"$tmp/cuzkd.log" 2>&1 &
daemon_pid=$!
daemon_answers "$tmp/cuzkd.log"

mkdir -p "$tmp/w/out" "$tmp/c/out"
cp "$FX/witness.wtns" "$tmp/w/w1.wtns"
cuzk prove --zkey "$FX/circuit_final.zkey" --out "$tmp/w/out" --wait "$tmp/w/w1.wtns" >"$tmp/p1" ||
  fail "cuzk prove under strace: $(cat "$tmp/p1")"
"$SNARKJS" groth16 verify "$VK" "$tmp/w/out/w1.public.json" "$tmp/w/out/w1.proof.json" | grep -q OK ||
  fail "snarkjs rejects the witness job's proof"
n=$((n + 1))
cuzk prove --circuit mul --out "$tmp/c/out" --wait "$FX/input.json" >"$tmp/p2" ||
  fail "cuzk prove --circuit under strace: $(cat "$tmp/p2")"
for p in "$tmp"/c/out/*.proof.json; do
  "$SNARKJS" groth16 verify "$VK" "${p%.proof.json}.public.json" "$p" | grep -q OK || fail "snarkjs rejects $p"
  n=$((n + 1))
done
echo "ok   cuzkd under strace: a witness job and an input.json job proved, snarkjs verifies both"

port="$(free_port)"
api_base="http://127.0.0.1:$port"
strace -f -qq -o "$tmp/api.trace" "$BUILD/bin/cuzk-api" --socket "$run/$inst.sock" --instance "$inst" \
  --listen "127.0.0.1:$port" --api-tokens "$tmp/tokens" --user 0 >"$tmp/api.log" 2>&1 &
api_pid=$!
daemon_on_exit="kill -TERM $api_pid 2>/dev/null${daemon_on_exit:+; $daemon_on_exit}"
api_wait_up
api_proved a1 "$tok_alice" '{"x":"3","k":"1"}'
http a4 "" GET /readyz >/dev/null
http a5 "$tok_alice" GET /metrics >/dev/null
# SIGTERM to cuzk-api itself (strace does not pass its own on): strace ends with it.
kill -TERM "$(pgrep -P "$api_pid" -x cuzk-api)"
wait "$api_pid" || true
echo "ok   cuzk-api under strace: a tenant's proof made, fetched and verified by snarkjs"
daemon_shutdown_clean

check cuzkd+stages "$tmp/cuzkd.trace" "$tmp/cuzkd.allowed"
check cuzk-api "$tmp/api.trace" "$tmp/api.allowed"
echo "PASS: every system call of cuzkd, its stages and cuzk-api while proving is allowed by its unit ($n proofs verified)"
