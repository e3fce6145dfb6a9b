#!/usr/bin/env bash
# Bad inputs to `cuzk prove-local`: each one gives its documented exit code and
# a one-line message on stderr that names the file at fault.
#
# Exit codes of `cuzk prove-local [--r1cs R1CS] ZKEY WTNS PROOF PUBLIC`:
#   0 ok
#   2 usage (wrong arguments, unknown option)
#   3 missing or unreadable input file (also: a directory given as a file)
#   4 not a zkey / wtns / r1cs: bad magic or format (e.g. a section whose size
#     disagrees with its contents)
#   5 truncated file (the container or a section runs past the end of the file)
#   6 unsupported protocol or curve (a PLONK zkey: the message says "plonk")
#   7 witness and zkey (or r1cs) do not match: length or prime
#   8 unsatisfied witness, only checked with --r1cs: the message gives the first
#     failing constraint, numbered from 0 in r1cs order (as `snarkjs wtns check`)
#   9 an output file cannot be written
# For codes 3..8 the prover must not leave a proof file behind.
#
# Environment: BUILD (default build), PROVER_CMD (default "$BUILD/bin/cuzk prove-local").
set -euo pipefail

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

prover_from_env

use_fixtures

use_tmp

# Inputs: a small bn128 fixture, another circuit, the same circuit on bls12381.
F="$FIXTURES/bn128/manypub"
OTHER="$FIXTURES/bn128/mulchain-10"
BLS="$FIXTURES/bls12381/manypub"
for f in "$F/circuit_final.zkey" "$F/witness.wtns" "$F/circuit.r1cs" "$F/circuit_plonk.zkey" \
  "$OTHER/witness.wtns" "$OTHER/circuit.r1cs" "$BLS/witness.wtns"; do
  [ -f "$f" ] || {
    echo "FAIL: fixture file $f is missing (tests/fixtures/make.sh)" >&2
    exit 1
  }
done
in="$tmp/in"
mkdir -p "$in" "$tmp/cwd"
cp "$F/circuit_final.zkey" "$in/good.zkey"
cp "$F/witness.wtns" "$in/good.wtns"
cp "$F/circuit.r1cs" "$in/good.r1cs"
ZK="$in/good.zkey"
WT="$in/good.wtns"
R1="$in/good.r1cs"

# ---- file surgery (node) ----------------------------------------------------
# Every binary file here is: magic(4) version(u32) nSections(u32), then
# sections: id(u32) size(u64) payload.
cat >"$tmp/patch.cjs" <<'JS'
const fs = require("fs");
const [op, inF, outF, ...a] = process.argv.slice(2);
const b = fs.readFileSync(inF);
function sections(buf) {
  const n = buf.readUInt32LE(8), out = [];
  let off = 12;
  for (let i = 0; i < n; i++) {
    const id = buf.readUInt32LE(off), size = Number(buf.readBigUInt64LE(off + 4));
    out.push({ id, rec: off, pos: off + 12, size });
    off += 12 + size;
  }
  return out;
}
const sec = (id) => { const s = sections(b).find((x) => x.id === id); if (!s) throw new Error(`no section ${id}`); return s; };
const leInt = (buf, off, n) => { let v = 0n; for (let i = n - 1; i >= 0; i--) v = (v << 8n) | BigInt(buf[off + i]); return v; };
const putLe = (buf, off, n, v) => { for (let i = 0; i < n; i++) { buf[off + i] = Number(v & 0xffn); v >>= 8n; } };
let out = Buffer.from(b);
switch (op) {
  case "section-size": {           // ID DELTA: change a section's size field only
    const s = sec(+a[0]);
    out.writeBigUInt64LE(BigInt(s.size + +a[1]), s.rec + 4);
    break;
  }
  case "pad-section": {            // ID N: append N zero bytes to a section (size updated)
    const s = sec(+a[0]), n = +a[1];
    out = Buffer.concat([b.subarray(0, s.pos + s.size), Buffer.alloc(n), b.subarray(s.pos + s.size)]);
    out.writeBigUInt64LE(BigInt(s.size + n), s.rec + 4);
    break;
  }
  case "u32": {                    // ID OFFSET VALUE: set a u32 inside a section
    const s = sec(+a[0]);
    out.writeUInt32LE(+a[2], s.pos + +a[1]);
    break;
  }
  case "zkey-q": {                 // replace q (groth16 header) by q + 2
    const s = sec(2), n8q = b.readUInt32LE(s.pos);
    putLe(out, s.pos + 4, n8q, leInt(b, s.pos + 4, n8q) + 2n);
    break;
  }
  case "wtns-bump": {              // INDEX: witness[INDEX] += 1 (mod prime)
    const h = sec(1), v = sec(2), n8 = b.readUInt32LE(h.pos), p = leInt(b, h.pos + 4, n8);
    const off = v.pos + (+a[0]) * n8;
    putLe(out, off, n8, (leInt(b, off, n8) + 1n) % p);
    break;
  }
  case "r1cs-layout": {            // print "nWires nPubOut nPubIn nPrvIn"
    const h = sec(1), n8 = b.readUInt32LE(h.pos), o = h.pos + 4 + n8;
    console.log([0, 4, 8, 12].map((d) => b.readUInt32LE(o + d)).join(" "));
    process.exit(0);
  }
  default: throw new Error(`unknown op ${op}`);
}
fs.writeFileSync(outF, out);
JS
patch() { node "$tmp/patch.cjs" "$@"; }
cut_at() { head -c "$2" "$1" >"$3"; } # file bytes out

# ---- the cases ----------------------------------------------------------------
pass=0
fail=0
failed=()
out="$tmp/out"

# expect CODE "description" MENTION [--re REGEX] -- ARGS...
#   MENTION: a file whose path or name the message must contain ("" = no check;
#   "A|B" = either one). --re: the message must also match REGEX (grep -Ei).
expect() {
  local want="$1" desc="$2" mention="$3" re=""
  shift 3
  if [ "${1:-}" = "--re" ]; then
    re="$2"
    shift 2
  fi
  [ "${1:-}" = "--" ] && shift
  rm -rf "$out"
  mkdir -p "$out"
  local rc=0 errs=() msg
  # from a scratch directory, so that nothing stray lands in the work tree
  (cd "$tmp/cwd" && timeout 120 "${PROVER[@]}" "$@") >"$tmp/stdout" 2>"$tmp/stderr" </dev/null || rc=$?
  msg="$(head -c 400 "$tmp/stderr")"
  [ "$rc" = "$want" ] || errs+=("exit code $rc, expected $want")
  if [ "$want" != 0 ]; then
    if [ ! -s "$tmp/stderr" ]; then
      errs+=("nothing on stderr")
    elif [ "$want" != 2 ] && [ "$(wc -l <"$tmp/stderr")" != 1 ]; then
      errs+=("stderr has $(wc -l <"$tmp/stderr") lines, expected exactly one")
    fi
    if [ -n "$mention" ]; then
      local ok=0 m
      IFS='|' read -r -a ms <<<"$mention"
      for m in "${ms[@]}"; do
        grep -qF -- "$m" "$tmp/stderr" && ok=1
        grep -qF -- "$(basename "$m")" "$tmp/stderr" && ok=1
      done
      [ $ok -eq 1 ] || errs+=("the message does not name $(for m in "${ms[@]}"; do printf '%s ' "$(basename "$m")"; done)")
    fi
    if [ -n "$re" ] && ! grep -qEi -- "$re" "$tmp/stderr"; then errs+=("the message does not match /$re/"); fi
    if [ "$want" -ge 3 ] && [ "$want" -le 8 ] && [ -e "$out/proof.json" ]; then
      errs+=("a proof file was left behind")
    fi
  fi
  if [ ${#errs[@]} -eq 0 ]; then
    pass=$((pass + 1))
    printf 'ok    %-52s exit %s  %s\n' "$desc" "$rc" "$(head -n1 <<<"$msg" | cut -c1-110)"
  else
    fail=$((fail + 1))
    failed+=("$desc")
    local joined
    joined="$(printf '%s; ' "${errs[@]}")"
    printf 'FAIL  %-52s %s\n' "$desc" "${joined%; }"
    [ -z "$msg" ] || printf '        stderr: %s\n' "$(head -n 3 <<<"$msg")"
  fi
}
P="$out/proof.json"
Q="$out/public.json"

# expect_as CODE "description" zkey|wtns|r1cs FILE [--re REGEX]: FILE given as the
# zkey, the witness or the --r1cs file, the other inputs good; the message must name
# FILE.
expect_as() {
  local want="$1" desc="$2" role="$3" f="$4"
  shift 4
  case "$role" in
    zkey) expect "$want" "$desc" "$f" "$@" -- "$f" "$WT" "$P" "$Q" ;;
    wtns) expect "$want" "$desc" "$f" "$@" -- "$ZK" "$f" "$P" "$Q" ;;
    r1cs) expect "$want" "$desc" "$f" "$@" -- --r1cs "$f" "$ZK" "$WT" "$P" "$Q" ;;
    *)
      echo "expect_as: role $role" >&2
      exit 2
      ;;
  esac
}

# 0: the baseline must work, or every other result means nothing
expect 0 "good inputs" "" -- "$ZK" "$WT" "$P" "$Q"
expect 0 "good inputs with --r1cs" "" -- --r1cs "$R1" "$ZK" "$WT" "$P" "$Q"

# 2: usage
expect 2 "no arguments" ""
expect 2 "three arguments" "" -- "$ZK" "$WT" "$P"
expect 2 "five positional arguments" "" -- "$ZK" "$WT" "$P" "$Q" "$tmp/extra"
expect 2 "unknown option" "" -- --no-such-option "$ZK" "$WT" "$P" "$Q"
expect 2 "--r1cs without its file" "" -- "$ZK" "$WT" "$P" "$Q" --r1cs

# 3: missing / unreadable
expect_as 3 "missing zkey" zkey "$in/missing.zkey"
expect_as 3 "missing wtns" wtns "$in/missing.wtns"
expect_as 3 "missing r1cs" r1cs "$in/missing.r1cs"
mkdir -p "$in/dir.zkey" "$in/dir.wtns"
expect_as 3 "zkey is a directory" zkey "$in/dir.zkey"
expect_as 3 "wtns is a directory" wtns "$in/dir.wtns"

# 4: not a zkey / wtns (magic, format)
cp "$WT" "$in/wtns_as.zkey"
expect_as 4 "a wtns given as zkey" zkey "$in/wtns_as.zkey"
cp "$ZK" "$in/zkey_as.wtns"
expect_as 4 "a zkey given as wtns" wtns "$in/zkey_as.wtns"
cp "$R1" "$in/r1cs_as.zkey"
expect_as 4 "an r1cs given as zkey" zkey "$in/r1cs_as.zkey"
head -c 4096 /dev/zero | tr '\0' 'x' >"$in/text.zkey"
expect_as 4 "4 kB of text as zkey" zkey "$in/text.zkey"
cp "$ZK" "$in/zkey_as.r1cs"
expect_as 4 "a zkey given as --r1cs" r1cs "$in/zkey_as.r1cs"
patch pad-section "$ZK" "$in/hdr_padded.zkey" 2 4
expect_as 4 "zkey header section 4 bytes too long" zkey "$in/hdr_padded.zkey"
patch pad-section "$WT" "$in/hdr_padded.wtns" 1 4
expect_as 4 "wtns header section 4 bytes too long" wtns "$in/hdr_padded.wtns"

# 5: truncated
zsize=$(stat -c %s "$ZK")
wsize=$(stat -c %s "$WT")
for at in 6 10 16 30 60 $((zsize / 2)) $((zsize - 1)); do
  cut_at "$ZK" "$at" "$in/cut$at.zkey"
  expect_as 5 "zkey truncated at $at of $zsize bytes" zkey "$in/cut$at.zkey"
done
for at in 10 30 60 $((wsize / 2)) $((wsize - 1)); do
  cut_at "$WT" "$at" "$in/cut$at.wtns"
  expect_as 5 "wtns truncated at $at of $wsize bytes" wtns "$in/cut$at.wtns"
done
patch section-size "$ZK" "$in/sec10_long.zkey" 10 1000
expect_as 5 "zkey last section size +1000 (past the end)" zkey "$in/sec10_long.zkey"
patch section-size "$WT" "$in/sec2_long.wtns" 2 32
expect_as 5 "wtns values section size +32 (past the end)" wtns "$in/sec2_long.wtns"
# A wrong size in the middle of the table makes the rest of it garbage: either
# format code is right there, but the exit code must be one of the two.
patch section-size "$ZK" "$in/sec2_size.zkey" 2 4
rc=0
(cd "$tmp/cwd" && timeout 120 "${PROVER[@]}" "$in/sec2_size.zkey" "$WT" "$P" "$Q") >/dev/null 2>"$tmp/stderr" || rc=$?
if [ $rc -eq 4 ] || [ $rc -eq 5 ]; then
  pass=$((pass + 1))
  printf 'ok    %-52s exit %s  %s\n' "zkey header section size +4 (table garbled)" "$rc" "$(head -n1 "$tmp/stderr" | cut -c1-110)"
else
  fail=$((fail + 1))
  failed+=("zkey header section size +4")
  printf 'FAIL  %-52s exit code %s, expected 4 or 5\n' "zkey header section size +4 (table garbled)" "$rc"
fi

# 6: unsupported protocol or curve
cp "$F/circuit_plonk.zkey" "$in/plonk.zkey"
expect_as 6 "a PLONK zkey" zkey "$in/plonk.zkey" --re plonk
patch u32 "$ZK" "$in/proto99.zkey" 1 0 99
expect_as 6 "zkey protocol id 99" zkey "$in/proto99.zkey"
patch zkey-q "$ZK" "$in/otherq.zkey"
expect_as 6 "zkey with an unknown base field q" zkey "$in/otherq.zkey"

# 7: witness / zkey / r1cs mismatch
cp "$OTHER/witness.wtns" "$in/other_circuit.wtns"
expect 7 "witness of another circuit (length)" "$in/other_circuit.wtns|$ZK" -- "$ZK" "$in/other_circuit.wtns" "$P" "$Q"
cp "$BLS/witness.wtns" "$in/bls12381.wtns"
expect 7 "witness over the bls12381 prime (same length)" "$in/bls12381.wtns|$ZK" -- "$ZK" "$in/bls12381.wtns" "$P" "$Q"
cp "$OTHER/circuit.r1cs" "$in/other_circuit.r1cs"
expect 7 "--r1cs of another circuit" "$in/other_circuit.r1cs|$ZK|$WT" -- --r1cs "$in/other_circuit.r1cs" "$ZK" "$WT" "$P" "$Q"

# 8: unsatisfied witness (with --r1cs): bump the 6th internal signal by one
read -r nwires npubout npubin nprvin < <(patch r1cs-layout "$R1" /dev/null)
idx=$((1 + npubout + npubin + nprvin + 5))
[ "$idx" -lt "$nwires" ] || {
  echo "FAIL: fixture too small for the unsatisfied-witness case" >&2
  exit 1
}
patch wtns-bump "$WT" "$in/unsat.wtns" "$idx"
chk="$("$SNARKJS" wtns check "$R1" "$in/unsat.wtns" 2>&1 || true)"
first="$(sed -n 's/.*aborting checking process at constraint \([0-9][0-9]*\).*/\1/p' <<<"$chk" | head -n1)"
if [ -z "$first" ]; then
  echo "FAIL: snarkjs wtns check does not reject the patched witness (signal $idx); output:" >&2
  echo "$chk" >&2
  exit 1
fi
expect 8 "unsatisfied witness (signal $idx, constraint $first)" "$in/unsat.wtns" \
  --re "constraint[^0-9]{0,20}$first([^0-9]|\$)" -- --r1cs "$R1" "$ZK" "$in/unsat.wtns" "$P" "$Q"

# 9: output not writable (tests run as root: use a path below a regular file)
: >"$tmp/file"
expect 9 "proof path below a regular file" "$tmp/file/proof.json" -- "$ZK" "$WT" "$tmp/file/proof.json" "$Q"
expect 9 "public path below a regular file" "$tmp/file/public.json" -- "$ZK" "$WT" "$P" "$tmp/file/public.json"
expect 9 "proof path in a missing directory" "$tmp/no/such/dir/proof.json" -- "$ZK" "$WT" "$tmp/no/such/dir/proof.json" "$Q"
mkdir -p "$tmp/a_dir.json"
expect 9 "proof path is a directory" "$tmp/a_dir.json" -- "$ZK" "$WT" "$tmp/a_dir.json" "$Q"

echo
[ $fail -eq 0 ] || {
  echo "failed cases:"
  printf '  %s\n' "${failed[@]}"
}
echo "e2e_bad_inputs: $pass passed, $fail failed"
[ $fail -eq 0 ]
