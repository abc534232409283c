"""python/torch-measure: --measure times every op of a training step on this CPU and the graph
carries the times: every op has a finite, non-negative `measured` time for device kind `cpu`,
the CLI reports their sum, and on a one-device CPU cluster from `gdp calibrate` the simulated
step is that sum. Nothing here compares one time with another: how close the simulated step
comes to the eager PyTorch step depends on the machine's load and is a benchmark
(bench/torch_measure.py, docs/python.md "Measured times")."""

import json
import math
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_torch_support as support  # noqa: E402

support.require_torch()


class MeasureTest(unittest.TestCase):
    def test_every_op_carries_a_finite_measured_time(self):
        with tempfile.TemporaryDirectory() as tmp:
            graph = os.path.join(tmp, "r18.json")
            r = support.run_cli("torchvision:resnet18", "--batch", "2", "--image-size", "32",
                                "--measure", "--runs", "1", "-o", graph, "--json")
            self.assertEqual(r.returncode, 0, r.stderr)
            m = json.loads(r.stdout)["measured"]
            self.assertEqual(m["device_kind"], "cpu")
            self.assertEqual(m["clock"], "thread")  # one CPU thread: the thread's CPU time
            for key in ("ops_sum_s", "eager_step_s", "ops_sum_over_eager"):
                self.assertTrue(math.isfinite(m[key]) and m[key] > 0, (key, m[key]))
            with open(graph) as f:
                g = json.load(f)
            total = 0.0
            for op in g["ops"]:
                cpu = [e["time_s"] for e in op.get("measured", []) if e["device_kind"] == "cpu"]
                self.assertEqual(len(cpu), 1, op["name"])
                self.assertTrue(math.isfinite(cpu[0]) and cpu[0] >= 0, (op["name"], cpu[0]))
                total += cpu[0]
            self.assertAlmostEqual(total, m["ops_sum_s"], delta=1e-9 + 1e-9 * total)

            # The simulator uses the measured times: on one cpu device the step is their sum.
            profile, cluster = os.path.join(tmp, "cpu.json"), os.path.join(tmp, "cpu1.json")
            support.run_gdp("calibrate", "--backend", "cpu", "--size", "tiny", "--devices", "1",
                            "--out", profile, "--cluster-out", cluster)
            sim = support.simulate_json(graph, cluster, "single", profile)
            self.assertTrue(sim["valid"], sim.get("reason"))
            self.assertAlmostEqual(sim["step_time_s"], m["ops_sum_s"],
                                   delta=1e-6 + 1e-6 * m["ops_sum_s"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
