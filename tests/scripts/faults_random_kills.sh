#!/usr/bin/env bash
# make test: the random-kill fault test (tests/faults/random_kills.sh), 12 kills.
exec bash "$(cd "$(dirname "${BASH_SOURCE[0]}")/../faults" && pwd)/random_kills.sh" "$@"
