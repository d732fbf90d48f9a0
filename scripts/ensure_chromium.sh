#!/bin/bash
# Install Debian's chromium for the browser view's test (test/viz/test_web_view.py) when it is
# missing and this machine can: root with apt-get. Idempotent: nothing happens when chromium
# is on PATH. Where it cannot be installed the test skips by name; this script never fails
# the run that calls it (make test).
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure_chromium: chromium is not installed and apt-get as root is not available here: the browser test will skip" >&2
  exit 0
fi
echo "ensure_chromium: installing Debian's chromium (for the browser view's test)"
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }; }; then
  echo "ensure_chromium: apt-get install chromium failed: the browser test will skip" >&2
fi
exit 0
