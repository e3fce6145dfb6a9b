#!/usr/bin/env bash
# docs/openapi.json is a valid OpenAPI 3.1 description, checked by two independent
# validators, each with its own parser and rules, and linted with no warning:
#   @redocly/cli lint (its "recommended" rules, every warning an error)
#   @stoplight/spectral-cli lint (its "spectral:oas" rules, failing on warnings)
# Both are npm packages at pinned versions, installed once into the fixtures' cache
# (tests/fixtures/cache/openapi-tools, as make.sh installs snarkjs; never globally).
# Without npm, or when neither installs (no registry), SKIP; only one of them is a FAIL.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
. "$ROOT/tests/fixtures/env.sh"
SPEC="$ROOT/docs/openapi.json"
TOOLS="$FIXTURES/openapi-tools"
# redocly 1.34.20: its 2.x wants Node 20.19+, Debian 12 has Node 18
PKGS="@redocly/cli@1.34.20 @stoplight/spectral-cli@6.16.3"

python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$SPEC" || {
  echo "FAIL: $SPEC is not JSON"
  exit 1
}

install_tools() {
  command -v npm >/dev/null || return 0
  mkdir -p "$TOOLS"
  exec 8>"$TOOLS/.lock"
  command -v flock >/dev/null && flock 8
  if [ "$(cat "$TOOLS/.pkgs" 2>/dev/null)" != "$PKGS" ]; then
    [ -f "$TOOLS/package.json" ] || echo '{"name":"cuzk-openapi-tools","private":true}' >"$TOOLS/package.json"
    # shellcheck disable=SC2086
    if (cd "$TOOLS" && npm install --no-audit --no-fund --loglevel=error $PKGS >"$TOOLS/install.log" 2>&1); then
      echo "$PKGS" >"$TOOLS/.pkgs"
    fi
  fi
  exec 8>&-
}
install_tools
REDOCLY="$TOOLS/node_modules/.bin/redocly"
SPECTRAL="$TOOLS/node_modules/.bin/spectral"
ran=0

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if [ -x "$REDOCLY" ]; then
  # every rule of "recommended" at error: a warning fails too
  cat >"$tmp/redocly.yaml" <<'YAML'
extends:
  - recommended-strict
YAML
  (cd "$tmp" && "$REDOCLY" lint --config "$tmp/redocly.yaml" --format=stylish "$SPEC") >"$tmp/redocly.out" 2>&1 ||
    {
      cat "$tmp/redocly.out"
      echo "FAIL: redocly lint rejects docs/openapi.json"
      exit 1
    }
  grep -qi "warning" "$tmp/redocly.out" && {
    cat "$tmp/redocly.out"
    echo "FAIL: redocly warns"
    exit 1
  }
  echo "ok: @redocly/cli lint (recommended-strict): valid, no warning"
  ran=$((ran + 1))
fi

if [ -x "$SPECTRAL" ]; then
  echo 'extends: ["spectral:oas"]' >"$tmp/.spectral.yaml"
  (cd "$tmp" && "$SPECTRAL" lint --ruleset "$tmp/.spectral.yaml" --fail-severity=hint "$SPEC") >"$tmp/spectral.out" 2>&1 ||
    {
      cat "$tmp/spectral.out"
      echo "FAIL: spectral lint rejects docs/openapi.json"
      exit 1
    }
  echo "ok: @stoplight/spectral-cli lint (spectral:oas): valid, no warning or hint"
  ran=$((ran + 1))
fi

if [ "$ran" = 0 ]; then
  echo "SKIP: neither @redocly/cli nor @stoplight/spectral-cli could be installed (npm: $(command -v npm || echo missing); $(tail -n1 "$TOOLS/install.log" 2>/dev/null))"
  exit 77
fi
[ "$ran" = 2 ] || {
  echo "FAIL: only $ran of the two validators ran (see $TOOLS/install.log)"
  exit 1
}
echo "PASS: openapi_valid (docs/openapi.json checked by $ran validators)"
