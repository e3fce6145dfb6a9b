#!/usr/bin/env bash
# The evidence, checked from outside: run a daemon job (cpu:2), then
#  1. cuzk-top --once --json matches its documented schema (docs/operations.md, "cuzk-top JSON"),
#     and every slot's per-state totals equal its wall time within 0.1%;
#  2. cuzk metrics passes a checker of the Prometheus text-format rules;
#  3. cuzk-top in a real terminal (tmux): header and every stage row appear, and the
#     numbers change between two captures taken during a job;
#  4. planted delay (--test-finalizer-delay-ms 200): the finalizer's trim state holds
#     >= 95% of the planted time and every slot still accounts for its wall time; the
#     worker's speed with and without the delay is printed as a figure, not asserted.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/../lib/daemon.sh"
need_bins cuzk-top
need_tool python3
daemon_init ttop
tsess="cuzktop$$"
# shellcheck disable=SC2016 # run at exit
daemon_on_exit='tmux kill-session -t "$tsess" 2>/dev/null; daemon_stop'
start_daemon() { daemon_start --devices cpu:1 --buffers 4 --buffer-mb 16 "$@"; } # extra cuzkd options
NPART="${CUZK_TOP_PARTS:-8}"
fx="$REF_FIXTURES/bn128-chain"
mkdir -p "$tmp/in"
for i in $(seq 1 "$NPART"); do cp "$fx/witness.wtns" "$tmp/in/w$i.wtns"; done
submit() { # out dir -> job id
  mkdir -p "$1"
  local out
  out="$(cuzk --json prove --zkey "$fx/circuit_final.zkey" --out "$1" "$tmp/in"/w*.wtns)" ||
    fail "submit: $out"
  python3 -c 'import json,sys; print(json.loads(sys.argv[1])["job"])' "$out"
}

# ---- 0. not running yet: says so -------------------------------------------------
rc=0
"$BUILD/bin/cuzk-top" --instance "$inst" --once --json >"$tmp/none.json" || rc=$?
[ $rc -eq 20 ] || fail "cuzk-top --once with no daemon: exit $rc, want 20"
grep -q '"running": false' "$tmp/none.json" || fail "no-daemon JSON does not say running: false"

# ---- 1. a job, then the JSON snapshot ----------------------------------------------
start_daemon
tmux new-session -d -s "$tsess" -x 160 -y 40 \
  "$BUILD/bin/cuzk-top --instance $inst -d 0.5" 2>/dev/null && have_tmux=1 || have_tmux=0
job="$(submit "$tmp/out1")"
if [ "$have_tmux" = 1 ]; then
  sleep 2.5
  tmux capture-pane -p -t "$tsess" >"$tmp/cap1"
  sleep 2
  tmux capture-pane -p -t "$tsess" >"$tmp/cap2"
fi
timeout 600 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "$job" >/dev/null ||
  fail "job $job did not finish"
sleep 0.3
"$BUILD/bin/cuzk-top" --instance "$inst" --once --json >"$tmp/snap1.json" || fail "cuzk-top --once --json"
cuzk metrics >"$tmp/metrics.prom" || fail "cuzk metrics"

python3 "$HERE/top_check.py" schema "$tmp/snap1.json" || fail "JSON schema"
python3 "$HERE/top_check.py" accounting "$tmp/snap1.json" || fail "accounting"
python3 "$HERE/top_check.py" prometheus "$tmp/metrics.prom" || fail "Prometheus format"
python3 "$HERE/top_check.py" figures "$tmp/snap1.json"

# ---- 3. the terminal ---------------------------------------------------------------
if [ "$have_tmux" = 1 ]; then
  for w in "cuzk-top" "rings:" "jobs:" "supervisor/0" "synth/0" "gpuworker/0" "finalizer/0"; do
    grep -q -- "$w" "$tmp/cap1" || {
      cat "$tmp/cap1"
      fail "tmux capture lacks \"$w\""
    }
  done
  cmp -s "$tmp/cap1" "$tmp/cap2" && {
    cat "$tmp/cap1"
    fail "two captures 2 s apart are identical"
  }
  tmux send-keys -t "$tsess" h
  sleep 1
  tmux capture-pane -p -t "$tsess" >"$tmp/cap3"
  grep -q "q quit   p pause" "$tmp/cap3" || fail "h shows no help"
  tmux resize-window -t "$tsess" -x 90 -y 20 2>/dev/null || true
  sleep 1
  tmux capture-pane -p -t "$tsess" | grep -q "gpuworker/0" || fail "no rows after a resize"
  tmux send-keys -t "$tsess" q
  sleep 1
  tmux has-session -t "$tsess" 2>/dev/null && fail "q did not quit cuzk-top"
  echo "ok: cuzk-top under tmux: header, every stage row, changing numbers, h, resize, q"
else
  echo "SKIP: tmux missing (apt-get install tmux): terminal test not run"
fi
daemon_stop

# ---- 4. planted delay ----------------------------------------------------------------
if [ "${CUZK_TOP_SKIP_DELAY:-0}" != 1 ]; then
  start_daemon --test-finalizer-delay-ms 200
  job="$(submit "$tmp/out2")"
  timeout 600 "$BUILD/bin/cuzk" --instance "$inst" --run-dir "$run" wait "$job" >/dev/null ||
    fail "delayed job $job did not finish"
  sleep 0.3
  "$BUILD/bin/cuzk-top" --instance "$inst" --once --json >"$tmp/snap2.json"
  daemon_stop
  python3 "$HERE/top_check.py" accounting "$tmp/snap2.json" || fail "accounting (delay run)"
  python3 "$HERE/top_check.py" delay "$tmp/snap1.json" "$tmp/snap2.json" 200 || fail "planted delay"
fi
echo "ok: top_accounting"
