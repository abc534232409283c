#!/usr/bin/python3
"""The two GDP blocks of bench/bench_nn_blocks.cpp in PyTorch, timed the same way (wall time of
forward + backward seeded with a fixed random cotangent, mean over iterations after a warm-up),
and, with --compare, the ratio ours / PyTorch from a Google Benchmark JSON file.

  OMP_NUM_THREADS=2 build-nngraph/bench/bench_nn_blocks --benchmark_out=/tmp/ours.json \
      --benchmark_out_format=json
  /usr/bin/python3 bench/torch_blocks.py --threads 2 --compare /tmp/ours.json

Models (same as the C++): GraphSAGE 2 layers width 128 (h' = relu([h | mean_in | mean_out] W^T
+ b)) on 50,000 nodes / 100,000 random edges; Transformer-XL stack 2 layers, width 128, 4 heads,
FFN 512, segment 256, memory 256, full mask, relative positions as Dai et al. 2019, post-LN.
"""
import argparse
import json
import math
import time

import torch
import torch.nn.functional as F

N, E, D = 50000, 100000, 128


def uniform(shape, bound, gen):
    return ((torch.rand(shape, generator=gen) * 2 - 1) * bound).requires_grad_(True)


def segment_mean(h, rows, cols, deg_inv):
    return torch.zeros_like(h).index_add_(0, rows, h[cols]) * deg_inv


class Sage:
    def __init__(self, gen):
        self.w = [uniform((D, 3 * D), 1 / math.sqrt(3 * D), gen) for _ in range(2)]
        self.b = [uniform((D,), 1 / math.sqrt(3 * D), gen) for _ in range(2)]
        src = torch.randint(0, N, (E * 2,), generator=gen)
        dst = torch.randint(0, N, (E * 2,), generator=gen)
        keep = (src != dst).nonzero()[:E, 0]
        self.src, self.dst = src[keep], dst[keep]
        self.in_inv = (1 / torch.bincount(self.dst, minlength=N).clamp(min=1).float())[:, None]
        self.out_inv = (1 / torch.bincount(self.src, minlength=N).clamp(min=1).float())[:, None]

    def params(self):
        return self.w + self.b

    def forward(self, x):
        h = x
        for w, b in zip(self.w, self.b):
            m_in = segment_mean(h, self.dst, self.src, self.in_inv)
            m_out = segment_mean(h, self.src, self.dst, self.out_inv)
            h = torch.relu(torch.cat([h, m_in, m_out], 1) @ w.T + b)
        return h


class TransformerXL:
    """With film (2L, D) in forward, each attention output projection is modulated as
    o * (1 + gamma_l) + beta_l (the superposition of bench/torch_policy.py)."""

    def __init__(self, gen, layers=2, heads=4, ffn=512, segment=256, memory=256, width=D):
        self.L, self.H, self.S, self.M, self.D = layers, heads, segment, memory, width
        D = width
        bd, bf = 1 / math.sqrt(D), 1 / math.sqrt(ffn)
        self.layers = []
        for _ in range(layers):
            p = {k: uniform((D, D), bd, gen) for k in ("wq", "wk", "wv", "wr", "wo")}
            p.update(u=uniform((D,), bd, gen), vb=uniform((D,), bd, gen),
                     w1=uniform((ffn, D), bd, gen), b1=uniform((ffn,), bd, gen),
                     w2=uniform((D, ffn), bf, gen), b2=uniform((D,), bf, gen),
                     ln1_w=torch.ones(D, requires_grad=True), ln1_b=torch.zeros(D, requires_grad=True),
                     ln2_w=torch.ones(D, requires_grad=True), ln2_b=torch.zeros(D, requires_grad=True))
            self.layers.append(p)
        self.r_min = 1 - segment
        r = torch.arange(self.r_min, memory + segment, dtype=torch.float32)
        f = torch.pow(10000.0, -2.0 * torch.arange(D // 2, dtype=torch.float32) / D)
        self.R = torch.cat([torch.sin(r[:, None] * f), torch.cos(r[:, None] * f)], 1)

    def params(self):
        return [t for p in self.layers for t in p.values()]

    def layer(self, p, x, mem, rk_all, gamma=None, beta=None):
        S, M, H, D = x.shape[0], (0 if mem is None else mem.shape[0]), self.H, self.D
        Dh, K = D // H, M + x.shape[0]
        ctx = x if mem is None else torch.cat([mem, x], 0)
        q = (x @ p["wq"].T).view(S, H, Dh).transpose(0, 1)      # (H, S, Dh)
        k = (ctx @ p["wk"].T).view(K, H, Dh).transpose(0, 1)    # (H, K, Dh)
        v = (ctx @ p["wv"].T).view(K, H, Dh).transpose(0, 1)
        P = M + 2 * S - 1
        lo = (1 - S) - self.r_min
        rk = rk_all[lo:lo + P].view(P, H, Dh).transpose(0, 1)  # (H, P, Dh)
        ac = (q + p["u"].view(H, 1, Dh)) @ k.transpose(1, 2)    # (H, S, K)
        bd_full = (q + p["vb"].view(H, 1, Dh)) @ rk.transpose(1, 2)  # (H, S, P)
        idx = (M + S - 1) + torch.arange(S)[:, None] - torch.arange(K)[None, :]
        bd = torch.gather(bd_full, 2, idx.expand(H, S, K))
        probs = torch.softmax((ac + bd) / math.sqrt(Dh), -1)
        a = (probs @ v).transpose(0, 1).reshape(S, D)
        o = a @ p["wo"].T
        if gamma is not None:
            o = o * (1 + gamma) + beta  # film_modulate
        h = F.layer_norm(x + o, (D,), p["ln1_w"], p["ln1_b"])
        f = F.linear(torch.relu(F.linear(h, p["w1"], p["b1"])), p["w2"], p["b2"])
        return F.layer_norm(h + f, (D,), p["ln2_w"], p["ln2_b"])

    def forward(self, h, film=None):
        rk_all = [self.R @ p["wr"].T for p in self.layers]
        mems, outs = [None] * self.L, []
        for start in range(0, h.shape[0], self.S):
            x = h[start:start + self.S]
            for l, p in enumerate(self.layers):
                allx = x.detach() if mems[l] is None else torch.cat([mems[l], x.detach()], 0)
                nxt = allx[-self.M:]
                fl = (None, None) if film is None else (film[2 * l:2 * l + 1],
                                                        film[2 * l + 1:2 * l + 2])
                x = self.layer(p, x, mems[l], rk_all[l], *fl)
                mems[l] = nxt
            outs.append(x)
        return torch.cat(outs, 0)


def timed_mean(step, min_time_s, min_iters):
    """One untimed warm-up call of step, then calls until both minimums are met: the mean
    wall time per call and the count. on_warm_up, if step has it, runs after the warm-up."""
    step()  # warm-up
    getattr(step, "on_warm_up", lambda: None)()
    times = []
    start = time.perf_counter()
    while len(times) < min_iters or time.perf_counter() - start < min_time_s:
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return sum(times) / len(times), len(times)


def read_benchmark_json(path, counters=()):
    """Google Benchmark JSON: per benchmark (name[/arg], options such as min_time:, iterations:
    and real_time dropped), the mean over its iteration runs (repetitions; aggregates skipped)
    of the wall time in seconds ("time") and of each named counter present."""
    with open(path) as f:
        benches = json.load(f)["benchmarks"]
    runs = {}
    for b in benches:
        if b.get("run_type", "iteration") != "iteration":
            continue
        scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
        key = "/".join(p for p in b["name"].split("/")[:2] if ":" not in p and p != "real_time")
        r = runs.setdefault(key, {"time": []})
        r["time"].append(b["real_time"] * scale)
        for c in counters:
            if c in b:
                r.setdefault(c, []).append(b[c])
    return {k: {c: sum(x) / len(x) for c, x in v.items()} for k, v in runs.items()}


def time_block(model, x, seed, min_time_s, min_iters):
    def step():
        for t in model.params():
            t.grad = None
        model.forward(x).backward(seed)
    return timed_mean(step, min_time_s, min_iters)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--min-time", type=float, default=2.0, help="seconds per block")
    ap.add_argument("--min-iters", type=int, default=1)
    ap.add_argument("--compare", help="Google Benchmark JSON of bench_nn_blocks")
    ap.add_argument("--attention-nodes", type=int, default=N,
                    help="nodes of the attention block (5000 matches the C++ profiling size)")
    ap.add_argument("--only", choices=["sage", "attention"], help="run one block")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(1)
    x = torch.rand(N, D, generator=gen) * 2 - 1
    seed = torch.rand(N, D, generator=gen) * 2 - 1
    results = {}
    if args.only != "attention":
        results["BM_SageForwardBackward"] = time_block(Sage(gen), x, seed, args.min_time,
                                                       args.min_iters)
    if args.only != "sage":
        n = args.attention_nodes
        results[f"BM_SegmentAttentionForwardBackward/{n}"] = time_block(
            TransformerXL(gen), x[:n], seed[:n], args.min_time, args.min_iters)
    ours = ({k: v["time"] for k, v in read_benchmark_json(args.compare).items()}
            if args.compare else {})
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"{'block':40s} {'torch ms':>10s} {'iters':>6s} {'ours ms':>10s} {'ours/torch':>10s}")
    for name, (sec, iters) in results.items():
        line = f"{name:40s} {sec * 1e3:10.1f} {iters:6d}"
        if name in ours:
            line += f" {ours[name] * 1e3:10.1f} {ours[name] / sec:10.2f}"
        print(line)


if __name__ == "__main__":
    main()
