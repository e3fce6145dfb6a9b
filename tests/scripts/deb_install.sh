#!/usr/bin/env bash
# test: exclusive
# The Debian package installed for real on this machine (root; it changes /usr/bin,
# /etc and the users, so nothing runs beside it): dpkg -i; the user and group cuzk,
# /var/lib/cuzk and the conffile exist; `cuzkd --check` from the installed paths as
# the cuzk user; the bundled example (bn128/mulchain-10, 4 partitions) proved through
# the installed cuzkd, run as the unit runs it (user cuzk, /etc/cuzk/cuzkd.conf,
# --run-dir /run/cuzk), and the installed cuzk, each proof verified by snarkjs; then
# dpkg --purge, after which no file of the package is left, nor /etc/cuzk,
# /var/lib/cuzk, /run/cuzk or the unit's enablement. What stays on purpose is
# printed (the cuzk user and group: README.Debian). The machine is put back as it was:
# the user and group are removed if this test made them. Skips (77) when not root or
# when a cuzk package, user or directory is already here (it would not be ours to
# remove). The unit under a real systemd: tests/scripts/deb_systemd.sh.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
need_root "deb_install installs a package: needs root"
for t in dpkg-buildpackage lintian scdoc runuser; do
  command -v "$t" >/dev/null || {
    echo "SKIP: $t not installed (deploy/install-deps.sh installs it)"
    exit 77
  }
done
if dpkg-query -W -f='${Status}' cuzk 2>/dev/null | grep -q installed ||
  dpkg-query -W -f='${Status}' cuzk-cuda 2>/dev/null | grep -q installed; then
  echo "SKIP: a cuzk package is installed on this machine: this test would remove it"
  exit 77
fi
for d in /etc/cuzk /var/lib/cuzk /run/cuzk /dev/shm/cuzk-default.data; do
  [ ! -e "$d" ] || {
    echo "SKIP: $d exists: this test would remove it"
    exit 77
  }
done
had_user=0
getent passwd cuzk >/dev/null && had_user=1
had_group=0
getent group cuzk >/dev/null && had_group=1
use_fixtures
tmp="$(mktemp -d)"
pid=""
restore() {
  [ -z "$pid" ] || {
    kill -TERM "$pid" 2>/dev/null
    sleep 1
    kill -KILL "$pid" 2>/dev/null || true
  }
  dpkg-query -W -f='${Status}' cuzk 2>/dev/null | grep -q installed && dpkg --purge cuzk >/dev/null 2>&1 || true
  rm -rf /etc/cuzk /var/lib/cuzk /run/cuzk /dev/shm/cuzk-default.*
  [ $had_user = 1 ] || ! getent passwd cuzk >/dev/null || userdel cuzk
  [ $had_group = 1 ] || ! getent group cuzk >/dev/null || groupdel cuzk
  rm -rf "$tmp"
}
trap restore EXIT
fail() {
  echo "deb_install: FAIL: $*" >&2
  [ ! -f "$tmp/cuzkd.log" ] || tail -n 20 "$tmp/cuzkd.log" >&2
  exit 1
}

make -s deb BUILD="$BUILD" >/dev/null || fail "make deb"
version="$(sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' debian/changelog)"
deb="$BUILD/deb/cuzk_${version}_amd64.deb"
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|; s|/$||' | grep -v '^$' >"$tmp/files"

dpkg -i "$deb" >"$tmp/dpkg.log" 2>&1 || {
  cat "$tmp/dpkg.log"
  fail "dpkg -i"
}
echo "ok   dpkg -i $(basename "$deb"): $(dpkg-query -W -f='${Package} ${Version} ${Status}' cuzk)"
[ "$(/usr/bin/cuzk --version)" = "cuzk $version" ] || fail "installed cuzk --version: $(/usr/bin/cuzk --version)"
getent passwd cuzk >/dev/null || fail "postinst did not create the user cuzk"
getent group cuzk >/dev/null || fail "postinst did not create the group cuzk"
[ "$(stat -c '%U:%G %a' /var/lib/cuzk)" = "cuzk:cuzk 750" ] || fail "/var/lib/cuzk: $(stat -c '%U:%G %a' /var/lib/cuzk)"
dpkg-query --showformat='${Conffiles}' --show cuzk | grep -q '/etc/cuzk/cuzkd.conf' || fail "no conffile"
[ -e /etc/systemd/system/multi-user.target.wants/cuzkd.service ] || fail "cuzkd.service is not enabled"
man -w cuzkd >/dev/null 2>&1 || ! command -v man >/dev/null || fail "man cuzkd finds no page"
echo "ok   user $(getent passwd cuzk | cut -d: -f1,3,6,7), /var/lib/cuzk cuzk:cuzk 750, conffile, unit enabled, man cuzkd"

# As the unit runs it: user cuzk, the run dir systemd's RuntimeDirectory= would make.
install -d -o cuzk -g cuzk -m 0750 /run/cuzk
small=(--buffers 2 --buffer-mb 16) # the machine's /dev/shm and memlock, not the defaults' 512 MiB
runuser -u cuzk -- /usr/bin/cuzkd --check --config /etc/cuzk/cuzkd.conf --run-dir /run/cuzk "${small[@]}" >"$tmp/check.txt" ||
  {
    cat "$tmp/check.txt"
    fail "cuzkd --check from the installed paths"
  }
grep -q '^ok    stages' "$tmp/check.txt" || fail "--check does not find the installed stages: $(cat "$tmp/check.txt")"
echo "ok   cuzkd --check (installed, user cuzk): $(tail -n1 "$tmp/check.txt")"

runuser -u cuzk -- /usr/bin/cuzkd --foreground --config /etc/cuzk/cuzkd.conf --run-dir /run/cuzk "${small[@]}" \
  >"$tmp/cuzkd.log" 2>&1 &
pid=$!
for _ in $(seq 1 1200); do
  /usr/bin/cuzk --run-dir /run/cuzk status >/dev/null 2>&1 && break
  kill -0 $pid 2>/dev/null || fail "the installed cuzkd exited"
  sleep 0.1
done
fx="$FIXTURES/bn128/mulchain-10"
[ -f "$fx/circuit_final.zkey" ] || bash "$MAKE_FIXTURES" -q --curve bn128 --only mulchain-10 >/dev/null
mkdir -p "$tmp/in"
for i in 1 2 3 4; do cp "$fx/witness.wtns" "$tmp/in/w$i.wtns"; done
out=/var/lib/cuzk/proofs
install -d -o cuzk -g cuzk -m 0750 "$out"
/usr/bin/cuzk --run-dir /run/cuzk prove --zkey "$fx/circuit_final.zkey" --out "$out" --wait "$tmp"/in/w*.wtns >"$tmp/prove.txt" ||
  fail "the installed cuzk prove: $(cat "$tmp/prove.txt")"
for i in 1 2 3 4; do
  "$SNARKJS" groth16 verify "$fx/verification_key.json" "$out/w$i.public.json" "$out/w$i.proof.json" | grep -q OK ||
    fail "snarkjs rejects $out/w$i.proof.json"
done
echo "ok   4 proofs of the bundled example through the installed cuzkd and cuzk, verified by snarkjs"
/usr/bin/cuzk --run-dir /run/cuzk shutdown >/dev/null || fail "cuzk shutdown"
rc=0
wait $pid || rc=$?
pid=""
[ $rc -eq 0 ] || fail "cuzkd exited $rc after shutdown"
echo "     /var/lib/cuzk before purge: $(dir_list /var/lib/cuzk '[!.]*' | tr "\n" " ")"
echo "ok   cuzkd stopped with status 0"

dpkg --purge cuzk >"$tmp/dpkg.log" 2>&1 || {
  cat "$tmp/dpkg.log"
  fail "dpkg --purge"
}
left=()
while read -r f; do
  case "$f" in /usr/bin | /usr/lib | /usr/share | /usr/share/doc | /usr/share/man | /usr/share/man/man? | /usr | /etc | /lib | /lib/systemd | /lib/systemd/system | /usr/lib/sysusers.d | /usr/lib/tmpfiles.d) continue ;; esac
  [ ! -e "$f" ] && [ ! -L "$f" ] || left+=("$f")
done <"$tmp/files"
for f in /etc/cuzk /var/lib/cuzk /run/cuzk /etc/systemd/system/multi-user.target.wants/cuzkd.service \
  /var/lib/systemd/deb-systemd-helper-enabled/cuzkd.service.dsh-also /dev/shm/cuzk-default.data /dev/shm/cuzk-default.stats; do
  [ ! -e "$f" ] && [ ! -L "$f" ] || left+=("$f")
done
[ ${#left[@]} -eq 0 ] || fail "dpkg --purge left: ${left[*]}"
dpkg-query -W -f='${Status}' cuzk 2>/dev/null | grep -q 'not-installed\|^$' || ! dpkg-query -W cuzk >/dev/null 2>&1 ||
  fail "dpkg still knows cuzk: $(dpkg-query -W -f='${Status}' cuzk)"
echo "ok   dpkg --purge: none of the package's $(wc -l <"$tmp/files") paths left, nor /etc/cuzk, /var/lib/cuzk, /run/cuzk, the enablement, the segments"
echo "     kept on purpose (README.Debian): $(getent passwd cuzk | cut -d: -f1) user, $(getent group cuzk | cut -d: -f1) group"
echo "PASS: installed, checked, proved and verified, purged without a trace"
