#!/usr/bin/env bash
# The daemon proves from input.json: `cuzk prove --witness-gen G.wgen ... in1.json` on
# every fixture of tests/fixtures/make.sh (two inputs a job, bn128 and bls12381), with a
# .wtns job running beside them; snarkjs verifies every proof. Then, with the jobs of
# other circuits going on, the synth fails only the bad partition, with a message
# naming the input file and the signal: a missing signal, an unknown one, a value
# that is not a field element, invalid JSON; a generator of another circuit fails the
# job's partitions naming the generator; one writable by others is refused at
# submit (it would run as native code in the synth). Then a generator that crashes (SIGSEGV in
# the generated code): only the synth process dies, the supervisor restarts it, the
# partition fails after --max-attempts, and a good job afterwards proves; rebuilt in
# place (fixed), the same generator path proves. Finally a clean shutdown.
# Environment: BUILD (default build).
set -euo pipefail
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)/daemon.sh"
. "$ROOT/tests/lib/wgen.sh"
wgen_daemon_init wgen

mapfile -t fixtures < <(bash "$MAKE_FIXTURES" --list)
for d in "${fixtures[@]}"; do wgen_for "$d" >/dev/null; done

# --keep-finished: the jobs below are waited for and verified one after the other; a
# job that finished early must still be there when its turn comes (cuzkd retires a
# decided job 30 s after it ended by default, and the snarkjs checks of the jobs
# before it can take longer than that on a loaded machine).
daemon_start --devices cpu:1 --buffers 6 --buffer-mb 16 --max-attempts 2 --keep-finished 3600

# ---- every fixture from input.json, a .wtns job beside them -----------------------
jobs=()
for d in "${fixtures[@]}"; do
  label="$(echo "${d#"$FIXTURES"/}" | tr / _)"
  mkdir -p "$tmp/$label/in" "$tmp/$label/out"
  cp "$d/input.json" "$tmp/$label/in/in1.json"
  cp "$d/input.json" "$tmp/$label/in/in2.json"
  j="$(cuzk --json prove --zkey "$d/circuit_final.zkey" --witness-gen "$(wgen_for "$d")" --out "$tmp/$label/out" \
    "$tmp/$label/in/in1.json" "$tmp/$label/in/in2.json" | js 'r.job' "$(cat)")" || fail "submit $label"
  jobs+=("$j:$label:$d")
done
mkdir -p "$tmp/wtns/out"
cp "$FIXTURES/bn128/mulchain-10/witness.wtns" "$tmp/wtns/w1.wtns"
cuzk prove --zkey "$FIXTURES/bn128/mulchain-10/circuit_final.zkey" --out "$tmp/wtns/out" --wait "$tmp/wtns/w1.wtns" \
  >/dev/null || fail ".wtns job beside the input.json jobs"
for e in "${jobs[@]}"; do
  j="${e%%:*}"
  rest="${e#*:}"
  label="${rest%%:*}"
  d="${rest#*:}"
  cuzk wait "$j" --timeout-ms 120000 >/dev/null || fail "job $j ($label) did not finish"
  [ -f "$tmp/$label/out/in1.proof.json" ] && [ -f "$tmp/$label/out/in2.public.json" ] ||
    fail "$label: proofs not named after the inputs: $(ls "$tmp/$label/out")"
  out="$(node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" \
    "$d/verification_key.json" "$tmp/$label/out")" || fail "snarkjs on $label: $out"
  [ "$out" = "2 verified" ] || fail "snarkjs on $label: $out"
  echo "ok   $label: 2 proofs from input.json, snarkjs verified"
done
node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" \
  "$FIXTURES/bn128/mulchain-10/verification_key.json" "$tmp/wtns/out" | grep -qx "1 verified" ||
  fail "the .wtns job's proof"
echo "ok   a .wtns job beside them proved and verified"

# ---- bad inputs: only their partition fails, with the file and the signal ---------
M="$FIXTURES/bn128/mulchain-10"
mkdir -p "$tmp/bad/out"
cp "$M/input.json" "$tmp/bad/good.json"
echo '{"x": "7"}' >"$tmp/bad/missing.json"
echo '{"x": "7", "k": "1", "y": "2"}' >"$tmp/bad/extra.json"
echo '{"x": "7", "k": "12ab"}' >"$tmp/bad/notfield.json"
echo '{"x": "7", "k": ' >"$tmp/bad/badjson.json"
j="$(cuzk --json prove --zkey "$M/circuit_final.zkey" --witness-gen "$(wgen_for "$M")" --out "$tmp/bad/out" \
  "$tmp/bad/good.json" "$tmp/bad/missing.json" "$tmp/bad/extra.json" "$tmp/bad/notfield.json" \
  "$tmp/bad/badjson.json" | js 'r.job' "$(cat)")" || fail "submit the bad inputs"
cuzk wait "$j" --timeout-ms 60000 >/dev/null 2>&1 || true
st="$(cuzk --json status "$j" || true)"
reason() { js "(r.job.parts.find(p => p.name === '$1') || {}).reason || ''" "$st"; }
state() { js "(r.job.parts.find(p => p.name === '$1') || {}).state || ''" "$st"; }
[ "$(state good)" = "done" ] || fail "good input next to bad ones: $(state good) $(reason good)"
check_bad() { # name words...
  local n="$1" r
  shift
  r="$(reason "$n")"
  [ "$(state "$n")" = failed ] || fail "$n: state $(state "$n"), expected failed"
  for w in "$n.json" "$@"; do
    case "$r" in *"$w"*) ;; *) fail "$n: reason lacks '$w': $r" ;; esac
  done
  echo "ok   $n: failed: $r"
}
check_bad missing "input values are not given: k"
check_bad extra "signal y" "not an input"
check_bad notfield "signal k" "not a field element"
check_bad badjson "not valid JSON"

# Another circuit's generator: `cuzk prove` refuses it before submitting (exit 21);
# sent past the client, the synth fails every partition, naming the generator.
mkdir -p "$tmp/other/out"
rc=0
cuzk prove --zkey "$FIXTURES/bn128/justabove/circuit_final.zkey" --witness-gen "$(wgen_for "$M")" \
  --out "$tmp/other/out" "$tmp/bad/good.json" 2>"$tmp/other.err" || rc=$?
[ $rc -eq 21 ] && grep -q "another circuit" "$tmp/other.err" || fail "client check: exit $rc: $(cat "$tmp/other.err")"
echo "ok   cuzk prove refuses another circuit's generator: $(cat "$tmp/other.err")"
# The generator and the inputs travel as descriptors like every file (control.h): a
# request that names either by path only is refused before anything is opened.
zo="$FIXTURES/bn128/justabove/circuit_final.zkey"
r="$(send_fds "{\"req\":\"submit\",\"fds\":3,\"zkey\":{\"fd\":0,\"path\":\"$zo\"},\"out_dir\":{\"fd\":1,\"path\":\"$tmp/other/out\"},\"inputs\":[{\"fd\":2,\"path\":\"$tmp/bad/good.json\"}],\"witness_gen\":\"$(wgen_for "$M")\"}" \
  "$zo" "$tmp/other/out" "$tmp/bad/good.json")"
case "$r" in *bad_request*SCM_RIGHTS*) ;; *) fail "a generator named by path: $r" ;; esac
r="$(send_fds "{\"req\":\"submit\",\"fds\":3,\"zkey\":{\"fd\":0,\"path\":\"$zo\"},\"out_dir\":{\"fd\":1,\"path\":\"$tmp/other/out\"},\"inputs\":[\"$tmp/bad/good.json\"],\"witness_gen\":{\"fd\":2,\"path\":\"g.wgen\"}}" \
  "$zo" "$tmp/other/out" "$(wgen_for "$M")")"
case "$r" in *bad_request*SCM_RIGHTS*) ;; *) fail "an input named by path: $r" ;; esac
echo "ok   a generator or an input.json named by path only is refused (bad_request)"
j="$(js 'r.job' "$(send_fds "{\"req\":\"submit\",\"fds\":4,\"zkey\":{\"fd\":0,\"path\":\"$zo\"},\"out_dir\":{\"fd\":1,\"path\":\"$tmp/other/out\"},\"inputs\":[{\"fd\":2,\"path\":\"$tmp/bad/good.json\"}],\"witness_gen\":{\"fd\":3,\"path\":\"$(wgen_for "$M")\"}}" \
  "$zo" "$tmp/other/out" "$tmp/bad/good.json" "$(wgen_for "$M")")")"
[ -n "$j" ] && [ "$j" != undefined ] || fail "raw submit of another circuit's generator"
cuzk wait "$j" --timeout-ms 60000 >/dev/null 2>&1 || true
st="$(cuzk --json status "$j" || true)"
r="$(reason good)"
case "$r" in *"another circuit"*bn128-mulchain-10.wgen*) ;;
*) fail "another circuit's generator: $(state good): $r" ;; esac
echo "ok   another circuit's generator: failed: $r"

# A generator others may rewrite is refused at submit: it would run in the synth.
cp "$(wgen_for "$M")" "$tmp/open.wgen"
chmod 666 "$tmp/open.wgen"
rc=0
cuzk prove --zkey "$M/circuit_final.zkey" --witness-gen "$tmp/open.wgen" --out "$tmp/bad/out" "$tmp/bad/good.json" \
  2>"$tmp/open.err" || rc=$?
[ $rc -eq 21 ] && grep -q "writable by no one else" "$tmp/open.err" || fail "group/other-writable generator: exit $rc: $(cat "$tmp/open.err")"
echo "ok   a generator writable by others is refused: $(cat "$tmp/open.err")"

# ---- a generator that crashes ------------------------------------------------------
cp -r "$M/circuit_cpp" "$tmp/crash_cpp"
sed -i 's/^void run(Circom_CalcWit\* ctx){$/void run(Circom_CalcWit* ctx){ *(volatile int *)(ctx->signalValues == NULL ? 0 : 8) = 0;/' \
  "$tmp/crash_cpp/circuit.cpp"
grep -q 'volatile int' "$tmp/crash_cpp/circuit.cpp" || fail "could not plant the crash in circuit.cpp"
"$CUZK" build-witness "$tmp/crash_cpp" "$tmp/crash.wgen" >/dev/null || fail "build the crashing generator"
synth_pid() { js "(r.children.find(c => c.stage === 'synth') || {}).pid" "$(cuzk --json status)"; }
p0="$(synth_pid)"
mkdir -p "$tmp/crash/out"
j="$(cuzk --json prove --zkey "$M/circuit_final.zkey" --witness-gen "$tmp/crash.wgen" --out "$tmp/crash/out" \
  "$tmp/bad/good.json" | js 'r.job' "$(cat)")" || fail "submit the crashing generator"
cuzk wait "$j" --timeout-ms 90000 >/dev/null 2>&1 || true
st="$(cuzk --json status "$j" || true)"
[ "$(state good)" = failed ] || fail "crashing generator: partition $(state good)"
echo "ok   crashing generator: partition failed after --max-attempts: $(reason good)"
p1="$(synth_pid)"
[ -n "$p1" ] && [ "$p1" != "$p0" ] || fail "the synth was not restarted ($p0 -> $p1)"
mkdir -p "$tmp/after/out"
cuzk prove --zkey "$M/circuit_final.zkey" --witness-gen "$(wgen_for "$M")" --out "$tmp/after/out" --wait \
  "$tmp/bad/good.json" >/dev/null || fail "a good job after the crashes"
node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" "$M/verification_key.json" \
  "$tmp/after/out" | grep -qx "1 verified" || fail "the proof after the crashes"
echo "ok   the daemon goes on: synth restarted ($p0 -> $p1), the next job proved and verified"

# The crashing generator rebuilt in place (fixed): the synth loads the new file.
"$CUZK" build-witness "$M/circuit_cpp" "$tmp/crash.wgen" >/dev/null || fail "rebuild the generator in place"
mkdir -p "$tmp/fixed/out"
cuzk prove --zkey "$M/circuit_final.zkey" --witness-gen "$tmp/crash.wgen" --out "$tmp/fixed/out" --wait \
  "$tmp/bad/good.json" >/dev/null || fail "the generator rebuilt in place"
node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" "$M/verification_key.json" \
  "$tmp/fixed/out" | grep -qx "1 verified" || fail "the proof with the rebuilt generator"
echo "ok   a generator rebuilt in place is loaded again (proved, verified)"

daemon_shutdown_clean
echo "PASS: ${#fixtures[@]} fixtures proved from input.json by the daemon; 4 bad inputs, another circuit and a crashing generator failed only their partitions"
