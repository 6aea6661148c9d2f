#!/usr/bin/env bash
# The dashboard's pictures in docs/screenshots/: every page, light and dark, wide and phone-narrow,
# taken by the browser tests' tour (DashboardBrowserTests) over a throwaway server.
# Needs chromium and chromium-driver (as the tests do).
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --build-tests
BATON_SCREENSHOTS="$PWD/docs/screenshots" swift test --skip-build --filter 'DashboardBrowserTests/everyPageFitsAndIsPictured'
ls docs/screenshots
