#!/usr/bin/env bash
# Installs every Debian package cuzk's build and tests need. Idempotent: packages
# already present are left alone and apt is not touched at all when nothing is missing.
# Run as root on Debian 12 (bookworm). Node.js/npm are needed for the snarkjs/circom
# fixtures; the npm packages themselves are installed by tests/fixtures/make.sh into
# a cache folder, never globally (and tests/scripts/openapi_valid.sh puts its two
# OpenAPI validators, @redocly/cli and @stoplight/spectral-cli, beside them). postgresql (initdb, pg_ctl under
# /usr/lib/postgresql/<version>/bin) is for tests/scripts/fleet_pg.sh's throwaway
# cluster; libpq-dev for the fleet queue (store/fleet_pg.c). nlohmann-json3-dev (headers
# only) for bench/native.sh: circom's C++ witness binary includes nlohmann/json.hpp.
# clang-format for make format / make format-check (Debian 12's is version 14); shfmt
# (the shell scripts' format, same targets) and shellcheck (make lint-shell).
# Packaging and operations (docs/packaging.md, docs/monitoring.md): debhelper, dpkg-dev
# and lintian for make deb; scdoc for the manual pages (make builds them), man-db to
# check they format; prometheus for promtool and the real-Prometheus test (on a machine
# that runs systemd its package enables a Prometheus on port 9090: `systemctl disable
# --now prometheus` if that is not wanted); curl for that test; systemd (sysusers,
# tmpfiles, the package's dependency) and systemd-container (systemd-nspawn) for the
# package's tests under a real systemd.
# libmicrohttpd-dev and libcurl4-openssl-dev (its callbacks) for cuzk-api, the HTTP
# API (api/; a build without them leaves cuzk-api out); openssl (the TLS test's certificate) and python3-jsonschema (answers
# checked against docs/openapi.json) for its tests; python3-venv, python3-setuptools and
# python3-wheel for the Python SDK's test (clients/python installed into a throwaway
# venv, offline).
# qemu-user (qemu-x86_64) runs the default build on an emulated old CPU
# (tests/scripts/portable_build.sh).
set -euo pipefail

PKGS=(
  build-essential pkg-config make gcc
  liburing-dev libnuma-dev libhwloc-dev check libsubunit-dev
  libjansson-dev libncurses-dev libgmp-dev libsqlite3-dev libssl-dev
  g++ nasm
  nlohmann-json3-dev
  nodejs npm python3 tmux procps
  hwloc-nox
  clang libclang-rt-dev clang-format
  shfmt shellcheck
  postgresql libpq-dev
  debhelper dpkg-dev lintian scdoc man-db
  prometheus curl systemd systemd-container
  libmicrohttpd-dev libcurl4-openssl-dev openssl python3-jsonschema
  python3-venv python3-setuptools python3-wheel
  qemu-user
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# Node may come from outside Debian's packages (a preinstalled node/npm on PATH is fine).
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  filtered=()
  for p in "${missing[@]}"; do
    case "$p" in nodejs | npm) ;; *) filtered+=("$p") ;; esac
  done
  missing=("${filtered[@]+"${filtered[@]}"}")
fi

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages (${missing[*]}); run this script as root" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
