#!/usr/bin/env bash
# make test: tests/faults/full_disk.sh (an output directory on a 16 KiB tmpfs). Needs
# root for the mount: exits 77 (SKIP) otherwise.
exec bash "$(cd "$(dirname "${BASH_SOURCE[0]}")/../faults" && pwd)/full_disk.sh"
