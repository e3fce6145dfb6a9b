#!/usr/bin/env bash
# The floors of the house: a folder may import only folders on a lower floor, never
# one beside it or above it, so that each floor can be read, built and tested with
# only what stands under it. The table below is the rule (docs/hacking.md, "Layout" says the
# same); this script derives the import graph from the tree and fails on any arrow
# that runs sideways or up.
#
# Imports are read two ways:
#   1. the #include lines of every .c/.h/.cu/.cuh/.cpp of each folder. A header lives
#      beside its code, and an include line says where: "zk/field.h" is zk/'s, "sup.h"
#      (a name beside the including file) is the including folder's own. A quoted
#      include that names no file of the tree is an error.
#   2. when the libraries are built ($BUILD/lib), the undefined symbols of each
#      libcuzk_<folder>.a: a call to a function of a higher floor, declared by hand
#      instead of included, is caught there.
# tests/ and bench/ stand on top of everything and are not checked.
set -euo pipefail
BUILD="${BUILD:-build}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/../.."

# ---- the floor table (lowest first; one floor may hold several folders, which then
# may not import each other) --------------------------------------------------------
FLOORS=(
  "base" # the ground floor: the clock, mkdir -p, directory
  # trust, the log line, exit codes and option helpers,
  # display-safe names, the version, huge pages
  "shm zk" # shared memory (segments, rings, pool, job table,
  # stats page and its reader) / the arithmetic and files
  "store proto" # the durable job store / the control protocol's
  # names, shared by cuzkd and the client
  "stage"                     # the stage runtime every stage process stands on
  "synth gpuworker finalizer" # the three stages
  "fleet"                     # cuzkd's agent of the fleet queue (claims,
  # spooling, stored proofs), on its own options
  "supervisor" # cuzkd
  "tools api"  # the cuzk client, cuzk-top (the viewer) / cuzk-api,
  # the HTTP API process
)
# Arrows that the floors allow but the house does not: the client stands beside the
# daemon, never on it (what both need of the protocol is proto/'s), so a tool can be
# read, built and changed without cuzkd's insides.
NEVER=(
  "tools supervisor"
  "api supervisor" # the HTTP API talks to cuzkd over the control
  # socket only: the parser facing the network
  # shares nothing of cuzkd's insides
)
declare -A floor_of=()
for i in "${!FLOORS[@]}"; do
  for d in ${FLOORS[$i]}; do floor_of[$d]=$i; done
done
bad=0
violation() {
  echo "floors: FAIL: $*"
  bad=$((bad + 1))
}

# Every module the Makefile builds has a floor.
# ($(API_MODULE): api/, built when libmicrohttpd is there, is in the table either way)
# shellcheck disable=SC2016 # a make variable, $(NAME), taken out
modules="$(sed -n 's/^MODULES[[:space:]]*:=[[:space:]]*//p' Makefile | sed 's/\$([A-Z_]*)//g')"
[ -n "$modules" ] || {
  echo "floors: FAIL: no MODULES line in the Makefile"
  exit 1
}
for m in $modules; do
  [ -n "${floor_of[$m]:-}" ] || violation "module $m (Makefile MODULES) has no floor in tests/scripts/floors.sh"
done
for m in "${!floor_of[@]}"; do
  [ -d "$m" ] || violation "floor table names $m/, which does not exist"
done

# ---- 1. #include lines -------------------------------------------------------------
# edges "from to file header" (header: the path as the include line writes it)
edges="$(mktemp)"
trap 'rm -f "$edges" "$edges.sym"' EXIT
for m in "${!floor_of[@]}"; do
  [ -d "$m" ] || continue
  find "$m" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cpp' \)
done | while read -r f; do
  m="${f%%/*}"
  sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" | while read -r inc; do
    # circom's generated C++ (synth/wgen_abi.cpp is compiled beside it): not ours
    case "$inc" in *.hpp) continue ;; esac
    # beside the including file first (as the compiler looks), then from the root
    # (-I.: "supervisor/sup.h" names supervisor/'s header wherever it stands)
    t="$(realpath -m --relative-to=. "$(dirname "$f")/$inc")"
    if [ ! -e "$t" ]; then
      if [ -e "$inc" ]; then t="$inc"; else
        echo "$m ? $f $inc"
        continue
      fi
    fi
    case "$t" in */*) echo "$m ${t%%/*} $f $inc" ;; *) echo "$m . $f $inc" ;; esac
  done
done >"$edges"

check_edge() { # from to where what
  local from="$1" to="$2" where="$3" what="$4"
  [ "$from" = "$to" ] && return 0
  local ff="${floor_of[$from]:-}" tf="${floor_of[$to]:-}"
  if [ -z "$tf" ]; then
    # a name that is no file of the tree, or the root itself: no folder
    [ "$to" = "?" ] && violation "$where: $what names no file of the tree"
    case "$to" in "." | "?") return 0 ;; esac
    violation "$where: imports $what from $to/, a folder outside the floor table"
    return 0
  fi
  for n in "${NEVER[@]}"; do
    if [ "$n" = "$from $to" ]; then
      violation "$where: $from/ may never import $to/ (NEVER table), through $what"
      return 0
    fi
  done
  if [ "$tf" -ge "$ff" ]; then
    local dir=above
    [ "$tf" -eq "$ff" ] && dir=beside
    violation "$where: $from/ (floor $ff) imports $to/ (floor $tf, $dir it) through $what"
  fi
}
while read -r from to where what; do
  check_edge "$from" "$to" "$where" "$what"
done <"$edges"

# ---- 2. link-level: undefined symbols of each module library -------------------------
if compgen -G "$BUILD/lib/libcuzk_*.a" >/dev/null && command -v nm >/dev/null; then
  # "D module symbol" for each definition, "U module object symbol" for each use
  for a in "$BUILD"/lib/libcuzk_*.a; do
    m="$(basename "$a" .a)"
    m="${m#libcuzk_}"
    [ "$m" = cuda ] && m=zk # the kernels are zk/cuda/
    nm -g --defined-only "$a" 2>/dev/null | awk -v m="$m" 'NF == 3 { print "D", m, $3 }'
    nm -A -u "$a" 2>/dev/null | awk -v m="$m" '{ o = $1; sub(/:$/, "", o); print "U", m, o, $NF }'
  done | awk '$1 == "D" { def[$3] = $2; next }
		    { use[++n] = $2 " " $3 " " $4 }
		    END { for (i = 1; i <= n; i++) { split(use[i], u, " ");
			  if ((u[3] in def) && def[u[3]] != u[1]) print u[1], def[u[3]], u[2], u[3] } }' |
    sort -u >"$edges.sym"
  while read -r from to where what; do
    check_edge "$from" "$to" "$where" "symbol $what"
  done <"$edges.sym"
  echo "floors: link check: $(wc -l <"$edges.sym") cross-module symbol references in $BUILD/lib"
else
  echo "floors: no libraries in $BUILD/lib: link-level check not run (includes only)"
fi

# ---- the picture --------------------------------------------------------------------
for i in $(seq $((${#FLOORS[@]} - 1)) -1 0); do
  line=""
  for d in ${FLOORS[$i]}; do
    imp="$(awk -v d="$d" '$1 == d && $2 != d && $2 != "?" { print $2 }' "$edges" | sort -u | tr '\n' ' ')"
    line+="$d/ -> ${imp:-nothing}; "
  done
  echo "floor $i: $line"
done
if [ "$bad" -gt 0 ]; then
  echo "floors: $bad arrow(s) against the floors"
  exit 1
fi
echo "floors: PASS ($(awk '$1 != $2' "$edges" | wc -l) include lines between folders, none against the floors)"
