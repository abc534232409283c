"""PlacementEnv: device placement of one graph on one cluster as a Gymnasium-style environment.

An episode is one decision, as in GDP's training: ``reset()`` gives the observation (the GDP
policy's features, rl/features.h, and the same per placement unit), ``step(action)`` takes a
device per *unit* (place/units.h: a colocation group is one unit, any other op its own; units
are numbered in topological order of their first op) and ends the episode with the reward the
C++ trainers use (rl/reward.h): ``-sqrt(step / reference)``, where the reference is the step
time of the trainers' reference placement (human, else single, else round-robin), and
``invalid_penalty`` (-10) for an invalid placement (out of memory). ``step_batch`` scores K
actions at once on every core. No gymnasium dependency: the API follows it (``reset(seed=)``
-> ``(obs, info)``, ``step(a)`` -> ``(obs, reward, terminated, truncated, info)``).

    env = PlacementEnv(gdp.generate("gnmt", layers=2), "v100x2-nvlink")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
"""

import numpy as np

from . import _MISSING_MESSAGE, have_core

if not have_core():
    raise ImportError(f"gdp.env: {_MISSING_MESSAGE}")

from . import Graph, Simulator, features, load_graph, reference, rewards, units  # noqa: E402

__all__ = ["PlacementEnv", "UnitActionSpace"]


class UnitActionSpace:
    """A device in [0, num_devices) for each of num_units units (Gymnasium's MultiDiscrete)."""

    def __init__(self, num_units, num_devices, seed=None):
        self.num_units = int(num_units)
        self.num_devices = int(num_devices)
        self.shape = (self.num_units,)
        self.nvec = np.full(self.num_units, self.num_devices, dtype=np.int64)
        self.dtype = np.int32
        self._rng = np.random.default_rng(seed)

    def seed(self, seed=None):
        self._rng = np.random.default_rng(seed)

    def sample(self, n=None):
        """One action (U,), or n of them (n, U), uniformly at random."""
        size = self.shape if n is None else (int(n),) + self.shape
        return self._rng.integers(0, self.num_devices, size=size, dtype=np.int32)

    def contains(self, action):
        a = np.asarray(action)
        return (
            a.shape == self.shape
            and a.dtype.kind in "iu"
            and bool(np.all((a >= 0) & (a < self.num_devices)))
        )

    def __repr__(self):
        return f"UnitActionSpace(num_units={self.num_units}, num_devices={self.num_devices})"


class PlacementEnv:
    """Place `graph` on `cluster`, one device per placement unit per episode.

    graph: a gdp.Graph or a graph file; cluster: a gdp.Cluster, preset or file; profile: None,
    a gdp.Profile or a profile file. reference_s: the reward's reference step time (default:
    the trainers' reference placement's). vocabulary: the op types of the features' op_type
    (default: this graph's).

    Observation (a dict, the same every episode): x (N, K) float32 op features with
    ``columns``; op_type (N); edge_index (2, E); topo (N); graph_stats (G); unit_of (N);
    unit_x (U, K), the mean of x over each unit's ops; unit_size (U); num_devices.
    """

    metadata = {"render_modes": []}

    def __init__(self, graph, cluster, profile=None, reference_s=None, invalid_penalty=-10.0,
                 vocabulary=None, seed=None):
        self.graph = graph if isinstance(graph, Graph) else load_graph(graph)
        self.sim = Simulator(self.graph, cluster, profile)
        self.cluster = self.sim.cluster
        self.invalid_penalty = float(invalid_penalty)
        if reference_s is None:
            ref = reference(self.graph, self.cluster, profile)
            self.reference_s = float(ref["step_s"])
            self.reference_method = ref["method"]
            self.reference_placement = ref["placement"]
        else:
            self.reference_s = float(reference_s)
            self.reference_method = "given"
            self.reference_placement = None
        if not (self.reference_s > 0 and np.isfinite(self.reference_s)):
            raise ValueError(f"reference_s must be positive and finite, got {self.reference_s}")

        u = units(self.graph)
        self.unit_of = u["unit_of"]  # (N) unit of each op
        self.first_op = u["first_op"]  # (U) topologically first op of each unit
        self.num_units = int(u["num_units"])
        self.num_devices = self.cluster.num_devices
        self.action_space = UnitActionSpace(self.num_units, self.num_devices, seed)

        f = features(self.graph, self.cluster, profile, vocabulary)
        size = np.bincount(self.unit_of, minlength=self.num_units).astype(np.float32)
        unit_x = np.zeros((self.num_units, f["x"].shape[1]), dtype=np.float32)
        np.add.at(unit_x, self.unit_of, f["x"])
        unit_x /= size[:, None]
        self._obs = {
            "x": f["x"],
            "columns": f["columns"],
            "op_type": f["op_type"],
            "vocabulary": f["vocabulary"],
            "edge_index": f["edge_index"],
            "topo": f["topo"],
            "graph_stats": f["graph_stats"],
            "unit_of": self.unit_of,
            "unit_x": unit_x,
            "unit_size": size,
            "num_devices": self.num_devices,
        }
        self.samples = 0  # placements simulated through step / step_batch
        self.best_step_s = float("inf")
        self.best_action = None

    # The op placement (N) of a unit action (U): every op on its unit's device.
    def placement(self, action):
        a = self._check(action, 1)
        return a[self.unit_of]

    # The unit action (U) of an op placement (N): each unit's first op's device.
    def unit_action(self, placement):
        p = np.asarray(placement)
        if p.shape != (self.graph.num_ops,):
            raise ValueError(f"placement: expected shape ({self.graph.num_ops},), got {p.shape}")
        return p[self.first_op].astype(np.int32)

    def reward(self, step_s):
        """The reward of step time(s): -sqrt(step / reference_s), invalid_penalty when inf."""
        r = rewards(np.atleast_1d(np.asarray(step_s, dtype=np.float64)), self.reference_s,
                    self.invalid_penalty)
        return float(r[0]) if np.ndim(step_s) == 0 else r

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.action_space.seed(seed)
        return self._obs, self._info()

    def step(self, action):
        a = self._check(action, 1)
        res = self.sim.run(a[self.unit_of])
        # The trainers score an out-of-memory placement as invalid (step time inf).
        step_s = res.step_time_s if res.valid else float("inf")
        self._count(step_s, a)
        info = self._info()
        info.update(step_time_s=step_s, valid=res.valid, status=res.status, reason=res.reason,
                    peak_memory_bytes=res.peak_memory_bytes)
        return self._obs, self.reward(step_s), True, False, info

    def step_batch(self, actions):
        """Scores K actions (K, U) in parallel: (rewards (K), step times (K), inf when invalid)."""
        a = self._check(actions, 2)
        t = self.sim.step_times(a[:, self.unit_of])
        for k in range(a.shape[0]):
            self._count(t[k], a[k])
        return self.reward(t), t

    def _check(self, action, ndim):
        a = np.asarray(action)
        if a.dtype.kind not in "iu":
            raise ValueError(f"action: expected integer devices, got dtype {a.dtype}")
        if a.ndim != ndim or a.shape[-1] != self.num_units:
            want = "(U,)" if ndim == 1 else "(K, U)"
            raise ValueError(f"action: expected shape {want} with U = {self.num_units} units, "
                             f"got {a.shape}")
        if a.size and (a.min() < 0 or a.max() >= self.num_devices):
            raise ValueError(f"action: devices must be in [0, {self.num_devices}), got "
                             f"{a.min()}..{a.max()}")
        return a.astype(np.int32, copy=False)

    def _count(self, step_s, action):
        self.samples += 1
        if step_s < self.best_step_s:
            self.best_step_s = float(step_s)
            self.best_action = np.array(action, dtype=np.int32)

    def _info(self):
        return {
            "reference_s": self.reference_s,
            "reference_method": self.reference_method,
            "num_units": self.num_units,
            "num_devices": self.num_devices,
            "unit_of": self.unit_of,
            "samples": self.samples,
            "best_step_s": self.best_step_s,
        }

    def close(self):
        pass

    def __repr__(self):
        return (f"<gdp.env.PlacementEnv '{self.graph.name}' on '{self.cluster.name}': "
                f"{self.num_units} units, {self.num_devices} devices>")
