# shellcheck shell=bash
# tests/security: an unprivileged attacker user (sourced after tests/lib/daemon.sh).
#   attacker_init   SKIP (77) unless root; creates user $atk (own group, no home),
#                   removed on exit
#   as_attacker CMD...  run CMD as $atk
attacker_init() {
  if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root to create an attacker user (useradd)"; exit 77; fi
  command -v useradd >/dev/null && command -v runuser >/dev/null ||
    { echo "SKIP: useradd or runuser missing"; exit 77; }
  atk="cuzkatk$$"
  useradd -M -U -s /bin/sh "$atk" || { echo "SKIP: useradd $atk failed"; exit 77; }
  # The attacker's processes (only this test's user) are killed first, or userdel fails.
  daemon_on_exit="${daemon_on_exit:+$daemon_on_exit; }attacker_cleanup"
}
attacker_cleanup() {
  pkill -KILL -u "$atk" 2>/dev/null || true
  local _; for _ in $(seq 1 20); do pgrep -u "$atk" >/dev/null || break; sleep 0.1; done
  userdel -f "$atk" >/dev/null 2>&1 || true; groupdel "$atk" >/dev/null 2>&1 || true
}
as_attacker() { runuser -u "$atk" -- "$@"; }
# Let the attacker reach the socket (a member of --group $atk).
attacker_reach() { chmod 755 "$tmp" "$run"; chmod 666 "$run/$inst.sock"; }
