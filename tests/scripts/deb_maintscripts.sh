#!/usr/bin/env bash
# The package's own maintainer scripts (debian/cuzk.preinst, debian/cuzk.postrm) run
# against a scratch root (DPKG_ROOT, as dpkg sets it), no package installed:
#   a fresh install makes /var/lib/cuzk and marks it; purge removes it with what it holds;
#   an existing /var/lib/cuzk of another user is refused with a message that says what
#     to do, and is left exactly as it was (its files, owner and mode);
#   one made by hand (given to cuzk, so adopted, not marked) survives purge, contents
#     and all, and purge says it kept it;
#   an upgrade from a package that made it unmarked marks it;
#   a symlink at /var/lib/cuzk is refused, and its target is never touched.
# Ownership needs root (chown); without it the test is skipped (77). The package as
# dpkg installs it: tests/scripts/deb_install.sh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
[ "$(id -u)" -eq 0 ] || {
  echo "SKIP: deb_maintscripts gives directories to other users: needs root"
  exit 77
}
use_tmp
fail() {
  echo "deb_maintscripts: FAIL: $*" >&2
  exit 1
}
other="$(id -un 65534 2>/dev/null || echo 65534)" # nobody: a user that is not cuzk
r="$tmp/root"
lib="$r/var/lib/cuzk"
mark="$lib/.made-by-cuzk-package"
fresh() {
  rm -rf "$r"
  mkdir -p "$r/var/lib" "$r/etc/cuzk" "$r/run/cuzk" "$r/dev/shm"
}
script() { DPKG_ROOT="$r" sh "debian/cuzk.$1" "${@:2}"; }
state() { find "$1" -printf '%p %u %m %s\n' | sort; }

# A fresh install: made and marked; purge removes it and what cuzkd wrote there.
fresh
script preinst install || fail "preinst install on an empty root"
[ -d "$lib" ] && [ -f "$mark" ] || fail "preinst did not make and mark /var/lib/cuzk"
echo proof >"$lib/default.db"
script postrm purge || fail "postrm purge"
[ ! -e "$lib" ] || fail "purge kept the /var/lib/cuzk the package made"
[ ! -e "$r/etc/cuzk" ] && [ ! -e "$r/run/cuzk" ] || fail "purge kept /etc/cuzk or /run/cuzk"
echo "ok   fresh install: /var/lib/cuzk made and marked; purge removes it"

# Another user's directory: refused before anything changes.
fresh
mkdir -m 0700 "$lib"
echo theirs >"$lib/data"
chown -R 65534 "$lib"
before="$(state "$lib")"
rc=0
script preinst install 2>"$tmp/err" || rc=$?
[ $rc -ne 0 ] || fail "preinst took over a /var/lib/cuzk of user $other"
grep -q "belongs to $other" "$tmp/err" && grep -q 'Move it away' "$tmp/err" ||
  fail "the refusal does not say whose it is and what to do: $(cat "$tmp/err")"
[ "$(state "$lib")" = "$before" ] || fail "the refused directory changed: $(state "$lib")"
echo "ok   another user's /var/lib/cuzk refused ($(head -n1 "$tmp/err")), left as it was"

# A root-owned one made by hand is not cuzk's either.
fresh
mkdir "$lib"
rc=0
script preinst install 2>/dev/null || rc=$?
[ $rc -ne 0 ] && [ ! -e "$mark" ] || fail "preinst took over a root-owned /var/lib/cuzk"
echo "ok   a root-owned /var/lib/cuzk made by hand refused"

# A symlink: refused, its target untouched.
fresh
mkdir "$tmp/elsewhere"
echo keep >"$tmp/elsewhere/f"
ln -s "$tmp/elsewhere" "$lib"
rc=0
script preinst install 2>/dev/null || rc=$?
[ $rc -ne 0 ] && [ ! -e "$tmp/elsewhere/.made-by-cuzk-package" ] || fail "preinst followed a symlinked /var/lib/cuzk"
script postrm purge 2>/dev/null || fail "postrm purge with a symlink"
[ -f "$tmp/elsewhere/f" ] || fail "purge removed a symlinked /var/lib/cuzk's target"
echo "ok   a symlink at /var/lib/cuzk refused; purge leaves its target"

# Given to cuzk by hand (chown, as the refusal says): adopted unmarked; purge keeps it.
if getent passwd cuzk >/dev/null; then
  fresh
  mkdir "$lib"
  echo mine >"$lib/store.db"
  chown -R cuzk "$lib"
  script preinst install || fail "preinst refused a /var/lib/cuzk that belongs to cuzk"
  [ ! -e "$mark" ] || fail "preinst marked a directory it did not make"
  script postrm purge 2>"$tmp/err" || fail "postrm purge"
  [ -f "$lib/store.db" ] || fail "purge removed a /var/lib/cuzk the package did not make"
  grep -q 'kept' "$tmp/err" || fail "purge did not say it kept /var/lib/cuzk"
  echo "ok   a cuzk-owned /var/lib/cuzk made by hand: used, not marked, kept by purge"
else
  echo "     (no cuzk user here: the adopted case is checked without one)"
fi
fresh
mkdir "$lib"
echo mine >"$lib/store.db"
script postrm purge 2>"$tmp/err" || fail "postrm purge"
[ -f "$lib/store.db" ] && grep -q 'kept' "$tmp/err" || fail "purge removed an unmarked /var/lib/cuzk"
echo "ok   purge keeps an unmarked /var/lib/cuzk and says so"

# An upgrade from a package that made it before marks existed.
fresh
mkdir "$lib"
script preinst upgrade 0.0.1 || fail "preinst upgrade"
[ -f "$mark" ] || fail "preinst upgrade did not mark the older package's /var/lib/cuzk"
echo "ok   upgrade: the older package's /var/lib/cuzk marked as the package's"

# The packaged scripts are these (built by make deb elsewhere: deb_package.sh).
echo "PASS: the package never takes over, nor purges, a /var/lib/cuzk it did not make"
