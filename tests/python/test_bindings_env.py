"""python/env: gdp.env's environments are gymnasium.Env subclasses whose spaces describe what
they return: the observation is the policy's features (gdp.features) with their unit means,
fresh at every call; info depends only on the arguments (and, after a step, the action). A
PlacementEnv step takes a device per placement unit and pays the trainers' reward
(-sqrt(step / reference), -10 when invalid); step_batch equals steps; SequentialPlacementEnv
places one unit per step and pays the same reward at its last step. Runs under the project's
.venv (Gymnasium), skipped without it."""

import json

import bindings_helpers as h  # first: skips (77) without numpy

gymnasium = h.require_gymnasium()
import numpy as np  # noqa: E402

import gdp  # noqa: E402
from gdp.env import PlacementEnv, SequentialPlacementEnv  # noqa: E402


class Env(h.TempDirCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.g = gdp.load_graph(cls.graph_path)
        cls.env = PlacementEnv(cls.g, h.CLUSTER, seed=3)

    def test_features(self):
        f = gdp.features(self.g, h.CLUSTER)
        N = self.g.num_ops
        self.assertEqual(f["x"].shape, (N, len(gdp.NODE_FEATURES)))
        self.assertEqual(f["x"].dtype, np.float32)
        self.assertEqual(f["columns"], gdp.NODE_FEATURES)
        self.assertEqual(len(f["graph_stats"]), len(gdp.GRAPH_FEATURES))
        self.assertTrue(np.all(np.isfinite(f["x"])))
        self.assertEqual(sorted(f["topo"]), list(range(N)))
        np.testing.assert_array_equal(f["topo"], self.g.topo_order)
        e = f["edge_index"]
        self.assertEqual(e.shape[0], 2)
        self.assertLessEqual(e.shape[1], self.g.num_edges)  # deduplicated
        pairs = set(zip(*self.g.edge_index.tolist()))
        self.assertEqual(set(zip(*e.tolist())), pairs)
        # op_type indexes the vocabulary (0 = unknown): this graph's types, all known.
        types = self.g.op_types
        self.assertTrue(np.all(f["op_type"] > 0))
        self.assertEqual([f["vocabulary"][i - 1] for i in f["op_type"]], types)
        # A given vocabulary: unknown types map to 0.
        g2 = gdp.features(self.g, h.CLUSTER, vocabulary=[types[0]])
        self.assertEqual(g2["vocabulary"], [types[0]])
        self.assertEqual(set(g2["op_type"].tolist()), {0, 1})
        col = gdp.NODE_FEATURES.index("phase_forward")
        phases = np.array(self.g.op_phases)
        np.testing.assert_array_equal(f["x"][:, col] == 1, phases == "forward")

    def test_units(self):
        u = gdp.units(self.g)
        coloc = self.g.op_colocation
        for i in range(self.g.num_ops):
            for j in (i + 1, i + 7):
                if j < self.g.num_ops and coloc[i] and coloc[i] == coloc[j]:
                    self.assertEqual(u["unit_of"][i], u["unit_of"][j])
        self.assertEqual(u["num_units"], len(u["first_op"]))
        np.testing.assert_array_equal(u["unit_of"][u["first_op"]], np.arange(u["num_units"]))
        self.assertLess(u["num_units"], self.g.num_ops)

    def test_spaces_describe_the_observation(self):
        env = self.env
        self.assertIsInstance(env, gymnasium.Env)
        self.assertIsInstance(env.action_space, gymnasium.spaces.MultiDiscrete)
        self.assertIsInstance(env.observation_space, gymnasium.spaces.Dict)
        obs, info = env.reset(seed=0)
        self.assertIn(obs, env.observation_space)
        self.assertEqual(set(obs), set(env.observation_space.spaces))
        self.assertEqual(set(obs), {"x", "op_type", "edge_index", "topo", "graph_stats",
                                    "unit_of", "unit_x", "unit_size"})
        for k, v in obs.items():
            self.assertIsInstance(v, np.ndarray, k)  # numbers only: names are attributes
        self.assertEqual(env.columns, gdp.NODE_FEATURES)
        self.assertEqual(env.graph_columns, gdp.GRAPH_FEATURES)
        self.assertEqual(obs["unit_x"].shape, (env.num_units, obs["x"].shape[1]))
        # unit_x is each unit's mean op feature.
        u = 5
        ops = np.flatnonzero(env.unit_of == u)
        np.testing.assert_allclose(obs["unit_x"][u], obs["x"][ops].mean(0), rtol=1e-6)
        self.assertEqual(obs["unit_size"][u], len(ops))
        self.assertEqual(info["reference_method"], "human")
        self.assertEqual(info["num_devices"], 2)
        a = env.action_space.sample()
        self.assertEqual(a.shape, (env.num_units,))
        self.assertIn(a, env.action_space)
        env.reset(seed=0)
        b = env.action_space.sample()
        env.reset(seed=0)
        np.testing.assert_array_equal(b, env.action_space.sample())  # reset(seed) seeds it

    def test_observations_are_fresh_and_info_depends_on_arguments_only(self):
        env = PlacementEnv(self.g, h.CLUSTER)
        obs1, info1 = env.reset(seed=1)
        first = {k: v.copy() for k, v in obs1.items()}
        obs1["x"][:] = -1  # the caller's edits stay the caller's
        obs1["unit_of"][0] = 7
        for _ in range(3):
            obs2, _, _, _, step_info = env.step(env.action_space.sample())
        self.assertNotIn("samples", step_info)
        self.assertNotIn("best_step_s", step_info)
        obs3, info3 = env.reset(seed=2)
        for k in first:
            np.testing.assert_array_equal(obs2[k], first[k])
            np.testing.assert_array_equal(obs3[k], first[k])
            self.assertFalse(np.shares_memory(obs2[k], obs3[k]), k)
        self.assertEqual(info1, info3)
        self.assertEqual(PlacementEnv(self.g, h.CLUSTER).reset(seed=9)[1], info1)
        self.assertEqual(env.samples, 3)  # bookkeeping lives in attributes

    def test_step_reward(self):
        env = PlacementEnv(self.g, h.CLUSTER)
        ref = gdp.reference(self.g, h.CLUSTER)
        self.assertEqual(env.reference_s, ref["step_s"])
        # The reference placement as a unit action gives reward -1 exactly.
        a = env.unit_action(ref["placement"])
        np.testing.assert_array_equal(env.placement(a), ref["placement"])
        env.reset(seed=0)
        obs, reward, terminated, truncated, info = env.step(a)
        self.assertEqual(reward, -1.0)
        self.assertIs(terminated, True)
        self.assertIs(truncated, False)
        self.assertTrue(info["valid"])
        self.assertEqual(info["step_time_s"], ref["step_s"])
        # Any other action: -sqrt(step / reference) with the simulator's step time.
        sim = gdp.Simulator(self.g, h.CLUSTER)
        rng = np.random.default_rng(1)
        for _ in range(3):
            a = rng.integers(0, 2, env.num_units, dtype=np.int32)
            t = sim.step_time(a[env.unit_of])
            env.reset()
            _, reward, _, _, info = env.step(a)
            self.assertEqual(info["step_time_s"], t)
            self.assertEqual(reward, -np.sqrt(t / env.reference_s))
            self.assertEqual(reward, gdp.reward(t, env.reference_s))
        self.assertEqual(env.samples, 4)
        self.assertEqual(env.best_step_s, min(ref["step_s"], env.best_step_s))
        # step_batch: the same rewards as one step at a time.
        A = rng.integers(0, 2, (16, env.num_units), dtype=np.int32)
        rewards, times = env.step_batch(A)
        self.assertEqual(rewards.shape, (16,))
        self.assertEqual(list(rewards), [env.step(x)[1] for x in A])
        self.assertEqual(list(times), list(sim.step_times(A[:, env.unit_of])))

    def test_sequential_places_one_unit_per_step(self):
        env = SequentialPlacementEnv(self.g, h.CLUSTER, seed=0)
        self.assertIsInstance(env.action_space, gymnasium.spaces.Discrete)
        with self.assertRaisesRegex(RuntimeError, "call reset"):
            env.step(0)
        ref = gdp.reference(self.g, h.CLUSTER)
        a = env.unit_action(ref["placement"])
        obs, info = env.reset(seed=0)
        self.assertIn(obs, env.observation_space)
        self.assertEqual(obs["unit"], 0)
        np.testing.assert_array_equal(obs["placement"], np.full(env.num_units, 2))
        graph = env.graph_observation()
        np.testing.assert_array_equal(obs["current_x"], graph["unit_x"][0])
        U = env.num_units
        for t in range(U):
            obs, reward, terminated, truncated, info = env.step(a[t])
            self.assertIn(obs, env.observation_space)
            self.assertEqual(obs["unit"], t + 1)
            self.assertEqual(obs["placement"][t], a[t])
            self.assertIs(terminated, t == U - 1)
            self.assertIs(truncated, False)
            if t < U - 1:
                self.assertEqual(reward, 0.0)
                self.assertEqual(obs["placement"][t + 1], 2)  # not placed yet
                if t == 3:
                    np.testing.assert_array_equal(obs["current_x"], graph["unit_x"][4])
        self.assertEqual(reward, -1.0)  # the reference placement
        self.assertEqual(info["step_time_s"], ref["step_s"])
        np.testing.assert_array_equal(obs["placement"], a)
        with self.assertRaisesRegex(RuntimeError, "episode is over"):
            env.step(0)
        # The same reward as PlacementEnv for any placement.
        one = PlacementEnv(self.g, h.CLUSTER)
        b = np.random.default_rng(2).integers(0, 2, U, dtype=np.int32)
        env.reset()
        for t in range(U):
            _, reward, _, _, _ = env.step(int(b[t]))
        self.assertEqual(reward, one.step(b)[1])

    def test_gymnasium_make(self):
        env = gymnasium.make("gdp/Placement-v0", graph=self.graph_path, cluster=h.CLUSTER)
        obs, _ = env.reset(seed=0)
        self.assertIn(obs, env.observation_space)
        self.assertTrue(env.step(env.action_space.sample())[2])
        env = gymnasium.make("gdp/SequentialPlacement-v0", graph=self.graph_path,
                             cluster=h.CLUSTER)
        env.reset(seed=0)
        self.assertEqual(env.step(1)[1], 0.0)

    def test_invalid_penalty(self):
        cluster = json.loads(h.gdp_cli("cluster", h.CLUSTER)[1])
        for d in cluster["devices"]:
            d["memory_bytes"] = 2 * 1024 * 1024
        path = self.path("tiny.json")
        with open(path, "w") as f:
            json.dump(cluster, f)
        env = PlacementEnv(self.g, path, reference_s=1e-3)
        _, reward, terminated, _, info = env.step(np.zeros(env.num_units, np.int32))
        self.assertEqual(reward, -10.0)
        self.assertFalse(info["valid"])
        self.assertEqual(info["status"], "out_of_memory")
        env = PlacementEnv(self.g, path, reference_s=1e-3, invalid_penalty=-4.0)
        self.assertEqual(env.step(np.zeros(env.num_units, np.int32))[1], -4.0)
        self.assertEqual(list(env.step_batch(np.zeros((2, env.num_units), np.int32))[0]),
                         [-4.0, -4.0])

    def test_bad_input(self):
        env = PlacementEnv(self.g, h.CLUSTER)
        U = env.num_units
        for bad, message in ((np.zeros(U + 1, np.int32), "expected shape"),
                             (np.full(U, 5, np.int32), r"devices must be in \[0, 2\)"),
                             (np.zeros(U), "expected integer devices")):
            with self.assertRaisesRegex(ValueError, message):
                env.step(bad)
        with self.assertRaisesRegex(ValueError, "takes no options"):
            env.reset(options={"nope": 1})
        with self.assertRaisesRegex(ValueError, "reference_s must be positive"):
            PlacementEnv(self.g, h.CLUSTER, reference_s=0)
        seq = SequentialPlacementEnv(self.g, h.CLUSTER)
        seq.reset()
        with self.assertRaisesRegex(ValueError, r"devices must be in \[0, 2\)"):
            seq.step(2)
        with self.assertRaisesRegex(ValueError, "one integer device"):
            seq.step(0.5)


if __name__ == "__main__":
    h.main()
