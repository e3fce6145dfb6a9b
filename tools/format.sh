#!/usr/bin/env bash
# make format / make format-check: clang-format over the project's own C, C header,
# C++ and CUDA sources (tracked by git; fetched and generated files are untracked, so
# never touched), all in the one style of .clang-format (4 spaces, no tabs).
#   tools/format.sh          rewrite the files in place
#   tools/format.sh --check  change nothing; list the files that differ and exit 1
# Hand-aligned tables and asm are kept with /* clang-format off */ ... on.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
CLANG_FORMAT="${CLANG_FORMAT:-clang-format}"
check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "usage: tools/format.sh [--check]" >&2; exit 2 ;;
esac
command -v "$CLANG_FORMAT" >/dev/null || { echo "format: $CLANG_FORMAT not found (deploy/install-deps.sh installs clang-format)" >&2; exit 2; }
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "format: not a git work tree (the file list is git's)" >&2; exit 2; }

differ=()
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  if [ $check -eq 1 ]; then
    "$CLANG_FORMAT" --style=file:.clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || differ+=("$f")
  else
    "$CLANG_FORMAT" --style=file:.clang-format -i "$f"
  fi
done < <(git ls-files -z -- '*.c' '*.h' '*.cc' '*.cpp' '*.hpp' '*.cu' '*.cuh')

if [ $check -eq 1 ] && [ ${#differ[@]} -gt 0 ]; then
  echo "format-check: ${#differ[@]} file(s) differ from clang-format (make format rewrites them):" >&2
  printf '  %s\n' "${differ[@]}" >&2
  exit 1
fi
[ $check -eq 1 ] && echo "format-check: every file matches clang-format"
exit 0
