#!/usr/bin/env bash
# The fleet's password never reaches /proc/PID/cmdline, which every local user reads:
# with it a user could write queue rows. cuzkd refuses `--queue URL` with a password
# on its command line (as user:pw@ or password=), and takes one from its config file
# only when that file is closed to everyone but its owner. --plan stops after the
# options, so no database is needed: each case is decided by the option checks alone.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/daemon.sh"
daemon_init fleetpw
bad=0
try() { # expected-rc what args...
  local want="$1" what="$2"
  shift 2
  local rc=0
  "$BUILD/bin/cuzkd" --plan --run-dir "$run" --devices cpu:1 "$@" >"$tmp/out" 2>&1 || rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL: $what: exit $rc, expected $want"
    cat "$tmp/out"
    bad=1
  else
    echo "ok: $what -> exit $rc $(grep -m1 -o 'password[^:]*' "$tmp/out" || true)"
  fi
}
try 2 "password in a URL on the command line" --queue 'postgresql://u:s3cret@127.0.0.1:9/db'
try 2 "password= in the URL's query" --queue 'postgresql://u@127.0.0.1:9/db?password=s3cret'
try 2 "password= in a key=value string" --queue 'host=127.0.0.1 port=9 password=s3cret'
# the spellings a textual check missed (libpq's own parser decides now)
try 2 "password = with blanks in a key=value string" --queue 'host=127.0.0.1 port=9 password = s3cret'
try 2 "a tab before password= in a key=value string" --queue "$(printf 'host=127.0.0.1\tpassword=s3cret')"
try 2 "%70assword= in the URL's query" --queue 'postgresql://u@127.0.0.1:9/db?%70assword=s3cret'
try 0 "no password on the command line" --queue 'postgresql://u@127.0.0.1:9/db'
printf 'queue = postgresql://u:s3cret@127.0.0.1:9/db\n' >"$tmp/c.conf"
chmod 644 "$tmp/c.conf"
try 2 "password in a config file others can read (0644)" --config "$tmp/c.conf"
chmod 640 "$tmp/c.conf"
try 2 "password in a config file the group can read (0640)" --config "$tmp/c.conf"
printf 'queue = host=127.0.0.1 port=9 password = s3cret\n' >"$tmp/c2.conf"
chmod 644 "$tmp/c2.conf"
try 2 "password = with blanks in a config file others can read (0644)" --config "$tmp/c2.conf"
chmod 600 "$tmp/c.conf"
try 0 "password in a 0600 config file" --config "$tmp/c.conf"
# The client: its argv is as public as cuzkd's (a `cuzk wait` may run for hours).
for cmd in "status" "wait 1" "fetch 1 --out $tmp"; do
  rc=0
  # shellcheck disable=SC2086
  "$BUILD/bin/cuzk" $cmd --queue 'postgresql://u:s3cret@127.0.0.1:9/db' >"$tmp/cout" 2>&1 || rc=$?
  if [ "$rc" != 2 ] || ! grep -q 'password on the command line' "$tmp/cout"; then
    echo "FAIL: cuzk $cmd --queue with a password: exit $rc"
    cat "$tmp/cout"
    bad=1
  else
    echo "ok: cuzk ${cmd%% *} --queue with a password -> exit $rc"
  fi
  grep -q 's3cret' "$tmp/cout" && {
    echo "FAIL: cuzk $cmd printed the password"
    bad=1
  }
done
# cuzk-api --queue (queue mode): the same refusal; cuzkd hands it the URL on a
# descriptor instead (--queue-fd; tests/scripts/api_fleet.sh runs it with a password).
if [ -x "$BUILD/bin/cuzk-api" ]; then
  rc=0
  "$BUILD/bin/cuzk-api" --queue 'postgresql://u:s3cret@127.0.0.1:9/db' >"$tmp/aout" 2>&1 || rc=$?
  if [ "$rc" != 2 ] || ! grep -q 'password on the command line' "$tmp/aout" || grep -q 's3cret' "$tmp/aout"; then
    echo "FAIL: cuzk-api --queue with a password: exit $rc: $(cat "$tmp/aout")"
    bad=1
  else
    echo "ok: cuzk-api --queue with a password -> exit $rc"
  fi
fi
grep -q 's3cret' "$tmp/out" && {
  echo "FAIL: the password was printed"
  bad=1
}
[ $bad -eq 0 ] || exit 1
echo "PASS: fleet_password"
