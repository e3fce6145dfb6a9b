# shellcheck shell=bash
# The project's shell scripts, for tools/format.sh (shfmt) and tools/lint_shell.sh
# (shellcheck). Sourced, never run, from the root of a git work tree.
#   shell_files   every tracked *.sh, and every tracked file without that extension
#                 whose first line is a sh or bash #! line (.ci/run, debian/*.postrm),
#                 NUL-terminated. Git's list: fetched and generated files are
#                 untracked, so never touched.
shell_files() {
  local f line
  git ls-files -z -- '*.sh'
  while IFS= read -r -d '' f; do
    case "$f" in *.sh) continue ;; esac
    [ -f "$f" ] && [ ! -L "$f" ] || continue
    IFS= read -r line <"$f" || continue
    case "$line" in
      '#!'*/sh | '#!'*/bash | '#!'*'/env bash' | '#!'*'/env sh' | '#!'*/sh\ * | '#!'*/bash\ *) printf '%s\0' "$f" ;;
    esac
  done < <(git ls-files -z)
}
