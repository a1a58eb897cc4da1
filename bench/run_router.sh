#!/usr/bin/env bash
# Router overhead benchmark (bench/router_overhead.py). Installs the LiteLLM
# proxy (pinned) into .deps/bench-venv on first use, as the peer to compare with,
# and nginx (Debian) as the bare reverse-proxy floor.
set -euo pipefail
cd "$(dirname "$0")/.."
LITELLM_VERSION=1.74.9
if [ ! -x .deps/bench-venv/bin/litellm ]; then
  echo "[router-bench] installing litellm[proxy]==${LITELLM_VERSION} into .deps/bench-venv" >&2
  python3 -m venv .deps/bench-venv
  .deps/bench-venv/bin/pip install -q "litellm[proxy]==${LITELLM_VERSION}" || echo "[router-bench] LiteLLM did not install; continuing without it" >&2
fi
if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ] && [ "$(id -u)" -eq 0 ]; then
  echo "[router-bench] installing nginx-light (Debian) as the bare-proxy reference" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q nginx-light >/dev/null || echo "[router-bench] nginx did not install; continuing without it" >&2
fi
exec .deps/venv/bin/python bench/router_overhead.py "$@"
