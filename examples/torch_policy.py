#!/usr/bin/env python3
"""A small PyTorch placement policy trained against gdp's simulator, and random search beside it.

The policy gives each placement unit (a colocation group, or an op; gdp.env.PlacementEnv)
device logits: an MLP over the unit's features (the GDP policy's, averaged over the unit's
ops) plus a free logit table, both starting at zero (uniform, i.e. random placement). It is
trained with REINFORCE on the trainers' reward (-sqrt(step / reference), -10 when invalid)
with a moving-average baseline. Random search draws the same number of placements uniformly.
Both are scored by the best step time among their samples.

    PYTHONPATH=build/python .venv/bin/python examples/torch_policy.py
    PYTHONPATH=build/python .venv/bin/python examples/torch_policy.py --samples 4096 --entry bert_small

gdp.env needs Gymnasium 1.x: .venv (scripts/install_deps.sh) has it, with Debian's torch.

--check exits 1 unless the policy's best beats random's (python/example runs it so).
"""

import argparse
import json
import os
import sys
import time

import numpy as np
import torch

import gdp
from gdp.env import PlacementEnv

HERE = os.path.dirname(os.path.abspath(__file__))
SMOKE = os.path.join(HERE, "..", "datasets", "suites", "smoke.json")


class UnitPolicy(torch.nn.Module):
    """Device logits (U, D) = MLP(unit features) + a free table; zero at the start."""

    def __init__(self, unit_x, num_devices, hidden=32):
        super().__init__()
        x = torch.as_tensor(unit_x, dtype=torch.float32)  # (U, K)
        # Features span several orders of magnitude: standardize each column.
        self.register_buffer("x", (x - x.mean(0)) / (x.std(0) + 1e-6))
        self.mlp = torch.nn.Sequential(torch.nn.Linear(x.shape[1], hidden), torch.nn.Tanh(),
                                       torch.nn.Linear(hidden, num_devices))
        torch.nn.init.zeros_(self.mlp[2].weight)
        torch.nn.init.zeros_(self.mlp[2].bias)
        self.table = torch.nn.Parameter(torch.zeros(x.shape[0], num_devices))

    def forward(self):
        return self.mlp(self.x) + self.table  # (U, D)


def random_search(env, samples, batch, seed):
    """Best step time of `samples` uniformly random unit placements."""
    rng = np.random.default_rng(seed)
    best = float("inf")
    for start in range(0, samples, batch):
        k = min(batch, samples - start)
        a = rng.integers(0, env.num_devices, (k, env.num_units), dtype=np.int32)
        _, t = env.step_batch(a)
        best = min(best, float(t.min()))
    return best


def train_policy(env, samples, batch, seed, lr, entropy):
    """REINFORCE on `samples` placements in batches; returns (best step time, curve)."""
    torch.manual_seed(seed)
    obs, _ = env.reset(seed=seed)
    policy = UnitPolicy(obs["unit_x"], env.num_devices)
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    baseline = None
    curve = []
    for start in range(0, samples, batch):
        k = min(batch, samples - start)
        dist = torch.distributions.Categorical(logits=policy())
        a = dist.sample((k,))  # (k, U)
        rewards, _ = env.step_batch(a.numpy().astype(np.int32))
        r = torch.as_tensor(rewards, dtype=torch.float32)
        baseline = r.mean() if baseline is None else 0.9 * baseline + 0.1 * r.mean()
        adv = r - baseline
        adv = adv / (adv.std() + 1e-8) if k > 1 else adv
        logp = dist.log_prob(a).sum(-1)  # (k)
        loss = -(adv * logp).mean() - entropy * dist.entropy().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        curve.append((env.samples, env.best_step_s))
    return env.best_step_s, curve


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite", default=SMOKE, help="a suite file (default: smoke.json)")
    ap.add_argument("--entry", default="gnmt_small", help="the suite entry to place")
    ap.add_argument("--samples", type=int, default=2048, help="placements each method simulates")
    ap.add_argument("--batch", type=int, default=32, help="placements per policy update")
    ap.add_argument("--lr", type=float, default=0.01, help="Adam learning rate")
    ap.add_argument("--entropy", type=float, default=0.0, help="entropy bonus weight")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--check", action="store_true", help="exit 1 unless the policy beats random")
    args = ap.parse_args()
    torch.set_num_threads(1)  # the simulator's OpenMP threads take the cores

    entry = gdp.load_suite(args.suite, [args.entry])[0]
    t0 = time.perf_counter()
    env = PlacementEnv(entry["graph"], entry["cluster"], seed=args.seed)
    random_best = random_search(env, args.samples, args.batch, args.seed)
    t1 = time.perf_counter()
    env = PlacementEnv(entry["graph"], entry["cluster"], seed=args.seed)
    policy_best, curve = train_policy(env, args.samples, args.batch, args.seed, args.lr,
                                      args.entropy)
    t2 = time.perf_counter()

    out = {
        "graph": args.entry,
        "cluster": entry["cluster_name"],
        "ops": entry["graph"].num_ops,
        "units": env.num_units,
        "devices": env.num_devices,
        "samples": args.samples,
        "seed": args.seed,
        "reference": env.reference_method,
        "reference_s": env.reference_s,
        "random_best_s": random_best,
        "policy_best_s": policy_best,
        "random_wall_s": t1 - t0,
        "policy_wall_s": t2 - t1,
        "beats_random": policy_best < random_best,
    }
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{args.entry} on {out['cluster']}: {out['ops']} ops, {out['units']} units, "
              f"{out['devices']} devices; {args.samples} samples each, seed {args.seed}")
        print(f"  reference ({env.reference_method})  {env.reference_s * 1e3:9.4f} ms")
        print(f"  random search best   {random_best * 1e3:9.4f} ms   ({t1 - t0:.1f} s)")
        print(f"  torch policy best    {policy_best * 1e3:9.4f} ms   ({t2 - t1:.1f} s)")
        for s, b in curve[:: max(1, len(curve) // 8)]:
            print(f"    after {s:5d} samples: best {b * 1e3:9.4f} ms")
        print("  the policy beats random" if out["beats_random"] else
              "  the policy does NOT beat random")
    if args.check and not out["beats_random"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
