"""python/env: gdp.env.PlacementEnv follows the Gymnasium API (reset -> (obs, info); step ->
(obs, reward, terminated, truncated, info)), its observation is the policy's features
(gdp.features) with their unit means, a step takes a device per placement unit and pays the
trainers' reward (-sqrt(step / reference), -10 when invalid); step_batch equals steps."""

import json

import bindings_helpers as h  # first: skips (77) without numpy
import numpy as np

import gdp
from gdp.env import PlacementEnv


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

    def test_reset_and_spaces(self):
        env = self.env
        obs, info = env.reset(seed=0)
        self.assertEqual(obs["unit_x"].shape, (env.num_units, obs["x"].shape[1]))
        # unit_x is each unit's mean op feature.
        u = 5
        ops = np.flatnonzero(env.unit_of == u)
        np.testing.assert_allclose(obs["unit_x"][u], obs["x"][ops].mean(0), rtol=1e-6)
        self.assertEqual(info["reference_method"], "human")
        self.assertEqual(info["num_devices"], 2)
        a = env.action_space.sample()
        self.assertEqual(a.shape, (env.num_units,))
        self.assertTrue(env.action_space.contains(a))
        self.assertEqual(env.action_space.sample(4).shape, (4, env.num_units))
        env.reset(seed=0)
        b = env.action_space.sample()
        env.reset(seed=0)
        np.testing.assert_array_equal(b, env.action_space.sample())  # seeded

    def test_step_reward(self):
        env = PlacementEnv(self.g, h.CLUSTER)
        ref = gdp.reference(self.g, h.CLUSTER)
        self.assertEqual(env.reference_s, ref["step_s"])
        # The reference placement as a unit action gives reward -1 exactly.
        a = env.unit_action(ref["placement"])
        np.testing.assert_array_equal(env.placement(a), ref["placement"])
        obs, reward, terminated, truncated, info = env.step(a)
        self.assertEqual(reward, -1.0)
        self.assertTrue(terminated)
        self.assertFalse(truncated)
        self.assertTrue(info["valid"])
        # Any other action: -sqrt(step / reference) with the simulator's step time.
        sim = gdp.Simulator(self.g, h.CLUSTER)
        rng = np.random.default_rng(1)
        for _ in range(3):
            a = rng.integers(0, 2, env.num_units, dtype=np.int32)
            t = sim.step_time(a[env.unit_of])
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


if __name__ == "__main__":
    h.main()
