# shellcheck shell=bash
# Source me after tests/lib/daemon.sh and tests/lib/wgen.sh (needs cuzk, fail, tmp,
# FIXTURES, SNARKJS): a backlog of input.json partitions through a running cuzkd, as
# tests/scripts/daemon_backlog.sh checks it and bench/backlog.sh times it.
#
# backlog_inputs FIXTURE N DIR: N copies of FIXTURE's input.json as DIR/p1.json ..
#   DIR/pN.json (the daemon names proofs after them: pI.proof.json).
# backlog_run FIXTURE JOBS DIR OUT: submit DIR's inputs in JOBS jobs of about equal
#   size, all before the first wait (a backlog: more partitions than buffers), with
#   FIXTURE's witness generator; wait for every job; check each job is done with
#   every partition, and that snarkjs verifies every proof in OUT. Prints the wall
#   seconds from the first submit to the last job's end. HOOK (optional, a command)
#   runs at that end, before the checks: bench/backlog.sh reads the stats page there,
#   so that its window holds the backlog and not the snarkjs checks after it.
backlog_inputs() { # fixture n dir
  local i
  mkdir -p "$3"
  for i in $(seq 1 "$2"); do cp "$1/input.json" "$3/p$i.json"; done
}

backlog_run() { # fixture jobs dir out [hook]
  local d="$1" njobs="$2" in="$3" out="$4" hook="${5:-}" g t0 t1 k j st n verified
  local -a files ids=()
  g="$(wgen_for "$d")" || fail "witness generator of $d"
  mapfile -t files < <(find "$in" -maxdepth 1 -name 'p*.json' | sort -V)
  n=${#files[@]}
  [ "$n" -ge "$njobs" ] || fail "backlog: $n inputs for $njobs jobs"
  mkdir -p "$out"
  t0=$(date +%s.%N)
  for k in $(seq 0 $((njobs - 1))); do
    local -a mine=("${files[@]:$((k * n / njobs)):$(((k + 1) * n / njobs - k * n / njobs))}")
    j="$(cuzk --json prove --zkey "$d/circuit_final.zkey" --witness-gen "$g" --out "$out" "${mine[@]}" |
      js 'r.job' "$(cat)")" || fail "backlog: submit job $((k + 1)) of $njobs"
    ids+=("$j")
  done
  for j in "${ids[@]}"; do
    cuzk wait "$j" --timeout-ms 1800000 >/dev/null || fail "backlog: job $j: $(cuzk status "$j" 2>&1 | head -5)"
  done
  t1=$(date +%s.%N)
  [ -z "$hook" ] || $hook
  for j in "${ids[@]}"; do
    st="$(cuzk --json status "$j")" || fail "backlog: status of job $j"
    [ "$(js "r.job.state + ' ' + r.job.parts.filter(p => p.state === 'done').length + '/' + r.job.parts.length" "$st")" \
      = "done $(js 'r.job.parts.length' "$st")/$(js 'r.job.parts.length' "$st")" ] ||
      fail "backlog: job $j not done with every partition: $(cuzk status "$j")"
  done
  verified="$(node "$ROOT/tests/lib/snarkjs_verify_all.cjs" "$FIXTURES/node/node_modules/snarkjs" \
    "$d/verification_key.json" "$out")" || fail "backlog: snarkjs: $verified"
  [ "$verified" = "$n verified" ] || fail "backlog: snarkjs: $verified, want $n"
  awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}'
}
