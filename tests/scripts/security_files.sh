#!/usr/bin/env bash
# test: exclusive (creates and removes Unix users: useradd and userdel lock /etc/passwd)
# Issue 16 (security), the file and run-dir items: runs tests/security/{symlink_tempname,
# rundir,confused_deputy,truncate_inputs,resume_paths,copy_stall,sticky_publish}.sh, each of which performs an attack as an
# unprivileged second user and fails if it works. Needs root (useradd); exit 77 (SKIP)
# otherwise.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../security" && pwd)"
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: security_files needs root (the tests create a second user with useradd)" >&2
  exit 77
fi
rc=0 ran=0
for t in symlink_tempname rundir confused_deputy truncate_inputs resume_paths copy_stall sticky_publish; do
  [ -f "$here/$t.sh" ] || continue
  echo "== security/$t"
  r=0; bash "$here/$t.sh" || r=$?
  case $r in
    0) ran=$((ran + 1)) ;;
    77) echo "SKIP: security/$t" >&2 ;;
    *) echo "FAIL: security/$t (exit $r)"; rc=1 ;;
  esac
done
[ $rc -ne 0 ] || [ $ran -gt 0 ] || exit 77
exit $rc
