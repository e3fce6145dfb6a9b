#!/usr/bin/env bash
# make format-check and make lint-shell on a planted tree: in a throwaway git repo with
# the tree's tools/format.sh, tools/lint_shell.sh, tools/shell_files.sh, .editorconfig
# and .shellcheckrc, a script indented with tabs makes the format check fail and name
# it, `make format` rewrites it and the check passes; a script with an unquoted
# variable makes the lint fail on that line, and passes once the finding is disabled
# on its line; a missing tool is a SKIP line (exit 0), a failure under CI=true. Also:
# every script of the tree that shell_files lists parses (bash -n, sh -n).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
fail() {
  echo "shell_style: FAIL: $*"
  exit 1
}
for t in git shfmt shellcheck clang-format; do
  command -v "$t" >/dev/null || {
    echo "SKIP: $t not installed (deploy/install-deps.sh installs it)"
    exit 77
  }
done
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# ---- the tree's own scripts: listed (the extension-less ones too) and parsed ------------
cd "$root"
. tools/shell_files.sh
mapfile -d '' scripts < <(shell_files)
printf '%s\n' "${scripts[@]}" >"$tmp/list"
for want in .ci/run debian/cuzk.postrm tests/lib/common.sh tools/format.sh; do
  grep -qx "$want" "$tmp/list" || fail "shell_files does not list $want"
done
! grep -q '\.c$' "$tmp/list" || fail "shell_files lists a C file"
for f in "${scripts[@]}"; do
  case "$(head -n 1 "$f")" in
    '#!/bin/sh'*) sh -n "$f" ;;
    *) bash -n "$f" ;;
  esac || fail "$f does not parse"
done
echo "ok: shell_files: ${#scripts[@]} scripts (.ci/run and debian/*.postrm among them), all parse"

# ---- a planted tree ---------------------------------------------------------------------
p="$tmp/tree"
mkdir -p "$p/tools" "$p/lib"
cp tools/format.sh tools/lint_shell.sh tools/shell_files.sh "$p/tools/"
cp .editorconfig .shellcheckrc .clang-format "$p/"
cd "$p"
printf '#!/usr/bin/env bash\nif true; then\n\techo tabs\nfi\n' >lib/tabs.sh
# shellcheck disable=SC2016 # the planted script's own $1
printf '#!/bin/sh\nf="$1"\nls $f\n' >run-it
git init -q . && git add -A
git -c user.name=t -c user.email=t@t commit -qm planted

rc=0
CI=true bash tools/format.sh --check >"$tmp/fc.out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "format-check: exit $rc on a script with tabs: $(cat "$tmp/fc.out")"
grep -q '^  lib/tabs.sh$' "$tmp/fc.out" || fail "format-check did not name lib/tabs.sh: $(cat "$tmp/fc.out")"
bash tools/format.sh >"$tmp/f.out" 2>&1 || fail "format: $(cat "$tmp/f.out")"
[ "$(sed -n 3p lib/tabs.sh)" = "  echo tabs" ] || fail "format did not indent with 2 spaces: $(cat -A lib/tabs.sh)"
CI=true bash tools/format.sh --check >"$tmp/fc2.out" 2>&1 || fail "format-check after format: $(cat "$tmp/fc2.out")"
echo "ok: format-check names a script indented with tabs, format rewrites it to 2 spaces"

rc=0
CI=true bash tools/lint_shell.sh >"$tmp/l.out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "lint-shell: exit $rc on an unquoted variable: $(cat "$tmp/l.out")"
grep -q '^run-it:3:.*SC2086' "$tmp/l.out" || fail "lint-shell did not name run-it:3 (SC2086): $(cat "$tmp/l.out")"
# shellcheck disable=SC2016
printf '#!/bin/sh\nf="$1"\n# shellcheck disable=SC2086 # the test: options that split\nls $f\n' >run-it
CI=true bash tools/lint_shell.sh >"$tmp/l2.out" 2>&1 || fail "lint-shell with the finding disabled: $(cat "$tmp/l2.out")"
echo "ok: lint-shell fails on a finding (run-it:3 SC2086), passes once it is disabled on its line"

rc=0
CI='' SHELLCHECK=/nonexistent/shellcheck bash tools/lint_shell.sh >"$tmp/s.out" 2>&1 || rc=$?
[ $rc -eq 0 ] && grep -q 'SKIP' "$tmp/s.out" || fail "lint-shell without shellcheck: exit $rc: $(cat "$tmp/s.out")"
rc=0
CI=true SHELLCHECK=/nonexistent/shellcheck bash tools/lint_shell.sh >"$tmp/s.out" 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "lint-shell without shellcheck under CI=true: exit $rc: $(cat "$tmp/s.out")"
rc=0
CI='' SHFMT=/nonexistent/shfmt bash tools/format.sh --check >"$tmp/s.out" 2>&1 || rc=$?
[ $rc -eq 0 ] && grep -q 'SKIP' "$tmp/s.out" || fail "format-check without shfmt: exit $rc: $(cat "$tmp/s.out")"
rc=0
CI=true SHFMT=/nonexistent/shfmt bash tools/format.sh --check >"$tmp/s.out" 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "format-check without shfmt under CI=true: exit $rc: $(cat "$tmp/s.out")"
echo "ok: without shfmt or shellcheck: a SKIP line and exit 0; under CI=true exit 2"
