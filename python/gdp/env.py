"""Device placement of one graph on one cluster as Gymnasium environments (Gymnasium 1.x).

``PlacementEnv``: an episode is one decision, as in GDP's training. ``reset()`` gives the
observation (the GDP policy's features, rl/gdp/features.h, and their means per placement unit),
``step(action)`` takes a device per *unit* (place/units.h: a colocation group is one unit, any
other op its own; units are numbered in topological order of their first op) and ends the
episode with the C++ trainers' reward (rl/run/reward.h): ``-sqrt(step / reference)``, where the
reference is the step time of the trainers' reference placement (human, else single, else
round-robin), or ``invalid_penalty`` (-10) for an invalid placement (out of memory).
``step_batch`` scores K actions at once on every core.

``SequentialPlacementEnv``: the same placement one unit per step (in unit order), the
observation showing the placement so far, the reward at the last step (0 before), for
methods that assign credit per decision.

Both are ``gymnasium.Env`` subclasses whose spaces describe every observation they return;
strings and per-graph figures are attributes (``columns``, ``vocabulary``, ...) or in
``info``, which depends only on the environment's arguments and, after a step, on the action.
Registered as ``gdp/Placement-v0`` and ``gdp/SequentialPlacement-v0`` for ``gymnasium.make``.

    env = PlacementEnv(gdp.generate("gnmt", layers=2), "v100x2-nvlink")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
"""

import numpy as np

from . import _MISSING_MESSAGE, have_core

if not have_core():
    raise ImportError(f"gdp.env: {_MISSING_MESSAGE}")

_GYMNASIUM_HINT = ("gdp.env needs Gymnasium 1.x: pip install 'gymnasium>=1.0' (bash "
                   "scripts/install_deps.sh makes the project's .venv with it: "
                   "run .venv/bin/python)")
try:
    import gymnasium
    from gymnasium import spaces
except ImportError as _e:
    raise ImportError(f"{_GYMNASIUM_HINT} ({_e})") from None
if int(gymnasium.__version__.split(".")[0]) < 1:
    raise ImportError(f"{_GYMNASIUM_HINT}; found gymnasium {gymnasium.__version__}")

from . import Graph, Simulator, features, load_graph, reference, rewards, units  # noqa: E402

__all__ = ["PlacementEnv", "SequentialPlacementEnv", "FEATURE_MAX"]

# Every feature of rl/gdp/features.h is an indicator, a fraction, or log10(1 + x / unit) of a
# non-negative double: in [0, log10(DBL_MAX) = 308.3]. The observation space's bound.
FEATURE_MAX = 310.0


def _index_box(high, shape):
    """Integers in [0, high] (high at least 1: a Box whose bounds are equal is degenerate)."""
    return spaces.Box(0, max(int(high), 1), shape=shape, dtype=np.int64)


class _PlacementBase(gymnasium.Env):
    """What both environments share: the graph, the simulator, the reference step time, the
    units, the features (the observation's graph part) and the reward."""

    metadata = {"render_modes": []}

    def __init__(self, graph, cluster, profile=None, reference_s=None, invalid_penalty=-10.0,
                 vocabulary=None, seed=None):
        self.graph = graph if isinstance(graph, Graph) else load_graph(graph)
        self.sim = Simulator(self.graph, cluster, profile)
        self.cluster = self.sim.cluster
        self.invalid_penalty = float(invalid_penalty)
        if not np.isfinite(self.invalid_penalty):
            raise ValueError(f"invalid_penalty must be finite, got {invalid_penalty}")
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
        self.unit_of = u["unit_of"].astype(np.int64)  # (N) unit of each op
        self.first_op = u["first_op"].astype(np.int64)  # (U) topologically first op of a unit
        self.num_ops = self.graph.num_ops
        self.num_units = int(u["num_units"])
        self.num_devices = self.cluster.num_devices

        f = features(self.graph, self.cluster, profile, vocabulary)
        self.columns = f["columns"]  # (K) names of x's columns
        self.vocabulary = f["vocabulary"]  # op_type i > 0 is vocabulary[i - 1]; 0 unknown
        self.graph_columns = f["graph_columns"]  # (G) names of graph_stats
        for name, values, cols in (("x", f["x"], self.columns),
                                   ("graph_stats", f["graph_stats"], self.graph_columns)):
            bad = ~((values >= 0) & (values <= FEATURE_MAX))
            if bad.any():
                col = cols[np.argwhere(bad)[0][-1]]
                raise ValueError(f"features: {name} column {col!r} has a value outside "
                                 f"[0, {FEATURE_MAX}] ({values[bad][0]}): a bug in the features")
        N, U, K = self.num_ops, self.num_units, f["x"].shape[1]
        size = np.bincount(self.unit_of, minlength=U)
        unit_x = np.zeros((U, K), dtype=np.float32)
        np.add.at(unit_x, self.unit_of, f["x"])
        unit_x /= size[:, None]
        # The graph part of every observation: (array, space) per key.
        graph_part = {
            "x": (f["x"], spaces.Box(0, FEATURE_MAX, (N, K), np.float32)),  # op features
            "op_type": (f["op_type"], _index_box(len(self.vocabulary), (N,))),
            "edge_index": (f["edge_index"], _index_box(N - 1, f["edge_index"].shape)),  # (2, E)
            "topo": (f["topo"], _index_box(N - 1, (N,))),  # a topological order of the ops
            "graph_stats": (f["graph_stats"],
                            spaces.Box(0, FEATURE_MAX, f["graph_stats"].shape, np.float32)),
            "unit_of": (self.unit_of, _index_box(U - 1, (N,))),
            "unit_x": (unit_x, spaces.Box(0, FEATURE_MAX, (U, K), np.float32)),  # unit means
            "unit_size": (size.astype(np.int64), spaces.Box(1, max(N, 2), (U,), np.int64)),
        }
        self._graph_obs = {}
        for key, (value, space) in graph_part.items():
            value = np.array(value, dtype=space.dtype)  # a private copy
            value.setflags(write=False)
            self._graph_obs[key] = value
        self.graph_observation_space = spaces.Dict({k: s for k, (_, s) in graph_part.items()})
        # Bookkeeping across episodes (never in info, untouched by reset): placements
        # simulated through step and step_batch, the best step time and its action.
        self.samples = 0
        self.best_step_s = float("inf")
        self.best_action = None

    def graph_observation(self):
        """The graph's arrays (PlacementEnv's observation; ``graph_observation_space``), each
        a fresh writable copy."""
        return {k: v.copy() for k, v in self._graph_obs.items()}

    # The op placement (N) of a unit action (U): every op on its unit's device.
    def placement(self, action):
        a = self._check(action, 1)
        return a[self.unit_of]

    # The unit action (U) of an op placement (N): each unit's first op's device.
    def unit_action(self, placement):
        p = np.asarray(placement)
        if p.shape != (self.num_ops,):
            raise ValueError(f"placement: expected shape ({self.num_ops},), got {p.shape}")
        return p[self.first_op].astype(np.int32)

    def reward(self, step_s):
        """The reward of step time(s): -sqrt(step / reference_s), invalid_penalty when inf."""
        r = rewards(np.atleast_1d(np.asarray(step_s, dtype=np.float64)), self.reference_s,
                    self.invalid_penalty)
        return float(r[0]) if np.ndim(step_s) == 0 else r

    def step_batch(self, actions):
        """Scores K unit actions (K, U) in parallel, outside any episode: (rewards (K), step
        times (K), inf when invalid)."""
        a = self._check(actions, 2)
        t = self.sim.step_times(a[:, self.unit_of])
        for k in range(a.shape[0]):
            self._count(t[k], a[k])
        return self.reward(t), t

    def _reset(self, seed, options):
        super().reset(seed=seed)
        if seed is not None:
            self.action_space.seed(seed)
        if options:
            raise ValueError(f"reset: {type(self).__name__} takes no options, got "
                             f"{sorted(options)}")

    def _simulate(self, a):
        """Simulates unit action `a` (U) int32: (reward, the step's info)."""
        res = self.sim.run(a[self.unit_of])
        # The trainers score an out-of-memory placement as invalid (step time inf).
        step_s = float(res.step_time_s) if res.valid else float("inf")
        self._count(step_s, a)
        info = self._info()
        info.update(step_time_s=step_s, valid=bool(res.valid), status=res.status,
                    reason=res.reason, peak_memory_bytes=np.array(res.peak_memory_bytes))
        return self.reward(step_s), info

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
        }

    def close(self):
        pass

    def __repr__(self):
        return (f"<gdp.env.{type(self).__name__} '{self.graph.name}' on '{self.cluster.name}': "
                f"{self.num_units} units, {self.num_devices} devices>")


class PlacementEnv(_PlacementBase):
    """Place `graph` on `cluster`, one device per placement unit, in one step per episode.

    graph: a gdp.Graph or a graph file; cluster: a gdp.Cluster, preset or file; profile: None,
    a gdp.Profile or a profile file. reference_s: the reward's reference step time (default:
    the trainers' reference placement's). vocabulary: the op types of the features' op_type
    (default: this graph's). seed: the action space's seed (reset(seed=) reseeds it).

    action_space: MultiDiscrete([D] * U). observation_space: a Dict of Boxes, the same values
    every episode, each a fresh writable copy: x (N, K) op features (``columns``), op_type (N)
    (``vocabulary``), edge_index (2, E), topo (N), graph_stats (G) (``graph_columns``),
    unit_of (N), unit_x (U, K) the mean of x over each unit's ops, unit_size (U).
    """

    def __init__(self, graph, cluster, profile=None, reference_s=None, invalid_penalty=-10.0,
                 vocabulary=None, seed=None):
        super().__init__(graph, cluster, profile, reference_s, invalid_penalty, vocabulary,
                         seed)
        self.action_space = spaces.MultiDiscrete(np.full(self.num_units, self.num_devices),
                                                 seed=seed)
        self.observation_space = self.graph_observation_space

    def _obs(self):
        return self.graph_observation()

    def reset(self, *, seed=None, options=None):
        self._reset(seed, options)
        return self._obs(), self._info()

    def step(self, action):
        reward, info = self._simulate(self._check(action, 1))
        return self._obs(), reward, True, False, info


class SequentialPlacementEnv(_PlacementBase):
    """The placement one unit per step: step t puts unit t (units in topological order of their
    first op) on device `action`; the last step (t = U - 1) simulates the placement and pays
    the reward of PlacementEnv, the others pay 0.

    action_space: Discrete(D). observation_space: a Dict, every array fresh at every step:
    ``placement`` (U), the device of each unit placed so far, D for a unit not yet placed;
    ``unit``, the unit to place now (U once all are placed); ``current_x`` (K) its features
    (unit_x[unit]; zeros once all are placed); ``graph_stats`` (G). The graph's arrays
    (PlacementEnv's observation: op features, edges, unit_x) are the same at every step, so
    they are not in the observation (copying N x K features at each of U steps would cost
    O(U N K)): ``graph_observation()`` gives them, once. Arguments as PlacementEnv's.
    """

    def __init__(self, graph, cluster, profile=None, reference_s=None, invalid_penalty=-10.0,
                 vocabulary=None, seed=None):
        super().__init__(graph, cluster, profile, reference_s, invalid_penalty, vocabulary,
                         seed)
        U, D, K = self.num_units, self.num_devices, len(self.columns)
        self.action_space = spaces.Discrete(D, seed=seed)
        self.observation_space = spaces.Dict({
            "placement": spaces.MultiDiscrete(np.full(U, D + 1)),
            "unit": spaces.Discrete(U + 1),
            "current_x": spaces.Box(0, FEATURE_MAX, (K,), np.float32),
            "graph_stats": self.graph_observation_space["graph_stats"],
        })
        self._placed = None  # (U) int32 devices so far, D where not placed; None before reset
        self._next = 0  # the unit to place now

    def _obs(self):
        unit_x = self._graph_obs["unit_x"]
        return {
            "placement": self._placed.astype(np.int64),
            "unit": np.int64(self._next),
            "current_x": (unit_x[self._next].copy() if self._next < self.num_units
                          else np.zeros(unit_x.shape[1], np.float32)),
            "graph_stats": self._graph_obs["graph_stats"].copy(),
        }

    def reset(self, *, seed=None, options=None):
        self._reset(seed, options)
        self._placed = np.full(self.num_units, self.num_devices, dtype=np.int32)
        self._next = 0
        return self._obs(), self._info()

    def step(self, action):
        if self._placed is None:
            raise RuntimeError("SequentialPlacementEnv: call reset() before step()")
        if self._next >= self.num_units:
            raise RuntimeError("SequentialPlacementEnv: the episode is over (every unit is "
                               "placed): call reset()")
        a = np.asarray(action)
        if a.shape != () or a.dtype.kind not in "iu":
            raise ValueError(f"action: expected one integer device, got {action!r}")
        if not 0 <= int(a) < self.num_devices:
            raise ValueError(f"action: devices must be in [0, {self.num_devices}), got {int(a)}")
        self._placed[self._next] = int(a)
        self._next += 1
        if self._next < self.num_units:
            return self._obs(), 0.0, False, False, self._info()
        reward, info = self._simulate(self._placed.copy())
        return self._obs(), reward, True, False, info


for _id, _cls in (("gdp/Placement-v0", PlacementEnv),
                  ("gdp/SequentialPlacement-v0", SequentialPlacementEnv)):
    if _id not in gymnasium.registry:
        gymnasium.register(_id, entry_point=_cls)
