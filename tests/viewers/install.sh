#!/usr/bin/env bash
# Installs the two real trace viewers tests/viewers.rs loads merged traces in, from the registries:
# - npm: puppeteer-core (drives the system Chromium), webcomponents.js 0.7.24 (the HTML-imports
#   polyfill Catapult needs) and @paulirish/trace_engine (Chrome DevTools' trace engine), at the
#   versions package-lock.json pins, into tests/viewers/node_modules;
# - PyPI: the wheel torch-tb-profiler 0.4.3, from which static/trace_viewer_full.html (Catapult,
#   the engine of chrome://tracing, vulcanized) goes to tests/viewers/catapult/ (its sha256 is
#   checked).
# Both are git-ignored. Each step is bounded by TIMEOUT seconds (default 240); on any failure it
# says so and exits 1, and the test skips loudly. Installed things are kept: a second run only
# checks them.
set -uo pipefail
cd "$(dirname "$0")"
limit=${TIMEOUT:-240}
html_sha=a46409ce4119222d5149e46d80d6068309f0d68d100904204089b73150bb4bbd
ok=0

stamp=$(sha256sum package-lock.json | cut -c1-64)
if [ "$(cat node_modules/.rankprof-stamp 2>/dev/null)" != "$stamp" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "viewers: no npm on PATH" >&2
    ok=1
  elif timeout "$limit" npm ci --no-audit --no-fund --loglevel=error >/dev/null; then
    echo "$stamp" >node_modules/.rankprof-stamp
  else
    echo "viewers: npm ci failed or took over ${limit} s" >&2
    ok=1
  fi
fi

have_html() { [ "$(sha256sum catapult/trace_viewer_full.html 2>/dev/null | cut -c1-64)" = "$html_sha" ]; }
if ! have_html; then
  tmp=$(mktemp -d)
  if timeout "$limit" python3 -m pip download --quiet --no-deps --only-binary=:all: \
    torch-tb-profiler==0.4.3 -d "$tmp" &&
    python3 - "$tmp"/torch_tb_profiler-0.4.3-py3-none-any.whl <<'PY'
import sys, zipfile, os
os.makedirs("catapult", exist_ok=True)
with zipfile.ZipFile(sys.argv[1]) as z, open("catapult/trace_viewer_full.html", "wb") as f:
    f.write(z.read("torch_tb_profiler/static/trace_viewer_full.html"))
PY
  then
    have_html || { echo "viewers: trace_viewer_full.html has an unexpected sha256" >&2; ok=1; }
  else
    echo "viewers: cannot download torch-tb-profiler 0.4.3 from PyPI" >&2
    ok=1
  fi
  rm -rf "$tmp"
fi
exit $ok
