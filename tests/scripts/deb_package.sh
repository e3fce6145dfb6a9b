#!/usr/bin/env bash
# make deb builds the Debian package (debian/, tools/deb.sh) and lintian finds no
# error and no warning in it; the package holds what docs/packaging.md says (the
# binaries in /usr/bin, the unit and its enabling postinst, the sysusers and tmpfiles
# entries with their postinst calls, /etc/cuzk/cuzkd.conf as a conffile, the manual
# pages, the docs and monitoring files), and the packaged cuzk prints
# debian/changelog's version. Installing it is tests/scripts/deb_install.sh's part.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
for t in dpkg-buildpackage dh lintian scdoc; do
  command -v "$t" >/dev/null || {
    echo "SKIP: $t not installed (deploy/install-deps.sh installs it)"
    exit 77
  }
done
use_tmp
fail() {
  echo "deb_package: FAIL: $*" >&2
  exit 1
}

make -s deb BUILD="$BUILD" || fail "make deb"
version="$(sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' debian/changelog)"
deb="$BUILD/deb/cuzk_${version}_amd64.deb"
[ -f "$deb" ] || fail "no $deb"
echo "ok   $(basename "$deb"): $(stat -c %s "$deb") bytes"

dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$tmp/files"
for f in /usr/bin/cuzkd /usr/bin/cuzk /usr/bin/cuzk-top /usr/bin/cuzk-synth /usr/bin/cuzk-gpuworker \
  /usr/bin/cuzk-finalizer /lib/systemd/system/cuzkd.service /usr/lib/sysusers.d/cuzk.conf \
  /usr/lib/tmpfiles.d/cuzk.conf /etc/cuzk/cuzkd.conf /usr/share/man/man1/cuzk.1.gz \
  /usr/share/man/man1/cuzk-top.1.gz /usr/share/man/man5/cuzkd.conf.5.gz /usr/share/man/man8/cuzkd.8.gz \
  /usr/share/man/man8/cuzk-synth.8.gz /usr/share/doc/cuzk/copyright /usr/share/doc/cuzk/README.Debian \
  /usr/share/doc/cuzk/monitoring/cuzk-dashboard.json.gz /usr/share/doc/cuzk/monitoring/cuzk-alerts.yml.gz; do
  grep -qx "$f" "$tmp/files" || fail "the package lacks $f"
done
echo "ok   $(grep -vc '/$' "$tmp/files") files and links, every one docs/packaging.md lists"
dpkg-deb --ctrl-tarfile "$deb" | tar -x -C "$tmp" ./conffiles ./preinst ./postinst ./postrm
grep -qx /etc/cuzk/cuzkd.conf "$tmp/conffiles" || fail "/etc/cuzk/cuzkd.conf is not a conffile"
grep -q "deb-systemd-helper enable 'cuzkd.service'" "$tmp/postinst" || fail "postinst does not enable cuzkd.service"
grep -q 'systemd-sysusers.*cuzk.conf' "$tmp/postinst" || fail "postinst does not run systemd-sysusers"
grep -q 'systemd-tmpfiles.*cuzk.conf' "$tmp/postinst" || fail "postinst does not run systemd-tmpfiles"
# shellcheck disable=SC2016 # the postrm's own text, not this shell's
grep -q 'rm -rf "$root/var/lib/cuzk"' "$tmp/postrm" || fail "postrm purge keeps /var/lib/cuzk"
grep -q 'made-by-cuzk-package' "$tmp/preinst" && grep -q 'made-by-cuzk-package' "$tmp/postrm" ||
  fail "preinst or postrm lacks the mark of a /var/lib/cuzk the package made (tests/scripts/deb_maintscripts.sh)"
echo "ok   conffile /etc/cuzk/cuzkd.conf; postinst enables the unit, runs sysusers and tmpfiles"
# libpq is loaded at run time (store/pq_dl.c): dh_shlibdeps cannot see it, so
# debian/control names it, and the package must still carry that dependency.
dpkg-deb -f "$deb" Depends | tr ',' '\n' | grep -qx ' *libpq5' ||
  fail "the package does not depend on libpq5 (the fleet queue loads it): $(dpkg-deb -f "$deb" Depends)"
echo "ok   Depends names libpq5, which the fleet queue loads at run time"

dpkg-deb -x "$deb" "$tmp/root"
got="$("$tmp/root/usr/bin/cuzk" --version)"
[ "$got" = "cuzk $version" ] || fail "packaged cuzk --version: '$got', debian/changelog: $version"
echo "ok   packaged cuzk --version: $got"

t0=$(date +%s)
make -s deb-lint BUILD="$BUILD" || fail "lintian"
echo "ok   lintian ($(lintian --version)): $(($(date +%s) - t0)) s"
echo "PASS: make deb builds a lintian-clean package with the unit, user, conffile, manual pages and docs"
