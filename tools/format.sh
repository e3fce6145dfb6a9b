#!/usr/bin/env bash
# make format / make format-check: clang-format over the project's own C, C header,
# C++ and CUDA sources, all in the one style of .clang-format (4 spaces, no tabs), and
# shfmt over its shell scripts (tools/shell_files.sh), in the style of .editorconfig's
# shell sections (2 spaces, case items indented). Both lists are git's: fetched and
# generated files are untracked, so never touched.
#   tools/format.sh          rewrite the files in place
#   tools/format.sh --check  change nothing; list the files that differ (shfmt's diff
#                            too) and exit 1
# Hand-aligned tables and asm are kept with /* clang-format off */ ... on.
# Without shfmt the scripts are skipped with a line saying so, except in CI (CI=true),
# where a missing tool is a failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. tools/shell_files.sh
CLANG_FORMAT="${CLANG_FORMAT:-clang-format}"
SHFMT="${SHFMT:-shfmt}"
check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *)
    echo "usage: tools/format.sh [--check]" >&2
    exit 2
    ;;
esac
command -v "$CLANG_FORMAT" >/dev/null || {
  echo "format: $CLANG_FORMAT not found (deploy/install-deps.sh installs clang-format)" >&2
  exit 2
}
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || {
  echo "format: not a git work tree (the file list is git's)" >&2
  exit 2
}

differ=()
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  if [ $check -eq 1 ]; then
    "$CLANG_FORMAT" --style=file:.clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || differ+=("$f")
  else
    "$CLANG_FORMAT" --style=file:.clang-format -i "$f"
  fi
done < <(git ls-files -z -- '*.c' '*.h' '*.cc' '*.cpp' '*.hpp' '*.cu' '*.cuh')

# The shell scripts: shfmt with no options reads them from .editorconfig.
shell_differ=()
if command -v "$SHFMT" >/dev/null; then
  mapfile -d '' scripts < <(shell_files)
  if [ $check -eq 1 ]; then
    # -l: the names of the scripts that differ; a script shfmt cannot parse fails
    list="$("$SHFMT" -l "${scripts[@]}")" || {
      echo "format-check: shfmt could not read a script (above)" >&2
      exit 1
    }
    [ -z "$list" ] || mapfile -t shell_differ <<<"$list"
    [ ${#shell_differ[@]} -eq 0 ] || "$SHFMT" -d "${shell_differ[@]}" >&2 || true
  else
    "$SHFMT" -w "${scripts[@]}"
  fi
elif [ "${CI:-}" = true ]; then
  echo "format: $SHFMT not found, and CI needs it (deploy/install-deps.sh installs shfmt)" >&2
  exit 2
else
  echo "format: SKIP the shell scripts: $SHFMT not found (deploy/install-deps.sh installs shfmt)" >&2
fi

if [ $check -eq 1 ] && [ $((${#differ[@]} + ${#shell_differ[@]})) -gt 0 ]; then
  if [ ${#differ[@]} -gt 0 ]; then
    echo "format-check: ${#differ[@]} file(s) differ from clang-format (make format rewrites them):" >&2
    printf '  %s\n' "${differ[@]}" >&2
  fi
  if [ ${#shell_differ[@]} -gt 0 ]; then
    echo "format-check: ${#shell_differ[@]} script(s) differ from shfmt (make format rewrites them):" >&2
    printf '  %s\n' "${shell_differ[@]}" >&2
  fi
  exit 1
fi
[ $check -eq 1 ] && echo "format-check: every file matches clang-format and shfmt"
exit 0
