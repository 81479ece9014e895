#!/usr/bin/env bash
# Paper 000, Fig. 4 (MNIST01 row) and Table 1 at the paper's size: mode jumps of AGS, PT, PTref
# and PTT at equal cost on the 784 x 200 RBM trained on MNIST 0/1 by
# scripts/paper000_mnist_784x200.sh, and the exponential autocorrelation time of PTT's
# model-index process.
#
# Every sampler runs 1000 chains started at data samples (`--init data`) for 10^4 Gibbs sweeps
# per chain, the x-axis of the paper's Fig. 4C ("total number of AGS steps", models x steps):
# AGS 10^4 sweeps, PT and PTref 10 rungs x 1000 rounds, PTT (the paper's sweep schedule, and
# DEO) on all K kept checkpoints x floor(10^4 / K) rounds. The mode of every chain at the target
# is recorded at every step (round or sweep; AGS also every K sweeps, the cost of a PTT round):
# mode + is the sign of the first principal component of the data (`--modes pc1`, boundary 0,
# which splits the data 0.534 / 0.466 where the digits split 0.530 / 0.470).
#
# The model has 2^200 hidden states, so its mode weights have no exact value here. The reference
# is the paper's Table 1 run, which also measures tau_exp: PTT for 5 x 10^4 rounds (100
# chains), converged if its own diagnostics say so (at least 20 tau_exp rounds, at least 10
# mode changes per chain after burn-in); each sampler's weight is compared with it.
#
# Usage: scripts/paper000_fig4_mnist_784x200.sh DIR pretrained|scratch SEED
#
# Reads DIR/START-seedSEED-K.{safetensors,trajectory.safetensors,json} (the last slice K of the
# training, which must have reached its 10 000 updates unless PARTIAL=1) and DIR/mnist01.npy;
# writes DIR/fig4-START-seedSEED/NAME.{npy,json}, NAME one of gibbs, gibbs-every-k, pt, pt-ref,
# ptt, ptt-deo and reference. A sampler whose record exists is not run again. EBM (default
# target/release/ebm) and NICE=1 (lowest CPU priority) can be set in the environment. About
# 12 minutes per model on two cores.
set -euo pipefail

if [ $# -ne 3 ]; then
  echo "usage: $0 DIR pretrained|scratch SEED" >&2
  exit 2
fi
dir=$1
start=$2
seed=$3
ebm=${EBM:-target/release/ebm}
run=()
if [ "${NICE:-0}" = 1 ]; then run=(nice -n 19); fi
case $start in
  pretrained | scratch) ;;
  *) echo "$0: the start is pretrained or scratch, not $start" >&2; exit 2 ;;
esac

stem=$dir/$start-seed$seed
k=0
while [ -f "$stem-$((k + 1)).json" ]; do k=$((k + 1)); done
if [ "$k" -eq 0 ]; then
  echo "$0: no training at $stem-1.json (run scripts/paper000_mnist_784x200.sh first)" >&2
  exit 1
fi
trained=$stem-$k
rungs=$(python3 - "$trained.json" "${PARTIAL:-0}" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
if r["updates"] < 10000 and sys.argv[2] != "1":
    sys.exit(f"the training stopped at update {r['updates']} of 10000 (resume it, or PARTIAL=1)")
print(len(r["checkpoint_updates"]))
EOF
)
data=$dir/mnist01.npy
out=$dir/fig4-$start-seed$seed
mkdir -p "$out"
budget=10000
chains=1000
common=(--precision f32 --data "$data" --init data --modes pc1 --seed "$seed" --quiet)

sample() {
  local name=$1
  shift
  if [ -f "$out/$name.json" ]; then
    echo "$out/$name.json: done"
    return
  fi
  echo "${run[*]} $ebm sample $* ${common[*]} --out $out/$name.npy"
  ${run[@]+"${run[@]}"} "$ebm" sample "$@" "${common[@]}" --out "$out/$name.npy"
}

sample gibbs --model "$trained.safetensors" --sampler gibbs \
  --chains $chains --steps $budget --trace-every 1
# AGS recorded every K sweeps, the cost of one PTT round: how many of AGS's jumps counted
# sweep by sweep are back-and-forth moves across the boundary within one PTT round's cost.
sample gibbs-every-k --model "$trained.safetensors" --sampler gibbs \
  --chains $chains --steps $budget --trace-every "$rungs"
sample pt --model "$trained.safetensors" --sampler pt --rungs 10 --schedule deo \
  --chains $chains --steps $((budget / 10)) --trace-every 1
sample pt-ref --model "$trained.safetensors" --sampler pt-ref --rungs 10 --schedule deo \
  --chains $chains --steps $((budget / 10)) --trace-every 1
sample ptt --trajectory "$trained.trajectory.safetensors" --sampler ptt --schedule sweep \
  --chains $chains --steps $((budget / rungs)) --trace-every 1
sample ptt-deo --trajectory "$trained.trajectory.safetensors" --sampler ptt --schedule deo \
  --chains $chains --steps $((budget / rungs)) --trace-every 1
sample reference --trajectory "$trained.trajectory.safetensors" --sampler ptt --schedule sweep \
  --chains 100 --steps 50000 --trace-every 10
