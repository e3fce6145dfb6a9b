#!/usr/bin/env bash
# cuzk trace --cupti (docs/usage.md; the recorder: docs/cuda.md), without a GPU: a real
# daemon job (cpu:1, proofs checked by snarkjs) and its trace, and a recorder file
# written here in libcuzk_cupti.so's format whose CUPTI clock runs 10^18 ns ahead of
# CLOCK_MONOTONIC, as it does on a real device:
#  1. cuzk trace --job JOB --cupti REC: a "gpu 0" process with a thread per stream, the
#     kernel and the copy as complete events inside the job's span, where the mapping
#     puts them (to the microsecond); the record before the job and the last line cut
#     short left out;
#  2. cuzk trace --in TRACE.json --cupti REC (after the daemon is gone) gives the same;
#  3. errors: a malformed line is named with its number (exit 4), a missing file (3),
#     --in without --cupti (2).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../lib/daemon.sh"
need_tool python3
daemon_init tcupti
daemon_start --devices cpu:1 --buffers 2 --buffer-mb 16 --keep-finished 3600
job="$(submit_copies bn128-chain 2 j)"
timeout 600 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "$job" >/dev/null || fail "job $job did not finish"
verify_jobs bn128-chain j
cuzk trace --job "$job" -o "$tmp/trace.json" || fail "cuzk trace"

# The recorder's file: the job's span (submit_ns .. its last event's end) from its trace.
python3 - "$tmp/trace.json" "$tmp/rec" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
sub = t["otherData"]["submit_ns"]
span = int(max(e["ts"] + e["dur"] for e in t["traceEvents"] if e["ph"] == "X") * 1000)
K = 10**18  # CUPTI = host + K
c = lambda host: host + K
k0, k1 = sub + span * 4 // 10, sub + span * 5 // 10
m0, m1 = sub + span * 6 // 10, sub + span * 7 // 10
with open(sys.argv[2], "w") as f:
    f.write("cuzk-cupti 1\n")
    f.write(f"clock {c(sub - 10**6)} {sub - 10**6}\n")
    f.write(f"kernel 0 7 {c(sub - 5 * 10**8)} {c(sub - 4 * 10**8)} warm_up\n")  # before the job
    f.write(f"kernel 0 7 {c(k0)} {c(k1)} msm_kernel<(int)3>(unsigned int*, int)\n")
    f.write(f"memcpy 0 13 {c(m0)} {c(m1)} 1048576 HtoD\n")
    f.write(f"clock {c(sub + span + 10**6)} {sub + span + 10**6}\n")
    f.write(f"kernel 0 7 {c(k0)} {c(k1)} cut_sh")  # the recorder cut short
json.dump({"k": [(k0 - sub) / 1e3, (k1 - k0) / 1e3], "m": [(m0 - sub) / 1e3, (m1 - m0) / 1e3], "span": span / 1e3},
          open(sys.argv[2] + ".want", "w"))
PY
check() { # merged trace: the device track where the recorder file puts it
  python3 - "$1" "$tmp/rec.want" <<'PY'
import json, sys
t, want = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
ev = t["traceEvents"]
procs = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
gpu = [p for p, n in procs.items() if n == "gpu 0"]
assert len(gpu) == 1, procs
assert {"synth", "gpuworker", "finalizer"} <= set(procs.values()), procs
dev = [e for e in ev if e["ph"] == "X" and e["pid"] == gpu[0]]
assert sorted(e["name"] for e in dev) == ["memcpy HtoD", "msm_kernel<(int)3>(unsigned int*, int)"], dev
assert threads[(gpu[0], 7)] == "stream 7" and threads[(gpu[0], 13)] == "stream 13", threads
for e in dev:
    w = want["k"] if e["cat"] == "kernel" else want["m"]
    assert abs(e["ts"] - w[0]) <= 1 and abs(e["dur"] - w[1]) <= 1, (e, w)
    assert 0 <= e["ts"] and e["ts"] + e["dur"] <= want["span"], (e, want)
assert t["otherData"]["cupti_events"] == 2 and t["otherData"]["cupti_outside"] == 1, t["otherData"]
PY
}
cuzk trace --job "$job" --cupti "$tmp/rec" -o "$tmp/live.json" 2>"$tmp/live.err" || fail "cuzk trace --cupti: $(cat "$tmp/live.err")"
grep -q "cut short" "$tmp/live.err" || fail "no word of the line cut short: $(cat "$tmp/live.err")"
check "$tmp/live.json" || fail "cuzk trace --job --cupti: the device track"
echo "ok: cuzk trace --job JOB --cupti: gpu 0, streams 7 and 13, kernel and copy inside the job's span"

daemon_stop
cuzk trace --in "$tmp/trace.json" --cupti "$tmp/rec" -o "$tmp/offline.json" 2>/dev/null || fail "cuzk trace --in --cupti"
python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1])) != json.load(open(sys.argv[2])))' \
  "$tmp/live.json" "$tmp/offline.json" || fail "--in TRACE.json --cupti differs from --job JOB --cupti"
echo "ok: cuzk trace --in TRACE.json --cupti: the same trace, no daemon"

printf 'cuzk-cupti 1\nclock 1 2\nkernel 0 7 9 8 backwards\n' >"$tmp/rec.bad"
rc=0
cuzk trace --in "$tmp/trace.json" --cupti "$tmp/rec.bad" -o "$tmp/x.json" 2>"$tmp/bad.err" || rc=$?
[ $rc -eq 4 ] && grep -q "rec.bad:3: " "$tmp/bad.err" || fail "a malformed line: exit $rc, $(cat "$tmp/bad.err")"
[ ! -e "$tmp/x.json" ] || fail "a trace written despite the malformed line"
rc=0
cuzk trace --in "$tmp/trace.json" --cupti "$tmp/nope" -o "$tmp/x.json" 2>/dev/null || rc=$?
[ $rc -eq 3 ] || fail "a missing recorder file: exit $rc"
rc=0
cuzk trace --in "$tmp/trace.json" -o "$tmp/x.json" 2>/dev/null || rc=$?
[ $rc -eq 2 ] || fail "--in without --cupti: exit $rc"
echo "ok: cupti_trace"
