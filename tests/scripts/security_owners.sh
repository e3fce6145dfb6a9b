#!/usr/bin/env bash
# test: exclusive (creates and removes Unix users: useradd and userdel lock /etc/passwd)
# Issue 16 item 7 (tests/security/owners.sh): owners of jobs and preloads, the
# operator's requests, per-uid quotas, attacked as an unprivileged second user.
# SKIP (77) when not root (the test creates its users with useradd).
set -uo pipefail
[ "$(id -u)" -eq 0 ] || { echo "SKIP: tests/security needs root (useradd)"; exit 77; }
exec bash "$(cd "$(dirname "${BASH_SOURCE[0]}")/../security" && pwd)/owners.sh"
