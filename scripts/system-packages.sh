#!/usr/bin/env bash
# Installs the Debian packages Redline needs that are missing.
#   scripts/system-packages.sh demo   -> ffmpeg
#   scripts/system-packages.sh test   -> ffmpeg, Java (reference metrics), Chromium + driver
set -euo pipefail

want=(ffmpeg)
if [ "${1:-demo}" = "test" ]; then
  want+=(chromium chromium-driver fonts-dejavu-core)
  command -v java >/dev/null 2>&1 || want+=(default-jre-headless)
fi

missing=()
for pkg in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "Redline needs these system packages: ${missing[*]}" >&2
  echo "Install them first, e.g.: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "Installing system packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
