#!/usr/bin/env bash
# test: exclusive (creates and removes Unix users: useradd and userdel lock /etc/passwd)
# Code a user controls never runs as root, no input costs more than its bytes are
# worth, fleet credentials stay off the command line: runs tests/security/{wgen_place,
# fleet_password,input_bounds,fleet_rows,fd_hoard,operator_room,resume_oracle,temp_squat,group_reach,name_display,acl_outdir,hung_resume}.sh, each an attack (as a second user where a user
# matters) that fails if it works. Needs root (useradd); exit 77 (SKIP) otherwise.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../security" && pwd)"
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: security_inputs needs root (the tests create a second user with useradd)" >&2
  exit 77
fi
rc=0 ran=0
for t in wgen_place fleet_password input_bounds fleet_rows fd_hoard operator_room resume_oracle temp_squat group_reach name_display acl_outdir hung_resume; do
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
