#!/usr/bin/env bash
# bench/gpu-bundle.sh — pack what bench/gpu-check.sh runs on a GPU machine that has the
# NVIDIA driver and toolkit but none of this project's libraries (and nothing can be
# installed there): the binaries of a CUDA build made here (make CUDA_ARCHS=90 tests)
# and the shared libraries they load, in one gzip'd tar.
#
#   bench/gpu-bundle.sh [OUT.tar.gz]        (default: $BUILD/gpu-bundle.tar.gz)
#
# Contents (top folder gpu-bundle/):
#   bin/  cuzkd cuzk cuzk-synth cuzk-gpuworker cuzk-finalizer (cuzkd starts the stages
#         from its own folder), gpu_test, gpu_bench, mulchain_gen — debug info stripped
#         (the carried size: about 25 MB packed instead of 110 MB)
#   lib/  every library ldd resolves for them, except glibc's own (libc, libm,
#         libpthread, libdl, librt, libresolv, the loader), which normally come from the
#         machine: its glibc must be at least MANIFEST's "glibc needed" (Debian 12's
#         libstdc++ asks for 2.36; Ubuntu 22.04 has 2.35). gpu-check.sh checks that
#         first; where it is older it runs each program through glibc/ (this machine's
#         loader, libc and libm, also packed) and skips only the daemon step, whose
#         stages cuzkd execs directly. The CUDA runtime is linked statically;
#         libcuda.so.1 is the driver's and is never packed.
#         and, from a CUDA build, libcuzk_cupti.so (the CUPTI recorder) with the
#         toolkit's libcupti.so it dlopens
#   MANIFEST  the commit, the CUDA architectures, the glibc version needed.
# The files copied are the ones ldd resolves on this machine (Debian's), which is what
# `apt-get download` + `dpkg -x` would unpack, without a registry. Exit 0, or 1 with
# the reason (a binary missing: build first).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../tests/fixtures/env.sh" # ROOT, BUILD (absolute)
out="${1:-$BUILD/gpu-bundle.tar.gz}"
bins=(bin/cuzkd bin/cuzk bin/cuzk-synth bin/cuzk-gpuworker bin/cuzk-finalizer tests-gpu/gpu_test
  bench-gpu/gpu_bench bench/mulchain_gen)
for b in "${bins[@]}"; do
  [ -x "$BUILD/$b" ] || {
    echo "gpu-bundle: $BUILD/$b is missing: build first (make CUDA_ARCHS=90 tests)" >&2
    exit 1
  }
done
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
top="$stage/gpu-bundle"
mkdir -p "$top/bin" "$top/lib" "$top/glibc"
glibc_re='^(libc|libm|libpthread|libdl|librt|libresolv|libutil|ld-linux-x86-64)\.so'
for b in "${bins[@]}"; do
  strip --strip-debug -o "$top/bin/$(basename "$b")" "$BUILD/$b"
  ldd "$BUILD/$b" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | while read -r l; do
    n="$(basename "$l")"
    if [[ "$n" =~ $glibc_re ]]; then
      [ -e "$top/glibc/$n" ] || cp -L "$l" "$top/glibc/$n"
      continue
    fi
    [ -e "$top/lib/$n" ] || cp -L "$l" "$top/lib/$n"
  done
done
# The CUPTI recorder (docs/cuda.md), when the build made it, and the libcupti of the
# toolkit it was built against (its path is in the library), which it dlopens: the
# same version whatever toolkit the GPU machine has.
if [ -f "$BUILD/lib/libcuzk_cupti.so" ]; then
  strip --strip-debug -o "$top/lib/libcuzk_cupti.so" "$BUILD/lib/libcuzk_cupti.so"
  cupti="$(strings -a "$BUILD/lib/libcuzk_cupti.so" | grep -m 1 '/libcupti\.so$' || true)"
  [ -n "$cupti" ] && [ -f "$cupti" ] && cp -L "$cupti" "$top/lib/libcupti.so"
fi
loader="$(ldd "$BUILD/bin/cuzkd" | awk '/ld-linux-x86-64/ { print ($3 ~ /^\//) ? $3 : $1 }')"
cp -L "$loader" "$top/glibc/ld-linux-x86-64.so.2"
if ldd "$BUILD/bin/cuzk-gpuworker" | grep -q libcudart; then
  echo "gpu-bundle: cuzk-gpuworker links libcudart dynamically (the static runtime is expected)" >&2
  exit 1
fi
# The newest glibc symbol version any packed file asks for.
need="$(for f in "$top"/bin/* "$top"/lib/*; do objdump -T "$f" 2>/dev/null | grep -w UND; done |
  grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1 || true)"
archs="$(cat "$BUILD"/obj/zk/cuda/*.ptxas 2>/dev/null | grep -o "for 'sm_[0-9]*'" | sort -u | tr -d "'" | sed 's/^for //' | tr '\n' ' ' || true)"
{
  echo "commit: $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)"
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
  echo "glibc needed: ${need#GLIBC_}"
  echo "cuda archs: ${archs:-unknown}"
  echo "glibc packed: $(ldd --version | head -n 1 | awk '{ print $NF }')"
  echo "files: $(cd "$top" && find bin lib glibc -type f | wc -l)"
} >"$top/MANIFEST"
mkdir -p "$(dirname "$out")"
tar -C "$stage" -cf - gpu-bundle | gzip -6 >"$out.tmp"
mv "$out.tmp" "$out"
echo "gpu-bundle: $out ($(($(stat -c %s "$out") >> 20)) MiB; $(grep -c . "$top/MANIFEST") manifest lines; glibc >= ${need#GLIBC_})"
