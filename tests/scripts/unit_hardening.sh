#!/usr/bin/env bash
# The shipped units' hardening, as `systemd-analyze security --offline=true` scores
# it: cuzkd.service and cuzk-api.service each at 3.0 or below (0 is the most
# confined, 10 none). Each unit filters system calls (@system-service, with
# io_uring's calls named in cuzkd's), native architecture only, no capabilities; the
# API runs as its own user cuzk-api (a member of the group cuzk) with MemoryMax= and
# TasksMax=; and the sysusers entry makes that user and its membership in a scratch
# root. The units are filled in as `make install` fills them (no build needed).
# Skips (77) without systemd-analyze (Debian: systemd, which deploy/install-deps.sh
# installs; it runs without systemd as PID 1).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
command -v systemd-analyze >/dev/null || {
  echo "SKIP: systemd-analyze not installed (Debian: systemd; deploy/install-deps.sh installs it)"
  exit 77
}
systemd-analyze security --help 2>/dev/null | grep -q -- '--offline' || {
  echo "SKIP: systemd-analyze $(systemd-analyze --version | head -n1) has no security --offline (systemd 250 or later)"
  exit 77
}
use_tmp
fail() {
  echo "unit_hardening: FAIL: $*" >&2
  exit 1
}
max=3.0

for u in cuzkd cuzk-api; do
  f="$tmp/$u.service"
  sed -e 's|@BINDIR@|/usr/bin|g' -e 's|@SYSCONFDIR@|/etc|g' -e 's|@DOCDIR@|/usr/share/doc/cuzk|g' \
    "deploy/$u.service.in" >"$f"
  for key in SystemCallArchitectures=native CapabilityBoundingSet= NoNewPrivileges=yes SystemCallErrorNumber=EPERM; do
    grep -qx "$key" "$f" || fail "$u.service lacks $key"
  done
  grep -q '^SystemCallFilter=@system-service' "$f" || fail "$u.service has no SystemCallFilter=@system-service"
  systemd-analyze security --offline=true "$f" >"$tmp/$u.txt" 2>&1 || true
  score="$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$tmp/$u.txt")"
  [ -n "$score" ] || fail "systemd-analyze security printed no score for $u.service: $(tail -n 3 "$tmp/$u.txt")"
  awk -v s="$score" -v m="$max" 'BEGIN { exit !(s <= m) }' || {
    grep '✗' "$tmp/$u.txt" >&2 || true
    fail "$u.service scores $score, above $max"
  }
  echo "ok   $u.service: exposure $score (at most $max), $(grep -c '✗' "$tmp/$u.txt") settings left open"
done
for c in io_uring_setup io_uring_enter io_uring_register; do
  grep '^SystemCallFilter=@system-service' "$tmp/cuzkd.service" | grep -qw "$c" ||
    fail "cuzkd.service does not name $c (the event loop's io_uring)"
done
api="$tmp/cuzk-api.service"
for key in User=cuzk-api Group=cuzk-api SupplementaryGroups=cuzk; do
  grep -qx "$key" "$api" || fail "cuzk-api.service lacks $key"
done
grep -q '^MemoryMax=[0-9]' "$api" && grep -q '^TasksMax=[0-9]' "$api" || fail "cuzk-api.service has no MemoryMax= or TasksMax="
echo "ok   cuzk-api.service: its own user in the group cuzk, $(grep '^MemoryMax=' "$api"), $(grep '^TasksMax=' "$api")"

if command -v systemd-sysusers >/dev/null; then
  mkdir -p "$tmp/root/etc"
  systemd-sysusers --root="$tmp/root" "$ROOT/deploy/cuzk.sysusers" >/dev/null 2>&1 ||
    fail "systemd-sysusers rejects deploy/cuzk.sysusers"
  grep -q '^cuzk-api:x:[0-9]*:[0-9]*:.*:/usr/sbin/nologin$' "$tmp/root/etc/passwd" || fail "sysusers makes no cuzk-api user"
  grep -q '^cuzk:x:[0-9]*:cuzk-api$' "$tmp/root/etc/group" || fail "sysusers does not put cuzk-api in the group cuzk"
  echo "ok   sysusers: $(grep '^cuzk-api:' "$tmp/root/etc/passwd" | cut -d: -f1,7), member of $(grep ':cuzk-api$' "$tmp/root/etc/group" | cut -d: -f1)"
fi
echo "PASS: cuzkd.service and cuzk-api.service confined to $max or below; cuzk-api has its own user"
