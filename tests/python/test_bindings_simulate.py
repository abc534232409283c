"""python/simulate: the bindings' simulator gives `gdp simulate`'s figures exactly (step time
to the bit, the whole --json object, the trace), for valid and out-of-memory placements, with
and without a profile; step_times (K at once, on every core) equals step_time one by one."""

import json
import os

import bindings_helpers as h  # first: skips (77) without numpy
import numpy as np

import gdp


class SimulateMatchesCli(h.TempDirCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.g = gdp.load_graph(cls.graph_path)
        cls.c = gdp.cluster(h.CLUSTER)
        cls.units = gdp.units(cls.g)
        # Placements: two methods through the CLI, and unit placements drawn here.
        cls.placements = {}
        for method, extra in (("human", []), ("random", ["--samples", 16])):
            out = os.path.join(cls.tmp, f"{method}.json")
            h.gdp_cli("place", "--method", method, "--graph", cls.graph_path, "--cluster",
                      h.CLUSTER, "--seed", 3, *extra, "-o", out)
            cls.placements[method] = out
        rng = np.random.default_rng(7)
        for k in range(3):
            p = rng.integers(0, 2, cls.units["num_units"])[cls.units["unit_of"]]
            out = os.path.join(cls.tmp, f"drawn{k}.json")
            gdp.write_placement(out, p, cls.g, cls.c)
            cls.placements[f"drawn{k}"] = out

    def simulate_cli(self, placement_path, *extra):
        code, out, _ = h.gdp_cli("simulate", "--graph", self.graph_path, "--cluster", *extra,
                                 "--placement", placement_path, "--json")
        return out

    def test_graph_round_trip(self):
        self.assertEqual(self.g.num_ops, h.gdp_json("info", self.graph_path)["ops"])
        gen = gdp.generate("gnmt", **h.GNMT_SMALL)
        self.assertEqual(gen.to_json(), self.g.to_json())
        info = h.gdp_json("info", self.graph_path, "--cluster", h.CLUSTER)
        self.assertEqual(gdp.info(self.g, h.CLUSTER), info)

    def test_step_time_equals_cli(self):
        sim = gdp.Simulator(self.g, self.c)
        for name, path in self.placements.items():
            with self.subTest(placement=name):
                text = self.simulate_cli(path, h.CLUSTER)
                cli = json.loads(text)
                p = gdp.read_placement(path, self.g, self.c)
                self.assertEqual(p.dtype, np.int32)
                r = sim.run(p)
                self.assertTrue(cli["valid"])
                self.assertEqual(sim.step_time(p), cli["step_time_s"])  # exactly
                self.assertEqual(r.step_time_s, cli["step_time_s"])
                self.assertEqual(r.to_dict(), cli)
                self.assertEqual(r.to_json().strip(), text.strip())
                self.assertEqual(list(r.peak_memory_bytes),
                                 [d["peak_memory_bytes"] for d in cli["devices"]])
                self.assertEqual(list(r.busy_s), [d["busy_s"] for d in cli["devices"]])
                self.assertEqual(r.critical_path_names, cli["critical_path"])
                # The same placement as a list and as int64 gives the same time.
                self.assertEqual(sim.step_time(p.tolist()), cli["step_time_s"])
                self.assertEqual(sim.step_time(p.astype(np.int64)), cli["step_time_s"])

    def test_step_times_batch(self):
        sim = gdp.Simulator(self.graph_path, h.CLUSTER)  # paths and presets work as well
        rng = np.random.default_rng(11)
        P = rng.integers(0, 2, (64, self.units["num_units"]))[:, self.units["unit_of"]]
        t = sim.step_times(P)
        self.assertEqual(t.shape, (64,))
        self.assertEqual(list(t), [sim.step_time(p) for p in P])
        self.assertEqual(sim.step_times(np.zeros((0, self.g.num_ops), np.int32)).shape, (0,))
        # Limits (the search's early stop): exact at or below the limit, above it otherwise.
        lim = t * np.where(np.arange(len(t)) % 2 == 0, 0.5, 2.0)
        tl = sim.step_times(P, lim)
        for k in range(len(t)):
            if t[k] <= lim[k]:
                self.assertEqual(tl[k], t[k])
            else:
                self.assertGreater(tl[k], lim[k])
                self.assertLessEqual(tl[k], t[k] * (1 + 1e-12))
            self.assertEqual(sim.step_time(P[k], lim[k]), tl[k])
        self.assertEqual(list(sim.step_times(P, np.full(len(t), np.inf))), list(t))
        with self.assertRaises(gdp.InputError):
            sim.step_times(P, [1.0])
        for n in (1, 2):
            gdp.set_num_threads(n)
            self.assertEqual(list(sim.step_times(P)), list(t))
        # Without the GIL: Python threads may call one simulator at once.
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(3) as pool:
            runs = list(pool.map(lambda k: sim.step_times(P) if k % 2 else
                                 np.array([sim.step_time(p) for p in P]), range(6)))
        for r in runs:
            self.assertEqual(list(r), list(t))

    def test_out_of_memory_equals_cli(self):
        cluster = json.loads(h.gdp_cli("cluster", h.CLUSTER)[1])
        for d in cluster["devices"]:
            d["memory_bytes"] = 2 * 1024 * 1024  # 2 MiB: gnmt_small does not fit
        path = self.path("tiny.json")
        with open(path, "w") as f:
            json.dump(cluster, f)
        text = self.simulate_cli(self.placements["human"], path)
        cli = json.loads(text)
        self.assertFalse(cli["valid"])
        self.assertEqual(cli["status"], "out_of_memory")
        sim = gdp.Simulator(self.g, path)
        p = gdp.read_placement(self.placements["human"], self.g, 2)
        r = sim.run(p)
        self.assertFalse(r.valid)
        self.assertEqual(r.status, "out_of_memory")
        self.assertEqual(r.reason, cli["reason"])
        self.assertEqual(r.to_dict(), cli)
        self.assertEqual(sim.step_time(p), float("inf"))  # as the trainers see it

    def test_profile_and_queue_equal_cli(self):
        profile = os.path.join(h.SOURCE_DIR, "sim", "profiles", "default.json")
        path = self.placements["drawn0"]
        p = gdp.read_placement(path, self.g, self.c)
        cli = json.loads(self.simulate_cli(path, h.CLUSTER, "--profile", profile, "--queue",
                                           "topo"))
        sim = gdp.Simulator(self.g, self.c, profile=gdp.load_profile(profile), queue="topo")
        self.assertEqual(sim.step_time(p), cli["step_time_s"])
        self.assertEqual(gdp.Simulator(self.g, self.c, profile, queue="topo").step_time(p),
                         cli["step_time_s"])

    def test_trace_equals_cli(self):
        path = self.placements["human"]
        trace = self.path("trace.json")
        h.gdp_cli("simulate", "--graph", self.graph_path, "--cluster", h.CLUSTER, "--placement",
                  path, "--trace", trace)
        sim = gdp.Simulator(self.g, self.c)
        with open(trace) as f:
            self.assertEqual(json.loads(sim.trace_json(gdp.read_placement(path, self.g, 2))),
                             json.load(f))

    def test_op_times_and_bound(self):
        sim = gdp.Simulator(self.g, self.c)
        T = sim.op_times()
        self.assertEqual(T.shape, (self.g.num_ops, 2))
        self.assertEqual(T[5, 1], sim.op_time(5, 1))
        p = gdp.read_placement(self.placements["human"], self.g, 2)
        r = sim.run(p, op_times=True)
        self.assertEqual(r.op_end_s.shape, (self.g.num_ops,))
        self.assertAlmostEqual(float(r.op_end_s.max()), r.step_time_s, places=12)
        self.assertGreaterEqual(r.step_time_s, sim.lower_bound()["lower_bound_s"])


if __name__ == "__main__":
    h.main()
