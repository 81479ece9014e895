"""Peer baseline: training updates per second of the `rbms` PyTorch library on CPU.

The configuration of `cargo bench -p ebm-train --bench train` ("pcd-10 update"): a 784 x 200
Bernoulli RBM, minibatches of 2000 samples, 2000 persistent chains, k = 10 Gibbs steps per
update, centred gradient, plain SGD (learning rate 0.01), float32. One update is what the
peer's own training loop (`rbms.training.pcd.train`) does per iteration: draw a minibatch,
`fit_batch_pcd` (k Gibbs steps on the persistent chains, then the centred gradient), then the
optimiser step. The data are 4000 binary samples: 10 random prototypes with 10 % of the
pixels flipped (the same kind of data as the Rust bench).

Usage: python rbms_train_bench.py [UPDATES] [NV NH BATCH CHAINS K]
Prints one JSON line: updates per second, mean and best (minimum) seconds per update; on a
shared machine compare best with best.
"""
import json
import warnings
import sys
import time

import torch

warnings.filterwarnings("ignore", category=FutureWarning)
from torch.optim import SGD

from rbms.bernoulli_bernoulli.classes import BBRBM
from rbms.training.pcd import fit_batch_pcd

args = [int(x) for x in sys.argv[1:]]
updates = args[0] if args else 10
nv, nh, batch, n_chains, k = args[1:6] if len(args) >= 6 else (784, 200, 2000, 2000, 10)
dtype = torch.float32
torch.manual_seed(0)

protos = (torch.rand(10, nv) < 0.3).to(dtype)
labels = torch.arange(2 * batch) % 10
flips = (torch.rand(2 * batch, nv) < 0.1).to(dtype)
data = (protos[labels] + flips) % 2
weights = torch.ones(2 * batch, dtype=dtype)

freq = data.mean(0).clamp(1e-4, 1 - 1e-4)
rbm = BBRBM(
    weight_matrix=1e-2 * torch.randn(nv, nh, dtype=dtype),
    vbias=torch.log(freq / (1 - freq)),
    hbias=torch.zeros(nh, dtype=dtype),
)
chains = rbm.init_chains(n_chains)
for p in rbm.parameters():  # the peer's training set-up allocates the gradients
    p.grad = torch.zeros_like(p)
optimizer = SGD(rbm.parameters(), lr=0.01, maximize=True)


def update(chains):
    idx = torch.randperm(data.shape[0])[:batch]
    optimizer.zero_grad(set_to_none=False)
    chains, _ = fit_batch_pcd(
        batch=(data[idx], weights[idx]),
        parallel_chains=chains,
        params=rbm,
        gibbs_steps=k,
        beta=1.0,
        centered=True,
    )
    optimizer.step()
    return chains


with torch.no_grad():
    chains = update(chains)  # warm-up
    times = []
    for _ in range(updates):
        t = time.perf_counter()
        chains = update(chains)
        times.append(time.perf_counter() - t)
    dt = sum(times)

print(json.dumps({
    "peer": "rbms-0.5.0/torch-" + torch.__version__,
    "threads": torch.get_num_threads(),
    "nv": nv, "nh": nh, "batch": batch, "chains": n_chains, "k": k, "dtype": str(dtype),
    "updates": updates,
    "seconds_per_update": dt / updates,
    "best_seconds_per_update": min(times),
    "updates_per_s": updates / dt,
}))
