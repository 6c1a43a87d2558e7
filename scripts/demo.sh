#!/usr/bin/env bash
# The main job: sets up what is missing, builds, and runs the demo pipeline over the photos the
# package ships (GPU when there is one, else CPU): writes out/demo_grid.png, prints img/s.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
exec "${PYTHON:-python3}" -m torchaug.demo "$@"
