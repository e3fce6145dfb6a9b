#!/usr/bin/env bash
# `make install` into a DESTDIR: the tree (binaries, unit, sysusers entry, example
# config, README, manual pages, docs, dashboard and alert rules), the unit passes
# `systemd-analyze verify` (skipped where the tool is missing), the sysusers entry
# creates the cuzk user in a scratch root, every option of `cuzkd --help` is described
# in the example config and the installed config parses, and the installed cuzkd
# --check prints its report (it passes on a machine without
# GPUs; it fails, naming the fix, when the config asks for CUDA devices that are absent).
set -euo pipefail
BUILD="${BUILD:-build}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
dest="$tmp/dest"
fail() {
  echo "install_tree: FAIL: $*" >&2
  exit 1
}

make -s install-files BUILD="$BUILD" DESTDIR="$dest" PREFIX=/usr/local >/dev/null
(cd "$dest" && find . -type f -printf '%m %p\n' | sort)
for f in usr/local/bin/cuzkd usr/local/bin/cuzk usr/local/bin/cuzk-top usr/local/bin/cuzk-synth \
  usr/local/bin/cuzk-gpuworker usr/local/bin/cuzk-finalizer; do
  [ -x "$dest/$f" ] || fail "$f missing or not executable"
done
unit="$dest/usr/local/lib/systemd/system/cuzkd.service"
for f in "$unit" "$dest/usr/local/lib/sysusers.d/cuzk.conf" "$dest/etc/cuzk/cuzkd.conf" \
  "$dest/usr/local/share/doc/cuzk/cuzkd.conf.example" "$dest/usr/local/share/doc/cuzk/README.md" \
  "$dest/usr/local/share/man/man8/cuzkd.8" "$dest/usr/local/share/man/man1/cuzk.1" \
  "$dest/usr/local/share/doc/cuzk/monitoring/cuzk-alerts.yml"; do
  [ -f "$f" ] || fail "$f missing"
done
! grep -n '@[A-Z]*@' "$unit" || fail "unsubstituted @VAR@ in the unit"
grep -q '^ExecStart=/usr/local/bin/cuzkd --foreground --config /etc/cuzk/cuzkd.conf' "$unit" ||
  fail "ExecStart does not name the installed cuzkd and config"
for key in Type=notify Restart=on-failure User=cuzk Group=cuzk RuntimeDirectory=cuzk \
  LimitMEMLOCK=infinity NoNewPrivileges=yes ProtectSystem=strict PrivateTmp=yes \
  ProtectHome=read-only KillMode=mixed; do
  grep -qx "$key" "$unit" || fail "unit lacks $key"
done
# an existing config is never overwritten
echo "# mine" >>"$dest/etc/cuzk/cuzkd.conf"
make -s install-files BUILD="$BUILD" DESTDIR="$dest" PREFIX=/usr/local >/dev/null
tail -n1 "$dest/etc/cuzk/cuzkd.conf" | grep -qx "# mine" || fail "make install overwrote the config"

if command -v systemd-analyze >/dev/null 2>&1; then
  # verify checks that ExecStart's binary exists: point it into the DESTDIR copy
  sed "s|/usr/local/bin/|$dest/usr/local/bin/|" "$unit" >"$tmp/cuzkd.service"
  # and Documentation='s man: pages are looked for in the DESTDIR's man tree
  out="$(MANPATH="$dest/usr/local/share/man" systemd-analyze verify "$tmp/cuzkd.service" 2>&1)" ||
    fail "systemd-analyze verify: $out"
  [ -z "$out" ] || fail "systemd-analyze verify complains: $out"
  echo "install_tree: systemd-analyze verify: clean ($(systemd-analyze --version | head -n1))"
  # cuzk-api's own unit, where cuzk-api is built (libmicrohttpd)
  apiunit="$dest/usr/local/lib/systemd/system/cuzk-api.service"
  if [ -x "$dest/usr/local/bin/cuzk-api" ]; then
    [ -f "$apiunit" ] && ! grep -n '@[A-Z]*@' "$apiunit" || fail "cuzk-api.service missing or unsubstituted"
    sed "s|/usr/local/bin/|$dest/usr/local/bin/|" "$apiunit" >"$tmp/cuzk-api.service"
    out="$(systemd-analyze verify "$tmp/cuzk-api.service" 2>&1)" || fail "systemd-analyze verify cuzk-api: $out"
    [ -z "$out" ] || fail "systemd-analyze verify complains of cuzk-api.service: $out"
    echo "install_tree: cuzk-api.service: systemd-analyze verify: clean"
  fi
else
  echo "install_tree: systemd-analyze not installed: unit not verified (skipped)"
fi
if command -v systemd-sysusers >/dev/null 2>&1; then
  mkdir -p "$tmp/root/etc"
  systemd-sysusers --root="$tmp/root" "$dest/usr/local/lib/sysusers.d/cuzk.conf" 2>&1 | sed 's/^/  /'
  grep -q '^cuzk:' "$tmp/root/etc/passwd" || fail "sysusers did not create the cuzk user"
  grep -q '^cuzk:' "$tmp/root/etc/group" || fail "sysusers did not create the cuzk group"
  echo "install_tree: sysusers creates: $(grep '^cuzk:' "$tmp/root/etc/passwd")"
fi

# every option of --help is described in the example config
cuzkd="$dest/usr/local/bin/cuzkd"
for o in $("$cuzkd" --help | grep -o -- '--[a-z][a-z-]*' | sort -u | sed 's/^--//'); do
  grep -qE "^#? *(#   )?$o( |$)" "$dest/etc/cuzk/cuzkd.conf" || fail "option --$o not in the example config"
done
conf="$tmp/cuzkd.conf"
if getent group cuzk >/dev/null; then
  cp "$dest/etc/cuzk/cuzkd.conf" "$conf"
else sed 's/^group = cuzk/# group = cuzk (no such group here)/' "$dest/etc/cuzk/cuzkd.conf" >"$conf"; fi
"$cuzkd" --config "$conf" --plan >/dev/null || fail "the installed config does not parse"

echo "== cuzkd --check (installed, example config):"
rc=0
"$cuzkd" --check --config "$conf" --run-dir "$tmp/run" >"$tmp/check.txt" || rc=$?
cat "$tmp/check.txt"
! grep -q '^FAIL  gpus' "$tmp/check.txt" || fail "--check fails for want of a GPU with devices cpu:1"
grep -q '^ok    stages' "$tmp/check.txt" || fail "--check does not find the installed stages"
echo "== cuzkd --check with small buffers (must pass here):"
"$cuzkd" --check --config "$conf" --run-dir "$tmp/run" --buffers 2 --buffer-mb 1 | tail -n1 ||
  fail "--check fails on this machine with 2 MiB of buffers"
echo "== cuzkd --check --devices cuda:all (fails without the NVIDIA driver; with it, passes):"
rc=0
"$cuzkd" --check --config "$conf" --run-dir "$tmp/run" --devices cuda:all >"$tmp/check2.txt" || rc=$?
grep -E '^(ok|FAIL) +gpus|fix: install the NVIDIA' "$tmp/check2.txt" || true
if grep -q '^FAIL  gpus' "$tmp/check2.txt"; then [ $rc -eq 1 ] || fail "--check: a FAIL line but exit $rc"; fi
echo "install_tree: ok"
