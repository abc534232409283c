"""python/errors: bad arguments raise Python exceptions (gdp.InputError / gdp.UsageError, both
gdp.Error and ValueError) carrying the C++ message, the one the gdp binary prints, and never
crash the interpreter: wrong-length and out-of-range placements, non-integer arrays, an
unknown method, bad options, missing files, unknown generators and presets."""

import json

import bindings_helpers as h  # first: skips (77) without numpy
import numpy as np

import gdp


def cli_message(*args):
    """The message of a failing gdp command (stderr after 'gdp CMD: [error: ]')."""
    code, _, err = h.gdp_cli(*args, check=False)
    assert code in (1, 2), f"gdp {args} exited {code}"
    line = err.strip().splitlines()[-1]
    line = line.split(": ", 1)[1]
    return line[len("error: "):] if line.startswith("error: ") else line


class Errors(h.TempDirCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.g = gdp.load_graph(cls.graph_path)
        cls.sim = gdp.Simulator(cls.g, h.CLUSTER)
        cls.N = cls.g.num_ops

    def assertRaisesMessage(self, exc, message, fn, *args, **kwargs):
        with self.assertRaises(exc) as cm:
            fn(*args, **kwargs)
        self.assertIsInstance(cm.exception, gdp.Error)
        self.assertIsInstance(cm.exception, ValueError)
        self.assertIn(message, str(cm.exception))
        return str(cm.exception)

    def test_exception_classes(self):
        self.assertTrue(issubclass(gdp.InputError, gdp.Error))
        self.assertTrue(issubclass(gdp.UsageError, gdp.Error))
        self.assertTrue(issubclass(gdp.Error, ValueError))
        self.assertIs(gdp.GraphError, gdp.InputError)

    def test_wrong_length_placement(self):
        msg = f"placement has {self.N - 1} entries but graph '{self.g.name}' has {self.N} ops"
        for fn in (self.sim.step_time, self.sim.run, self.sim.trace_json):
            self.assertRaisesMessage(gdp.InputError, msg, fn, np.zeros(self.N - 1, np.int32))
        self.assertRaisesMessage(gdp.InputError, "placements: not an array", self.sim.step_times,
                                 [[0] * self.N, [0] * (self.N - 1)])  # ragged
        bad = np.zeros((2, self.N - 1), np.int32)
        self.assertRaisesMessage(gdp.InputError, "placements[0]: " + msg, self.sim.step_times,
                                 bad)
        self.assertRaisesMessage(gdp.InputError, "has 0 entries", self.sim.step_time, [])

    def test_device_out_of_range(self):
        p = np.zeros(self.N, np.int32)
        p[3] = 2
        name = self.g.op_names[3]
        self.assertRaisesMessage(
            gdp.InputError,
            f"op '{name}' is placed on device 2 but cluster 'v100x2-nvlink' has 2 devices (0..1)",
            self.sim.step_time, p)
        p[3] = -1
        self.assertRaisesMessage(gdp.InputError, "is placed on device -1", self.sim.step_time, p)
        p = p.astype(np.int64)
        p[3] = 2**40  # beyond int32
        self.assertRaisesMessage(gdp.InputError, "is placed on device -1", self.sim.step_time, p)

    def test_not_integers(self):
        self.assertRaisesMessage(gdp.InputError, "expected integer device indices",
                                 self.sim.step_time, np.zeros(self.N))
        self.assertRaisesMessage(gdp.InputError, "expected a 1-D array", self.sim.step_time,
                                 np.zeros((1, self.N), np.int32))
        self.assertRaisesMessage(gdp.InputError, "expected a 2-D array", self.sim.step_times,
                                 np.zeros(self.N, np.int32))
        self.assertRaisesMessage(gdp.InputError, "expected integer", self.sim.step_time,
                                 ["a"] * self.N)

    def test_split_colocation_is_a_result(self):
        # Not an argument error: an invalid placement, like out of memory.
        u = gdp.units(self.g)
        groups = [i for i, c in enumerate(self.g.op_colocation) if c]
        self.assertTrue(groups)
        first = groups[0]
        mate = next(i for i in groups[1:] if self.g.op_colocation[i] == self.g.op_colocation[first])
        p = np.zeros(self.N, np.int32)
        p[mate] = 1
        r = self.sim.run(p)
        self.assertEqual(r.status, "split_colocation")
        self.assertIn("is split", r.reason)
        self.assertEqual(self.sim.step_time(p), float("inf"))
        self.assertEqual(u["unit_of"][first], u["unit_of"][mate])

    def test_unknown_method(self):
        want = cli_message("place", "--method", "nope", "--graph", self.graph_path, "--cluster",
                           h.CLUSTER)
        self.assertIn("unknown method 'nope' (known", want)
        got = self.assertRaisesMessage(gdp.UsageError, "unknown method 'nope'", gdp.place,
                                       self.g, h.CLUSTER, "nope")
        self.assertEqual(got, want)
        self.assertRaisesMessage(gdp.UsageError, "unknown method", gdp.method_info, "nope")

    def test_bad_options(self):
        for options in ({"samplez": 3}, {"samples": "many"}, {"samples": -1}):
            with self.subTest(options=options):
                want = cli_message("place", "--method", "random", "--graph", self.graph_path,
                                   "--cluster", h.CLUSTER, "--options", json.dumps(options))
                got = self.assertRaisesMessage(gdp.InputError, "method 'random': options.",
                                               gdp.place, self.g, h.CLUSTER, "random",
                                               options=options)
                # The same message after the source ("--options" on the command line).
                self.assertEqual(got.split(": ", 1)[1], want.split(": ", 1)[1])
        self.assertRaisesMessage(gdp.InputError, "options: expected a dict", gdp.place, self.g,
                                 h.CLUSTER, "random", options=[1, 2])
        self.assertRaisesMessage(gdp.InputError, "samples: expected a positive integer",
                                 gdp.place, self.g, h.CLUSTER, "random", samples=0)
        self.assertRaisesMessage(gdp.InputError, "samples: expected a positive integer",
                                 gdp.place, self.g, h.CLUSTER, "random", samples="many")
        self.assertRaisesMessage(gdp.InputError, "seconds: expected a positive number",
                                 gdp.place, self.g, h.CLUSTER, "random", seconds=-1.0)
        self.assertRaisesMessage(gdp.InputError, "budget: unknown key 'sample'", gdp.place,
                                 self.g, h.CLUSTER, "random", budget={"sample": 3})
        self.assertRaisesMessage(gdp.InputError, "not both", gdp.place, self.g, h.CLUSTER,
                                 "random", budget=3, samples=3)
        self.assertRaisesMessage(gdp.InputError, "seed: expected a non-negative", gdp.place,
                                 self.g, h.CLUSTER, "random", seed=-1)
        with self.assertRaises(TypeError):  # not JSON: Python's own error
            gdp.place(self.g, h.CLUSTER, "random", options={"samples": object()})

    def test_missing_files(self):
        missing = self.path("no-such-graph.json")
        want = cli_message("info", missing)
        got = self.assertRaisesMessage(gdp.InputError, "no-such-graph.json", gdp.load_graph,
                                       missing)
        self.assertEqual(got, want)
        self.assertRaisesMessage(gdp.InputError, "no-such-graph.json", gdp.Simulator, missing,
                                 h.CLUSTER)
        self.assertRaisesMessage(gdp.InputError, "cannot open cluster file", gdp.cluster,
                                 self.path("nope.json"))
        self.assertRaisesMessage(gdp.InputError, "nope.json", gdp.load_profile,
                                 self.path("nope.json"))
        self.assertRaisesMessage(gdp.InputError, "nope.json", gdp.read_placement,
                                 self.path("nope.json"), self.g, 2)
        self.assertRaisesMessage(gdp.InputError, "expected a gdp.Graph or the path", gdp.Simulator,
                                 42, h.CLUSTER)

    def test_bad_json(self):
        self.assertRaisesMessage(gdp.InputError, "<string>", gdp.parse_graph, "{")
        self.assertRaisesMessage(gdp.InputError, "mine", gdp.parse_cluster, "[]", "mine")

    def test_generators_and_presets(self):
        want = cli_message("gen", "nope", "-o", self.path("x.json"))
        got = self.assertRaisesMessage(gdp.InputError, "nope", gdp.generate, "nope")
        self.assertEqual(got, want)
        self.assertRaisesMessage(gdp.InputError, "layerz", gdp.generate, "gnmt", layerz=2)
        self.assertRaisesMessage(gdp.InputError, "expected an integer", gdp.generate, "gnmt",
                                 layers=1.5)
        self.assertRaisesMessage(gdp.InputError, "expected an integer", gdp.generate, "gnmt",
                                 layers=True)
        want = cli_message("info", self.graph_path, "--cluster", "v100x3-moon")
        got = self.assertRaisesMessage(gdp.InputError, "v100x3-moon", gdp.cluster, "v100x3-moon")
        self.assertEqual(got, want)
        self.assertRaisesMessage(gdp.InputError, "queue: expected fifo or topo", gdp.Simulator,
                                 self.g, h.CLUSTER, queue="lifo")

    def test_reward(self):  # the environments' bad input: python/env
        with self.assertRaisesRegex(ValueError, "reference step time must be positive"):
            gdp.reward(1.0, 0.0)

    def test_still_alive(self):
        # After all of the above in one process the simulator still works.
        self.assertTrue(np.isfinite(self.sim.step_time(np.zeros(self.N, np.int32))))


if __name__ == "__main__":
    h.main()
