#!/usr/bin/env bash
# Installs the headless browser the viewer tests drive: Chromium from the npm registry
# (@sparticuz/chromium ships the binary inside the package, so there is no separate download
# step) and puppeteer-core to drive it. It goes into a cache folder outside the repository and
# outside the Python dependencies; the browser tests skip with a reason when it is missing.
# Usage: tests/browser/setup.sh   (PISESSION_BROWSER_DIR overrides the folder)
set -euo pipefail
dir="${PISESSION_BROWSER_DIR:-$HOME/.cache/pisession-browser}"
mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || echo '{"name":"pisession-browser","private":true}' > package.json
if [ -d node_modules/@sparticuz/chromium ] && [ -d node_modules/puppeteer-core ]; then
  exit 0
fi
npm install --no-audit --no-fund --loglevel=error @sparticuz/chromium@153 puppeteer-core@25
