"""python/place: every placer of the registry through the bindings gives `gdp place`'s
placement for the same seed and budget (and the same step time, samples, resolved options);
gdp.methods() lists the CLI's methods; the trainers' reference and reward match rl/."""

import json
import math
import re

import bindings_helpers as h  # first: skips (77) without numpy
import numpy as np

import gdp

# method -> (options, samples budget): small budgets so that the test stays short.
CASES = {
    "single": (None, None),
    "round-robin": (None, None),
    "human": (None, None),
    "random": (None, 48),
    "metis": (None, None),
    "m-topo": (None, None),
    "m-etf": (None, None),
    "m-sct": (None, None),
    "anneal": ({"p_scope": 0.2}, 200),
    "stage-cut": (None, None),
    "gdp": ({"samples": 4}, None),
    "gdp-anneal": (None, 64),
    "hdp": (None, 32),
    "placeto": (None, 32),
}
SEED = 5


class PlaceMatchesCli(h.TempDirCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.g = gdp.load_graph(cls.graph_path)

    def test_methods_listed(self):
        _, text, _ = h.gdp_cli("place", "--list")
        names = [line.split()[0] for line in text.splitlines()
                 if line and not line[0].isspace() and not line.startswith("(")]
        self.assertEqual(gdp.methods(), names)
        self.assertEqual(gdp.describe_methods(), text[: len(gdp.describe_methods())])
        info = gdp.method_info("random")
        self.assertTrue(info["search"])
        self.assertIn("samples", [o["name"] for o in info["options"]])

    def test_placements_equal_cli(self):
        missing = set(gdp.methods()) - set(CASES) - {"exhaustive"}  # exhaustive: tiny graphs
        self.assertFalse(missing, f"methods without a case here: {missing}")
        for method, (options, samples) in CASES.items():
            with self.subTest(method=method):
                out = self.path(f"{method}.json")
                args = ["place", "--method", method, "--graph", self.graph_path, "--cluster",
                        h.CLUSTER, "--seed", SEED, "-o", out]
                if options is not None:
                    args += ["--options", json.dumps(options)]
                if samples is not None:
                    args += ["--samples", samples]
                cli = h.gdp_json(*args)
                py = gdp.place(self.g, h.CLUSTER, method, options=options, samples=samples,
                               seed=SEED)
                want = gdp.read_placement(out, self.g, 2)
                np.testing.assert_array_equal(py["placement"], want)
                self.assertEqual(py["valid"], cli["valid"])
                if cli["valid"]:
                    self.assertEqual(py["step_time_s"], cli["step_time_s"])
                else:
                    self.assertTrue(math.isinf(py["step_time_s"]))
                self.assertEqual(py["samples"], cli["samples"])
                self.assertEqual(py["options"], cli["options"])
                # Notes may carry wall times (m-sct's LP): compare them without.
                self.assertEqual(re.sub(r"[0-9.]+ s\b", "_ s", py["note"]),
                                 re.sub(r"[0-9.]+ s\b", "_ s", cli["note"]))
                self.assertEqual(list(py["peak_memory_bytes"]), cli["peak_memory_bytes"])

    def test_options_as_text_and_file(self):
        a = gdp.place(self.g, h.CLUSTER, "random", options={"samples": 8}, seed=2)
        b = gdp.place(self.g, h.CLUSTER, "random", options='{"samples": 8}', seed=2)
        path = self.path("opts.json")
        with open(path, "w") as f:
            f.write('{"samples": 8}')
        c = gdp.place(self.g, h.CLUSTER, "random", options=path, seed=2)
        np.testing.assert_array_equal(a["placement"], b["placement"])
        np.testing.assert_array_equal(a["placement"], c["placement"])
        # The budget as samples=, budget=N and budget={"samples": N}.
        d = gdp.place(self.g, h.CLUSTER, "random", samples=8, seed=2)
        e = gdp.place(self.g, h.CLUSTER, "random", budget={"samples": 8}, seed=2)
        f = gdp.place(self.g, h.CLUSTER, "random", budget=8, seed=2)
        self.assertEqual(d["samples"], 8)
        np.testing.assert_array_equal(d["placement"], e["placement"])
        np.testing.assert_array_equal(d["placement"], f["placement"])
        self.assertEqual(a["samples"], 8)
        self.assertTrue(a["curve"])

    def test_reference_and_reward(self):
        ref = gdp.reference(self.g, h.CLUSTER)
        self.assertEqual(ref["method"], "human")
        human = gdp.place(self.g, h.CLUSTER, "human")
        np.testing.assert_array_equal(ref["placement"], human["placement"])
        self.assertEqual(ref["step_s"], human["step_time_s"])
        self.assertEqual(gdp.reward(ref["step_s"], ref["step_s"]), -1.0)
        self.assertEqual(gdp.reward(4.0, 1.0), -2.0)
        self.assertEqual(gdp.reward(float("inf"), 1.0), -10.0)
        self.assertEqual(gdp.reward(float("inf"), 1.0, invalid_penalty=-3.0), -3.0)
        np.testing.assert_array_equal(gdp.rewards(np.array([1.0, 9.0, np.inf]), 1.0),
                                      [-1.0, -3.0, -10.0])


if __name__ == "__main__":
    h.main()
