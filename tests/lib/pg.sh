# shellcheck shell=bash
# A real PostgreSQL cluster for a test (sourced after tests/lib/daemon.sh, daemon_init
# and tests/security/lib.sh): pg_cluster_start makes one as a per-run unprivileged
# user in $tmp/pg (its unix socket there, a free port, no TCP), stopped at exit, and
# sets url (database cuzk) and as_pg/psql_q. Exit 77 (SKIP) without root or the
# PostgreSQL server binaries.
pg_cluster_start() {
  if [ "$(id -u)" -ne 0 ]; then echo "SKIP: $(basename "$0") needs root to create the cluster's user"; exit 77; fi
  bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)"
  [ -n "$bindir" ] && [ -x "$bindir/initdb" ] && [ -x "$bindir/pg_ctl" ] ||
    { echo "SKIP: no PostgreSQL server binaries (deploy/install-deps.sh installs postgresql)"; exit 77; }
  pgu="cuzkpg$$"
  sec_user_add "$pgu"
  pg="$tmp/pg"; mkdir -p "$pg"; chown "$pgu" "$pg"; chmod 755 "$tmp"
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  daemon_on_exit="as_pg $bindir/pg_ctl -D $pg/data -m immediate stop >/dev/null 2>&1 || true; ${daemon_on_exit}"
  as_pg "$bindir/initdb" -D "$pg/data" -U cuzk --auth=trust -E UTF8 >"$tmp/initdb.log" 2>&1 || { cat "$tmp/initdb.log"; fail "initdb"; }
  as_pg "$bindir/pg_ctl" -D "$pg/data" -l "$pg/log" -w -t 60 \
    -o "-p $port -k $pg -c listen_addresses=''" start >/dev/null || { tail "$pg/log"; fail "pg_ctl start"; }
  as_pg "$bindir/createdb" -h "$pg" -p "$port" -U cuzk cuzk
  url="postgresql://cuzk@/cuzk?host=$pg&port=$port"
}
as_pg() { runuser -u "$pgu" -- "$@"; }
psql_q() { as_pg "$bindir/psql" -h "$pg" -p "$port" -U cuzk -d cuzk -qAt -v ON_ERROR_STOP=1 -c "$1"; }
