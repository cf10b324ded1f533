#!/bin/bash
# Submit the full regression to Slurm: N shard tasks, then one merge job that runs when all
# shards have ended (afterany: a failing shard still gets a merged report that names it).
# Usage: scripts/slurm/submit.sh [N] [SEED]      (defaults: 16 shards, a random seed)
set -euo pipefail
cd "$(dirname "$0")/../.."
N="${1:-16}"
SEED="${2:-$(python3 -c 'import random; print(random.SystemRandom().randrange(2**32))')}"
[[ "$N" =~ ^[1-9][0-9]*$ ]] || { echo "submit.sh: N must be a positive integer, got '$N'" >&2; exit 2; }
mkdir -p build/shards
make install >/dev/null
array=$(sbatch --parsable --array="1-${N}" --export="ALL,SEED=${SEED}" scripts/slurm/sim-full.sbatch)
merge=$(sbatch --parsable --dependency="afterany:${array}" --job-name=mx-sim-merge \
    --output=build/shards/slurm-merge-%j.out --wrap="make sim-merge")
echo "submitted shards ${array} (1-${N}, SEED=${SEED}) and merge ${merge}:"
echo "  report in build/shards/merged/summary.txt when job ${merge} ends"
