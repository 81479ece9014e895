#!/usr/bin/env bash
# The outputs of a fixed set of `ebm` commands, to show that a refactoring changes nothing a
# user sees: run it with the program built before and after the change, into two directories,
# and compare them with scripts/golden-compare.py.
#
#   scripts/golden-outputs.sh EBM DIR
#
# The set: the README's quick start (data, train, plot, sample), one run per sampler
# (gibbs, pt, pt-ref, ptt, stacked, latent, tmc), per negative phase (pcd, cd, pt, jarzynski,
# tmc, bridged) and per estimator (exact, ais, reverse-ais, tr-ais, ptt), the figures, and
# the quick demo. Sizes are small (a few minutes on two cores) but every code path of a
# command runs. Every command works in DIR with relative paths, so the records of two runs
# differ only in what is measured (times) and in the program's version.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 EBM DIR" >&2
  exit 2
fi
ebm=$(realpath "$1")
mkdir -p "$2"
cd "$2"
run() {
  echo "\$ ebm $*" >> commands.txt
  # stdout and stderr are kept: the summaries and warnings a user reads.
  # A command that fails is an output too (its message and exit code).
  local out
  out="out-$(wc -l < commands.txt).txt"
  "$ebm" "$@" > "$out" 2>&1 || echo "exit code $?" >> "$out"
}
: > commands.txt

# The README's quick start, smaller.
run data generate digits --out digits.npy --labels-out digits-labels.npy
run data info digits.npy
run data split digits.npy --train train.npy --test test.npy
run train --data train.npy --test test.npy --hidden-units 16 --updates 200 --loglik-every 100 \
  --out my.safetensors
run plot loglik my.log.csv --out loglik.png
run sample --trajectory my.trajectory.safetensors --sampler ptt --chains 50 --steps 100 \
  --data digits.npy --modes labels:digits-labels.npy --trace-every 10 --out ptt.npy
run plot samples --data digits.npy --samples ptt.npy --out ptt-pca.png

# One run per sampler.
run sample --model my.safetensors --sampler gibbs --chains 50 --steps 100 --data digits.npy \
  --modes labels:digits-labels.npy --trace-every 10 --chain-out chain.npy --out gibbs.npy
run plot chain gibbs.json --out chain.png
run sample --model my.safetensors --sampler pt --chains 20 --steps 50 --data digits.npy \
  --trace-every 5 --out pt.npy
run sample --model my.safetensors --sampler pt-ref --chains 20 --steps 50 --data digits.npy \
  --out pt-ref.npy
run sample --model my.safetensors --sampler latent --chains 20 --steps 10 --out latent.npy
run sample --model my.safetensors --sampler tmc --chains 20 --steps 5 --grid-points 11 \
  --alpha 100 --out tmc.npy
run train-stack --data train.npy --hidden-units 16,8 --updates 60 --out stack.json
run sample --stack stack.json --sampler stacked --chains 20 --steps 50 --out stacked.npy

# One run per negative phase.
for negative in pcd cd pt jarzynski bridged; do
  run train --data train.npy --hidden-units 8 --updates 60 --negative "$negative" \
    --out "neg-$negative.safetensors"
done
run train --data train.npy --hidden-units 3 --updates 20 --negative tmc --alpha 100 \
  --grid-points 11 --out neg-tmc.safetensors

# One run per estimator.
run loglik exact --model neg-pcd.safetensors --data test.npy
run loglik ais --model my.safetensors --data test.npy --chains 50 --rungs 100
run loglik reverse-ais --model my.safetensors --data test.npy --chains 50 --rungs 100
run loglik tr-ais --trajectory my.trajectory.safetensors --data test.npy --chains 50
run loglik ptt --trajectory my.trajectory.safetensors --data test.npy --chains 10 --steps 200

# The quick tour.
run demo --quick --out demo
