// The device kernels of ebm-cuda, compiled at run time by NVRTC once per scalar type with
// `-DREAL=float` or `-DREAL=double` (crate::device). Layout: every matrix is column-major with
// one column per chain (units x chains), as the CPU crates store them.
//
// Random numbers: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
// SC 2011), counter-based. Draw number `event` of the run (a 64-bit counter the host advances
// once per half-step, swap round...) at coordinates (a, b) -- (unit, chain) for a layer,
// (pair, system) for a swap -- is philox(key = seed, counter = (a, b, event_lo, event_hi)).
// A chain's stream is therefore addressable: the same seed gives the same draws whatever the
// number of chains, the launch shape or the GPU.

typedef REAL F;
typedef unsigned int u32;
typedef unsigned long long u64;

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

__device__ __forceinline__ uint4 philox(uint4 c, u32 k0, u32 k1) {
#pragma unroll
    for (int r = 0; r < 10; r++) {
        u32 hi0 = __umulhi(PHILOX_M0, c.x), lo0 = PHILOX_M0 * c.x;
        u32 hi1 = __umulhi(PHILOX_M1, c.z), lo1 = PHILOX_M1 * c.z;
        c = make_uint4(hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0);
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    return c;
}

// A uniform in [0, 1): 24 bits for float, 53 for double (the first words of the block).
__device__ __forceinline__ F uniform(uint4 r) {
#ifdef REAL_IS_DOUBLE
    u64 x = ((u64)r.x << 32) | (u64)r.y;
    return (double)(x >> 11) * 0x1.0p-53;
#else
    return (float)(r.x >> 8) * 0x1.0p-24f;
#endif
}

// A uniform in (0, 1] in double, for Metropolis tests in log space.
__device__ __forceinline__ double uniform_open0(uint4 r) {
    u64 x = ((u64)r.x << 32) | (u64)r.y;
    return ((double)(x >> 11) + 1.0) * 0x1.0p-53;
}

__device__ __forceinline__ uint4 draw(u32 a, u32 b, u64 event, u32 k0, u32 k1) {
    return philox(make_uint4(a, b, (u32)event, (u32)(event >> 32)), k0, k1);
}

__device__ __forceinline__ F sigmoid(F z) {
#ifdef REAL_IS_DOUBLE
    return 1.0 / (1.0 + exp(-z));
#else
    return 1.0f / (1.0f + expf(-z));
#endif
}

// Gamma(x) = log sum_s exp(s x) over the unit's two states, in double: softplus for {0, 1},
// log 2 cosh for {-1, +1} (the stable forms of ebm_core::numerics::BinaryCgf).
__device__ __forceinline__ double cgf(double x, int spin) {
    double a = fabs(x);
    return spin ? a + log1p(exp(-2.0 * a)) : fmax(x, 0.0) + log1p(exp(-a));
}

// One half-step of alternating Gibbs sampling for a binary layer of `units` units over all
// chains: out = lo or 1, with P(1) = sigmoid(scale * beta_c * (bias + in)), where `in` holds the
// local inputs (W^T v or W h) and beta_c the inverse temperature of the chain's column.
// scale = 1, lo = 0 for {0, 1} units; scale = 2, lo = -1 for {-1, +1}. Unit i of chain c at
// draw `event` compares uniform(block (i, c, event)) with its probability.
extern "C" __global__ void sample_binary(const F* __restrict__ in, F* __restrict__ out,
                                         const F* __restrict__ bias, const F* __restrict__ beta,
                                         u32 units, u64 total, F scale, F lo, u32 k0, u32 k1,
                                         u64 event) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < total;
         i += (u64)gridDim.x * blockDim.x) {
        u32 unit = (u32)(i % units), chain = (u32)(i / units);
        F p = sigmoid(scale * beta[chain] * (bias[unit] + in[i]));
        out[i] = uniform(draw(unit, chain, event, k0, k1)) < p ? (F)1 : lo;
    }
}

// Conditional means of a binary layer at beta = 1: lo + (1 - lo) sigmoid(scale (bias + in)).
extern "C" __global__ void binary_means(const F* __restrict__ in, F* __restrict__ out,
                                        const F* __restrict__ bias, u32 units, u64 total, F scale,
                                        F lo) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < total;
         i += (u64)gridDim.x * blockDim.x) {
        u32 unit = (u32)(i % units);
        out[i] = lo + ((F)1 - lo) * sigmoid(scale * (bias[unit] + in[i]));
    }
}

// Free energies of the visible configurations, one warp per chain, summed in double:
// F_b(v) = -b a.v - sum_mu Gamma_H(b (eta_mu + I_mu)), with I = W^T v given in `hin`.
// Each chain at its own beta (out_own); with `rung_of` non-null also at the beta of the rung it
// is paired with in this round of even/odd swaps (parity 0: pairs (0,1), (2,3)...; parity 1:
// (1,2), (3,4)...), or its own beta when it has no partner (out_other).
extern "C" __global__ void free_energies(const F* __restrict__ v, const F* __restrict__ hin,
                                         const F* __restrict__ a, const F* __restrict__ b,
                                         const F* __restrict__ beta, u32 nv, u32 nh, u32 n,
                                         int hidden_spin, const int* __restrict__ rung_of,
                                         const double* __restrict__ ladder, u32 rungs, int parity,
                                         double* __restrict__ out_own,
                                         double* __restrict__ out_other) {
    u32 warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (warp >= n) return;
    double b0 = (double)beta[warp], b1 = b0;
    if (rung_of) {
        int r = rung_of[warp];
        int partner = ((r - parity) % 2 == 0) ? r + 1 : r - 1;
        if (partner >= 0 && partner < (int)rungs) b1 = ladder[partner];
    }
    const F* vc = v + (u64)warp * nv;
    const F* ic = hin + (u64)warp * nh;
    double av = 0.0, g0 = 0.0, g1 = 0.0;
    for (u32 i = lane; i < nv; i += 32) av += (double)a[i] * (double)vc[i];
    for (u32 j = lane; j < nh; j += 32) {
        double x = (double)b[j] + (double)ic[j];
        g0 += cgf(b0 * x, hidden_spin);
        if (rung_of) g1 += cgf(b1 * x, hidden_spin);
    }
    for (int o = 16; o > 0; o /= 2) {
        av += __shfl_down_sync(0xffffffffu, av, o);
        g0 += __shfl_down_sync(0xffffffffu, g0, o);
        g1 += __shfl_down_sync(0xffffffffu, g1, o);
    }
    if (lane == 0) {
        out_own[warp] = -b0 * av - g0;
        if (rung_of) out_other[warp] = -b1 * av - g1;
    }
}

// The exchanges of one even/odd round of parallel tempering: one thread per (pair, system),
// pair k = 2 p + parity between rungs k and k + 1. The chains stay where they are; an accepted
// exchange swaps the two chains' inverse temperatures and the rung <-> slot maps, which is the
// exchange of the two configurations between the rungs. log alpha = F_k(x_k) + F_{k+1}(x_{k+1})
// - F_k(x_{k+1}) - F_{k+1}(x_k), with the free energies of `free_energies`; `log_alpha_shift`
// is 0 (a test passes +infinity to accept every proposal, as a negative control).
extern "C" __global__ void pt_exchange(int* __restrict__ slot_of, int* __restrict__ rung_of,
                                       F* __restrict__ beta, const double* __restrict__ ladder,
                                       const double* __restrict__ f_own,
                                       const double* __restrict__ f_other, u32 rungs, u32 n,
                                       int parity, double log_alpha_shift, u32 k0, u32 k1,
                                       u64 event, unsigned long long* __restrict__ accepted) {
    u32 pairs = (rungs - parity) / 2;
    u64 t = blockIdx.x * (u64)blockDim.x + threadIdx.x;
    if (t >= (u64)pairs * n) return;
    u32 p = (u32)(t / n), sys = (u32)(t % n);
    u32 k = 2 * p + parity;
    int lo = slot_of[(u64)k * n + sys], hi = slot_of[(u64)(k + 1) * n + sys];
    double log_alpha = f_own[lo] + f_own[hi] - f_other[lo] - f_other[hi] + log_alpha_shift;
    double u = uniform_open0(draw(k, sys, event, k0, k1));
    if (log(u) < log_alpha) {
        slot_of[(u64)k * n + sys] = hi;
        slot_of[(u64)(k + 1) * n + sys] = lo;
        rung_of[lo] = k + 1;
        rung_of[hi] = k;
        beta[lo] = (F)ladder[k + 1];
        beta[hi] = (F)ladder[k];
        atomicAdd(&accepted[k], 1ull);
    }
}

// Gathers columns: out[:, c] = src[:, idx[c]] (a minibatch of the training data).
extern "C" __global__ void gather_columns(const F* __restrict__ src, const u32* __restrict__ idx,
                                          F* __restrict__ out, u32 rows, u64 total) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < total;
         i += (u64)gridDim.x * blockDim.x) {
        u32 r = (u32)(i % rows), c = (u32)(i / rows);
        out[i] = src[(u64)idx[c] * rows + r];
    }
}

// The centring of the weight gradient (Montavon and Mueller; the PTT paper's reference code):
// g holds <v h^T>_D - <v h^T>_M on entry and Cov_D(v, h) - <(v - a)(h - b)^T>_M on exit, with
// a, b the data means and vm, hm the model means.
extern "C" __global__ void centre_gradient(F* __restrict__ g, const F* __restrict__ a,
                                           const F* __restrict__ b, const F* __restrict__ vm,
                                           const F* __restrict__ hm, u32 nv, u32 nh) {
    u64 total = (u64)nv * nh;
    for (u64 t = blockIdx.x * (u64)blockDim.x + threadIdx.x; t < total;
         t += (u64)gridDim.x * blockDim.x) {
        u32 i = (u32)(t % nv), j = (u32)(t / nv);
        g[t] += -(F)2 * a[i] * b[j] + a[i] * hm[j] + vm[i] * b[j];
    }
}

// The centred SGD step: W += lr g; theta += lr (a - vm - g b); eta += lr (b - hm - g^T a), with
// gb = g b and ga = g^T a computed before.
extern "C" __global__ void sgd_step(F* __restrict__ w, F* __restrict__ theta, F* __restrict__ eta,
                                    const F* __restrict__ g, const F* __restrict__ a,
                                    const F* __restrict__ b, const F* __restrict__ vm,
                                    const F* __restrict__ hm, const F* __restrict__ gb,
                                    const F* __restrict__ ga, F lr, u32 nv, u32 nh) {
    u64 nw = (u64)nv * nh, total = nw + nv + nh;
    for (u64 t = blockIdx.x * (u64)blockDim.x + threadIdx.x; t < total;
         t += (u64)gridDim.x * blockDim.x) {
        if (t < nw) {
            w[t] += lr * g[t];
        } else if (t < nw + nv) {
            u32 i = (u32)(t - nw);
            theta[i] += lr * (a[i] - vm[i] - gb[i]);
        } else {
            u32 j = (u32)(t - nw - nv);
            eta[j] += lr * (b[j] - hm[j] - ga[j]);
        }
    }
}
