#!/usr/bin/env python3
"""Stable-Baselines3's PPO trained on gdp.env.PlacementEnv, its placements set beside random ones.

gdp does not depend on Stable-Baselines3; install it to run this example:

    pip install stable-baselines3          # SB3 2.x on Gymnasium 1.x

On Debian 12's PyTorch 1.13, in the project's .venv (SB3 2.5 and later need PyTorch 2.3, and
pip would then replace Debian's torch; pandas 3 would replace its numpy):

    .venv/bin/pip install --no-deps stable-baselines3==2.4.1 && .venv/bin/pip install pandas==2.1.4
    PYTHONPATH=build/python .venv/bin/python examples/sb3_ppo.py [--steps 4096] [--seed 1]

The default graph is a 2-layer LSTM language model unrolled over 3 steps (`gdp gen rnnlm
--layers 2 --seq-len 3`: 299 ops, 285 placement units) on two NVLink-connected V100s. PPO's
MultiInputPolicy sees the unit features (Gymnasium's FilterObservation keeps unit_x and
graph_stats); each step is one placement of every unit, simulated. Afterwards both PPO's
policy and uniform random placement draw --eval placements, scored by the simulator; the
report is their mean and best step times. --sequential trains on SequentialPlacementEnv
instead (one unit per step: an episode is 285 steps, so it needs many more steps).
"""

import argparse
import json
import sys
import time

import numpy as np

import gdp

try:
    import gymnasium

    from gdp.env import PlacementEnv, SequentialPlacementEnv
    from stable_baselines3 import PPO
except ImportError as e:
    sys.exit(f"sb3_ppo: {e}\nthis example needs Gymnasium 1.x and Stable-Baselines3; see the "
             "top of examples/sb3_ppo.py for how to install them")


def make_env(args, sequential):
    if args.graph:
        graph = gdp.load_graph(args.graph)
    else:
        graph = gdp.generate("rnnlm", layers=2, seq_len=3)
    if sequential:
        return SequentialPlacementEnv(graph, args.cluster, seed=args.seed)
    env = PlacementEnv(graph, args.cluster, seed=args.seed)
    return gymnasium.wrappers.FilterObservation(env, ["unit_x", "graph_stats"])


def policy_placements(model, env, n, sequential, seed):
    """n unit actions (n, U) sampled from the trained policy."""
    out = []
    for i in range(n):
        obs, _ = env.reset(seed=seed + i)
        if not sequential:
            out.append(model.predict(obs, deterministic=False)[0])
            continue
        done = False
        while not done:
            a, _ = model.predict(obs, deterministic=False)
            obs, _, done, _, _ = env.step(int(a))
        out.append(obs["placement"])
    return np.asarray(out, dtype=np.int32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graph", help="a graph file (default: gdp gen rnnlm --layers 2 --seq-len 3)")
    ap.add_argument("--cluster", default="v100x2-nvlink")
    ap.add_argument("--steps", type=int, default=4096, help="PPO's environment steps")
    ap.add_argument("--eval", type=int, default=256, help="placements drawn by each side")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sequential", action="store_true", help="SequentialPlacementEnv")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()

    env = make_env(args, args.sequential)
    base = env.unwrapped
    t0 = time.perf_counter()
    model = PPO("MultiInputPolicy", env, n_steps=256, batch_size=64, gamma=1.0,
                learning_rate=3e-4, seed=args.seed, device="cpu", verbose=0)
    model.learn(total_timesteps=args.steps)
    train_s = time.perf_counter() - t0

    ppo = policy_placements(model, env, args.eval, args.sequential, args.seed)
    rng = np.random.default_rng(args.seed)
    random = rng.integers(0, base.num_devices, ppo.shape, dtype=np.int32)
    _, ppo_s = base.step_batch(ppo)
    _, random_s = base.step_batch(random)
    out = {
        "graph": base.graph.name, "ops": base.num_ops, "units": base.num_units,
        "cluster": base.cluster.name, "env": type(base).__name__, "steps": args.steps,
        "seed": args.seed, "train_s": round(train_s, 1), "reference": base.reference_method,
        "reference_s": base.reference_s,
        "random_mean_s": float(np.mean(random_s)), "random_best_s": float(np.min(random_s)),
        "ppo_mean_s": float(np.mean(ppo_s)), "ppo_best_s": float(np.min(ppo_s)),
    }
    out["ppo_faster_than_random"] = 1 - out["ppo_mean_s"] / out["random_mean_s"]
    if args.json:
        print(json.dumps(out))
        return
    print(f"{out['graph']} ({out['ops']} ops, {out['units']} units) on {out['cluster']}, "
          f"{type(base).__name__}: PPO {args.steps} steps in {train_s:.0f} s, seed {args.seed}")
    print(f"  reference ({out['reference']})   {out['reference_s'] * 1e3:8.3f} ms")
    for side in ("random", "ppo"):
        print(f"  {side:6s} {args.eval} placements: mean {out[side + '_mean_s'] * 1e3:8.3f} ms, "
              f"best {out[side + '_best_s'] * 1e3:8.3f} ms")
    print(f"  PPO's placements are {100 * out['ppo_faster_than_random']:.1f}% faster than "
          "random ones (mean step time)")


if __name__ == "__main__":
    main()
