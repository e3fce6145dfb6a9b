# shellcheck shell=bash
# A real PostgreSQL cluster for a test, never a mock database (sourced after
# tests/lib/daemon.sh, daemon_init and tests/security/lib.sh): pg_cluster_start makes
# one as a per-run unprivileged user in $tmp/pg (its unix socket there, a free port,
# no TCP), stopped at exit (before its user is removed), and sets url (database
# cuzk), bindir, pg, port, pgu. Exit 77 (SKIP) without root, the PostgreSQL server
# binaries, useradd or runuser.
#   pg_cluster_start [WHO]  WHO names the test in the SKIP line (default: the script).
#                      With pg_password set first, the cluster asks for it
#                      (scram-sha-256): url has none (the test adds it where it means
#                      to), and the test's own client calls (as_pg, psql_q) read it
#                      from a 0600 PGPASSFILE of the cluster's user
#   as_pg CMD...       CMD as the cluster's user
#   psql_q SQL         SQL on database cuzk, its rows unaligned (-qAt), stop on error
#   pgstart            start the cluster again (after an `as_pg pg_ctl ... stop`)
#   pg_url DB          create database DB, print its URL

pg_cluster_start() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: ${1:-$(basename "$0")} needs root to create the cluster's user"
    exit 77
  fi
  bindir="$(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -name bin -type d 2>/dev/null | sort -V | tail -n1)"
  [ -n "$bindir" ] && [ -x "$bindir/initdb" ] && [ -x "$bindir/pg_ctl" ] ||
    {
      echo "SKIP: no PostgreSQL server binaries (deploy/install-deps.sh installs postgresql)"
      exit 77
    }
  command -v useradd >/dev/null && command -v runuser >/dev/null ||
    {
      echo "SKIP: useradd or runuser missing"
      exit 77
    }
  pgu="cuzkpg$$"
  sec_user_add "$pgu"
  # shellcheck disable=SC2154 # tmp: daemon_init's (daemon.sh)
  pg="$tmp/pg"
  mkdir -p "$pg"
  chown "$pgu" "$pg"
  chmod 755 "$tmp"
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  daemon_on_exit="as_pg $bindir/pg_ctl -D $pg/data -m immediate stop >/dev/null 2>&1 || true; ${daemon_on_exit}"
  local auth=(--auth=trust)
  if [ -n "${pg_password:-}" ]; then
    (
      umask 077
      printf '%s\n' "$pg_password" >"$pg/pwfile"
      printf '*:*:*:cuzk:%s\n' "$pg_password" >"$pg/pgpass"
    )
    chown "$pgu" "$pg/pwfile" "$pg/pgpass"
    auth=(--auth=scram-sha-256 --pwfile="$pg/pwfile")
  fi
  as_pg "$bindir/initdb" -D "$pg/data" -U cuzk "${auth[@]}" -E UTF8 >"$tmp/initdb.log" 2>&1 || {
    cat "$tmp/initdb.log"
    fail "initdb"
  }
  pgstart
  # shellcheck disable=SC2034 # for the test
  url="$(pg_url cuzk)"
}
as_pg() { runuser -u "$pgu" -- env ${pg_password:+PGPASSFILE="$pg/pgpass"} "$@"; }
psql_q() { as_pg "$bindir/psql" -h "$pg" -p "$port" -U cuzk -d cuzk -qAt -v ON_ERROR_STOP=1 -c "$1"; }
pgstart() { as_pg "$bindir/pg_ctl" -D "$pg/data" -l "$pg/log" -w -t 60 \
  -o "-p $port -k $pg -c listen_addresses=''" start >/dev/null || {
  tail "$pg/log"
  fail "pg_ctl start"
}; }
pg_url() {
  as_pg "$bindir/createdb" -h "$pg" -p "$port" -U cuzk "$1"
  echo "postgresql://cuzk@/$1?host=$pg&port=$port"
}
