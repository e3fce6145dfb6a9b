#!/usr/bin/env bash
# tools/cuda_stack.sh [LIMIT] FILE.o.ptxas... — each kernel's registers and stack bytes
# per thread from ptxas -v's report (the Makefile keeps it beside each CUDA object);
# exit 1 when a kernel's cumulative stack exceeds LIMIT bytes (default 64).
limit=64
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then
  limit="$1"
  shift
fi
awk -v limit="$limit" '
  /Compiling entry function/ { match($0, /'"'"'[^'"'"']*'"'"'/); k = substr($0, RSTART + 1, RLENGTH - 2); arch = $NF }
  /Used [0-9]+ registers/ && k != "" {
    regs = $0; sub(/.*Used /, "", regs); sub(/ registers.*/, "", regs)
    st = 0; if (match($0, /[0-9]+ bytes cumulative stack size/)) { st = substr($0, RSTART, RLENGTH); sub(/ .*/, "", st) }
    f = FILENAME; sub(/.*\//, "", f); sub(/\.o\.ptxas$/, "", f)
    printf "%-18s %4s regs %5s B stack  %s\n", f, regs, st, k
    if (st + 0 > limit) bad++
    k = ""
  }
  END { if (bad) { printf "%d kernel(s) above %d bytes of stack per thread\n", bad, limit; exit 1 } }
' "$@"
