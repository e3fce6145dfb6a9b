# shellcheck shell=bash
# A real PostgreSQL cluster for a test, never a mock database: initdb + pg_ctl as a
# per-run unprivileged user, in $tmp/pg, on a free port, its unix socket in that dir.
# Sourced after daemon.sh (tmp, fail, daemon_on_exit) and security/lib.sh (sec_user_add).
#   free_port          a TCP port nobody listens on (bound and closed just now)
#   pg_cluster_start WHO   exits 77 (SKIP, naming WHO) without root, the server binaries,
#                      useradd or runuser; else the cluster up with a database cuzk:
#                      url (its connection URL), bindir, pg, port, pgu; as_pg CMD...
#                      (as the cluster's user), pgstart (start it again after a stop);
#                      stopped at exit before its user is removed. With pg_password
#                      set first, the cluster asks for it (scram-sha-256): url has
#                      none (the test adds it where it means to), and the test's own
#                      client calls (as_pg, psql_q) read it from a 0600 PGPASSFILE
#                      of the cluster's user
#   pg_url DB          the URL of database DB (created first)
#   psql_q SQL         SQL on database cuzk, unaligned rows
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

pg_cluster_start() {
  if [ "$(id -u)" -ne 0 ]; then echo "SKIP: ${1:-$(basename "$0")} needs root to create the cluster's user"; exit 77; fi
  bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)"
  [ -n "$bindir" ] && [ -x "$bindir/initdb" ] && [ -x "$bindir/pg_ctl" ] ||
    { echo "SKIP: no PostgreSQL server binaries (deploy/install-deps.sh installs postgresql)"; exit 77; }
  command -v useradd >/dev/null && command -v runuser >/dev/null ||
    { echo "SKIP: useradd or runuser missing"; exit 77; }
  pgu="cuzkpg$$"
  sec_user_add "$pgu"
  pg="$tmp/pg"; mkdir -p "$pg"; chown "$pgu" "$pg"; chmod 755 "$tmp"
  port="$(free_port)"
  # The cluster is stopped before sec_user_del kills the user's processes.
  daemon_on_exit="as_pg $bindir/pg_ctl -D $pg/data -m immediate stop >/dev/null 2>&1 || true; ${daemon_on_exit}"
  local auth=(--auth=trust)
  if [ -n "${pg_password:-}" ]; then
    (umask 077; printf '%s\n' "$pg_password" >"$pg/pwfile"; printf '*:*:*:cuzk:%s\n' "$pg_password" >"$pg/pgpass")
    chown "$pgu" "$pg/pwfile" "$pg/pgpass"
    auth=(--auth=scram-sha-256 --pwfile="$pg/pwfile")
  fi
  as_pg "$bindir/initdb" -D "$pg/data" -U cuzk "${auth[@]}" -E UTF8 >"$tmp/initdb.log" 2>&1 || { cat "$tmp/initdb.log"; fail "initdb"; }
  pgstart
  url="$(pg_url cuzk)"
  echo "ok: cluster up ($("$bindir/postgres" --version), port $port)"
}

as_pg() { runuser -u "$pgu" -- env ${pg_password:+PGPASSFILE="$pg/pgpass"} "$@"; }

pgstart() { as_pg "$bindir/pg_ctl" -D "$pg/data" -l "$pg/log" -w -t 60 \
  -o "-p $port -k $pg -c listen_addresses=''" start >/dev/null || { tail "$pg/log"; fail "pg_ctl start"; }; }

pg_url() {
  as_pg "$bindir/createdb" -h "$pg" -p "$port" -U cuzk "$1"
  echo "postgresql://cuzk@/$1?host=$pg&port=$port"
}

psql_q() { as_pg "$bindir/psql" -h "$pg" -p "$port" -U cuzk -d cuzk -qAt -v ON_ERROR_STOP=1 -c "$1"; }
