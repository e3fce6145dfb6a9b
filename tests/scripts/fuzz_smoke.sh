#!/usr/bin/env bash
# make test: a short libFuzzer smoke run of each harness in tests/fuzz/ (zkey reader,
# wtns reader, control protocol), FUZZ_SECONDS each (default 10), after replaying
# the kept crash inputs of tests/fuzz/regress/. SKIP without clang.
exec bash "$(cd "$(dirname "${BASH_SOURCE[0]}")/../fuzz" && pwd)/run.sh" "${FUZZ_SECONDS:-10}"
