#!/usr/bin/env bash
# Chromium and its chromedriver (Debian packages) for the Tables view's browser test. Installs them
# with apt-get when they are missing and this runs as root on a Debian-like system; otherwise it
# says what to install (the test is then skipped locally, and fails under CI, which must run it).
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  install() { DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver >/dev/null 2>&1; }
  install || { apt-get update -q >/dev/null 2>&1 && install; } ||
    echo "scripts/browser.sh: apt-get could not install chromium chromium-driver" >&2
else
  echo "scripts/browser.sh: install Chromium and chromedriver (Debian: apt-get install chromium chromium-driver) to run the browser test" >&2
fi
