# shellcheck shell=bash
# (tests/security/lib.sh is the daemon-harness flavour used by the connection tests;
# this one, with setpriv and fixed user names, by the file and run-dir tests. To be
# merged into one in issue 18's single harness.)
# Shared by tests/security/*.sh (sourced): the attacker is an unprivileged second
# user, created here with useradd; without root the test is skipped (exit 77).
#   sec_need_root          exit 77 (with the reason on stderr) unless root with useradd
#   ATTACKER               the attacker's user name (created if missing)
#   as_attacker CMD...     run CMD as the attacker
sec_need_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "SKIP: $(basename "$0") needs root (it creates a second user with useradd)" >&2
    exit 77
  fi
  command -v useradd >/dev/null && command -v setpriv >/dev/null || {
    echo "SKIP: $(basename "$0") needs useradd and setpriv" >&2; exit 77; }
  ATTACKER="${CUZK_TEST_ATTACKER:-cuzkattk}"
  id -u "$ATTACKER" >/dev/null 2>&1 || useradd -M -N -s /bin/sh "$ATTACKER" 2>/dev/null \
    || id -u "$ATTACKER" >/dev/null 2>&1 || { echo "SKIP: useradd $ATTACKER failed" >&2; exit 77; }
  ATTACKER_UID="$(id -u "$ATTACKER")"
}
as_attacker() {
  setpriv --reuid="$ATTACKER_UID" --regid="$(id -g "$ATTACKER")" --clear-groups -- "$@"
}
