#!/usr/bin/python3
"""The GDP policy network of rl/gdp/policy.cpp (BM_PolicyStep_50k of bench/bench_rl.cpp) in PyTorch,
timed the same way: wall time of forward + backward seeded with a fixed random cotangent of the
unit logits + one Adam step over every parameter, mean over iterations after a warm-up; with
--compare, the ratio ours / PyTorch from a Google Benchmark JSON file.

  OMP_WAIT_POLICY=passive OMP_NUM_THREADS=2 build/bench/bench_rl --benchmark_filter=PolicyStep \
      --benchmark_out=/tmp/ours.json --benchmark_out_format=json
  OMP_WAIT_POLICY=passive /usr/bin/python3 bench/torch_policy.py --threads 2 --compare /tmp/ours.json

Network (default PolicyConfig: A 8 devices, type embedding E 16, width D 64, 2 SAGE layers,
2 attention layers, 4 heads, FFN 256, segment 128, memory 128, superposition hidden 64), as
BasicPolicy::forward:
  h0   = relu([x | x standardized] (N, 2F) | embed(type) (N, E)) W_in^T + b_in + stats W_g^T)
  h    = SAGE_2(h0), layer relu([h | mean_in(h) | mean_out(h)] W^T + b)
  film = W2 relu(W1 mean_n(h) + b1) + b2, as (2L, D)
  ht   = ((h - mean_n h) / sqrt(var_n h + 1e-5))[topo]
  o    = Transformer-XL(ht) (relative positions, memory over segments, o * (1 + gamma_l) + beta_l
         after each attention output projection, post-LN)
  unit logits = index_add(W_out o + b_out over units) / unit sizes + mask         (U, A)
The graph is random with the sizes of ours (nodes, distinct edges, units, vocabulary: the
counters of the --compare file, else the defaults below); the features are random of the
widths of rl/gdp/features.h (kNodeFeatures 36, doubled by the standardized copy; kGraphFeatures 19).
Equal work, not equal numbers: the values differ from ours.
"""
import argparse
import math
import time

import torch
import torch.nn.functional as F

from torch_blocks import TransformerXL, read_benchmark_json, segment_mean, timed_mean, uniform

# rl/gdp/features.h and rl/gdp/policy.h (PolicyConfig defaults).
NODE_FEATURES, GRAPH_FEATURES = 36, 19
A, E_TYPE, D, SAGE_LAYERS, L, HEADS, FFN, SEG, MEM, FILM_HIDDEN = 8, 16, 64, 2, 2, 4, 256, 128, 128, 64
# The 50k-op graph of BM_PolicyStep_50k (make_random_graph layered, 50000, seed 1), when no
# --compare file gives them.
DEFAULT_SIZES = {"nodes": 50065, "edges": 69044, "units": 35565, "vocab": 38}


class Graph:
    """A random graph of the given sizes: distinct directed (src, dst) pairs, a topological order
    (a permutation), a unit per position, a vocabulary index per op, features."""

    def __init__(self, sizes, gen):
        n, e, u, v = (int(sizes[k]) for k in ("nodes", "edges", "units", "vocab"))
        self.n, self.u = n, u
        key = torch.unique(torch.randint(0, n * n, (int(e * 1.2) + 16,), generator=gen))
        key = key[key // n != key % n]
        key = key[torch.randperm(key.numel(), generator=gen)[:e]]
        self.src, self.dst = key // n, key % n
        self.in_inv = (1 / torch.bincount(self.dst, minlength=n).clamp(min=1).float())[:, None]
        self.out_inv = (1 / torch.bincount(self.src, minlength=n).clamp(min=1).float())[:, None]
        self.topo = torch.randperm(n, generator=gen)
        unit = torch.cat([torch.arange(u), torch.randint(0, u, (n - u,), generator=gen)])
        self.unit_of_topo = unit[torch.randperm(n, generator=gen)]
        self.unit_scale = (1 / torch.bincount(self.unit_of_topo, minlength=u).float())[:, None]
        self.mask = torch.zeros(u, A)
        self.mask[0, 1:] = -1e9  # the anchor: unit 0 on device 0
        self.op_type = torch.randint(0, v, (n,), generator=gen)
        self.vocab = v
        x = torch.rand(n, NODE_FEATURES, generator=gen) * 3
        self.x = torch.cat([x, (x - x.mean(0)) / torch.sqrt(x.var(0, unbiased=False) + 1e-6)], 1)
        self.stats = torch.rand(1, GRAPH_FEATURES, generator=gen) * 3


class Policy:
    def __init__(self, vocab, gen):
        fin = 2 * NODE_FEATURES + E_TYPE
        self.type_table = torch.randn(vocab, E_TYPE, generator=gen).requires_grad_(True)
        self.w_in = uniform((D, fin), 1 / math.sqrt(fin), gen)
        self.b_in = uniform((D,), 1 / math.sqrt(fin), gen)
        self.w_g = uniform((D, GRAPH_FEATURES), 1 / math.sqrt(GRAPH_FEATURES), gen)
        bs = 1 / math.sqrt(3 * D)
        self.sage_w = [uniform((D, 3 * D), bs, gen) for _ in range(SAGE_LAYERS)]
        self.sage_b = [uniform((D,), bs, gen) for _ in range(SAGE_LAYERS)]
        b1, b2 = 1 / math.sqrt(D), 1 / math.sqrt(FILM_HIDDEN)
        self.film = [uniform((FILM_HIDDEN, D), b1, gen), uniform((FILM_HIDDEN,), b1, gen),
                     uniform((2 * L * D, FILM_HIDDEN), b2, gen), uniform((2 * L * D,), b2, gen)]
        self.xl = TransformerXL(gen, layers=L, heads=HEADS, ffn=FFN, segment=SEG, memory=MEM,
                                width=D)
        self.w_out = uniform((A, D), 0.01 / math.sqrt(D), gen)
        self.b_out = torch.zeros(A, requires_grad=True)

    def params(self):
        return ([self.type_table, self.w_in, self.b_in, self.w_g] + self.sage_w + self.sage_b +
                self.film + self.xl.params() + [self.w_out, self.b_out])

    def forward(self, g):
        e = self.type_table[g.op_type]                                   # embedding (N, E)
        h = torch.relu(F.linear(torch.cat([g.x, e], 1), self.w_in, self.b_in) +
                       g.stats @ self.w_g.T)                             # (N, D)
        for w, b in zip(self.sage_w, self.sage_b):
            m_in = segment_mean(h, g.dst, g.src, g.in_inv)
            m_out = segment_mean(h, g.src, g.dst, g.out_inv)
            h = torch.relu(torch.cat([h, m_in, m_out], 1) @ w.T + b)
        w1, b1, w2, b2 = self.film
        film = F.linear(torch.relu(F.linear(h.mean(0, keepdim=True), w1, b1)), w2, b2)
        film = film.view(2 * L, D)
        centered = h - h.mean(0, keepdim=True)
        spread = torch.sqrt((centered * centered).mean(0, keepdim=True) + 1e-5)
        ht = (centered / spread)[g.topo]
        o = self.xl.forward(ht, film)
        node_logits = F.linear(o, self.w_out, self.b_out)                # (N, A)
        unit_sum = torch.zeros(g.u, A).index_add_(0, g.unit_of_topo, node_logits)
        return unit_sum * g.unit_scale + g.mask                          # (U, A)


def time_policy(policy, g, seed, min_time_s, min_iters):
    opt = torch.optim.Adam(policy.params(), lr=3e-3)  # TrainConfig's lr
    split = [0.0, 0.0, 0.0]

    def step():
        opt.zero_grad(set_to_none=True)
        t0 = time.perf_counter()
        logits = policy.forward(g)
        t1 = time.perf_counter()
        logits.backward(seed)
        t2 = time.perf_counter()
        opt.step()
        t3 = time.perf_counter()
        split[0] += t1 - t0
        split[1] += t2 - t1
        split[2] += t3 - t2

    step.on_warm_up = lambda: split.__setitem__(slice(None), [0.0, 0.0, 0.0])
    sec, n = timed_mean(step, min_time_s, min_iters)
    return sec, n, [s / n for s in split]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--min-time", type=float, default=5.0, help="seconds")
    ap.add_argument("--min-iters", type=int, default=1)
    ap.add_argument("--compare", help="Google Benchmark JSON of bench_rl (BM_PolicyStep_50k)")
    for k, v in DEFAULT_SIZES.items():
        ap.add_argument(f"--{k}", type=int, help=f"graph size (default: the --compare file's, "
                        f"else {v})")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    name = "BM_PolicyStep_50k"
    counters = ("forward_s", "backward_s", "adam_s", "nodes", "edges", "units", "vocab", "params")
    ours = read_benchmark_json(args.compare, counters).get(name) if args.compare else None
    sizes = {k: (getattr(args, k) if getattr(args, k) is not None else
                 int(ours[k]) if ours and k in ours else v) for k, v in DEFAULT_SIZES.items()}
    gen = torch.Generator().manual_seed(1)
    g = Graph(sizes, gen)
    policy = Policy(g.vocab, gen)
    seed = torch.rand(g.u, A, generator=gen) * 2 - 1
    n_params = sum(p.numel() for p in policy.params())
    sec, iters, split = time_policy(policy, g, seed, args.min_time, args.min_iters)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; graph "
          f"{g.n} nodes, {g.src.numel()} edges, {g.u} units, vocabulary {g.vocab}; "
          f"{n_params} parameters" +
          (f" (ours {int(ours['params'])})" if ours and "params" in ours else ""))
    print(f"{'':28s} {'total ms':>10s} {'forward':>10s} {'backward':>10s} {'adam':>10s}")
    print(f"{'torch (' + str(iters) + ' iters)':28s} {sec * 1e3:10.1f} " +
          " ".join(f"{s * 1e3:10.1f}" for s in split))
    if ours:
        parts = [ours.get(c, float("nan")) for c in ("forward_s", "backward_s", "adam_s")]
        print(f"{'ours':28s} {ours['time'] * 1e3:10.1f} " +
              " ".join(f"{s * 1e3:10.1f}" for s in parts))
        print(f"{'ours / torch':28s} {ours['time'] / sec:10.2f} " +
              " ".join(f"{o / t:10.2f}" for o, t in zip(parts, split)))


if __name__ == "__main__":
    main()
