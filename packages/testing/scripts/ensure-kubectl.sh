#!/bin/sh
# Makes kubectl available for the embedded-apiserver kubectl tests (Debian's kubernetes-client).
# Idempotent: does nothing when kubectl is already on PATH.
set -eu
if command -v kubectl >/dev/null 2>&1; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
$SUDO apt-get update
$SUDO apt-get install -y kubernetes-client
command -v kubectl >/dev/null 2>&1
