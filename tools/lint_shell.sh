#!/usr/bin/env bash
# make lint-shell: shellcheck, at its default level, over the project's shell scripts
# (tools/shell_files.sh), with the settings of .shellcheckrc (sourced files followed;
# the checks disabled project-wide, each with its reason). Any finding fails. A check
# that a script means to break is disabled on its line, with the reason:
#   # shellcheck disable=SC2086 # the flags are words
# Without shellcheck the check is skipped with a line saying so, except in CI
# (CI=true), where a missing tool is a failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." # .shellcheckrc's $ROOT paths are the root's
. tools/shell_files.sh
SHELLCHECK="${SHELLCHECK:-shellcheck}"
if ! command -v "$SHELLCHECK" >/dev/null; then
  if [ "${CI:-}" = true ]; then
    echo "lint-shell: $SHELLCHECK not found, and CI needs it (deploy/install-deps.sh installs shellcheck)" >&2
    exit 2
  fi
  echo "lint-shell: SKIP: $SHELLCHECK not found (deploy/install-deps.sh installs shellcheck)" >&2
  exit 0
fi
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || {
  echo "lint-shell: not a git work tree (the file list is git's)" >&2
  exit 2
}

# A few scripts a process, one process per CPU: each script is checked with the files
# it sources, so one process for all of them is several times slower.
mapfile -d '' scripts < <(shell_files)
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
rc=0
printf '%s\0' "${scripts[@]}" | xargs -0 -n 8 -P "$(nproc)" "$SHELLCHECK" -f gcc >"$out" 2>&1 || rc=$?
if [ $rc -ne 0 ] || [ -s "$out" ]; then
  sort "$out" >&2
  echo "lint-shell: $(grep -c ': \(note\|warning\|error\|style\):' "$out" || true) finding(s) in ${#scripts[@]} scripts (shellcheck; fix them, or disable one on its line with the reason)" >&2
  exit 1
fi
echo "lint-shell: ${#scripts[@]} scripts, no finding"
