"""--measure: every op of ResNet-18's training step timed on this CPU; with a one-device CPU
cluster from `gdp calibrate`, the simulated step (the measured op times on one device) is
within 25% of the eager PyTorch training step measured on the same machine."""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_torch_support as support  # noqa: E402

support.require_torch()

TOLERANCE = 0.25


class MeasureTest(unittest.TestCase):
    def test_simulated_step_matches_the_eager_step(self):
        with tempfile.TemporaryDirectory() as tmp:
            graph = os.path.join(tmp, "r18.json")
            r = support.run_cli("torchvision:resnet18", "--batch", "8", "--image-size", "64",
                                "--measure", "--runs", "5", "-o", graph, "--json")
            self.assertEqual(r.returncode, 0, r.stderr)
            m = json.loads(r.stdout)["measured"]
            self.assertEqual(m["device_kind"], "cpu")
            with open(graph) as f:
                g = json.load(f)
            self.assertTrue(all(any(e["device_kind"] == "cpu" for e in op["measured"])
                                for op in g["ops"]))
            profile, cluster = os.path.join(tmp, "cpu.json"), os.path.join(tmp, "cpu1.json")
            support.run_gdp("calibrate", "--backend", "cpu", "--size", "tiny", "--devices", "1",
                            "--out", profile, "--cluster-out", cluster)
            sim = support.simulate_json(graph, cluster, "single", profile)
            self.assertTrue(sim["valid"], sim.get("reason"))
            step, eager = sim["step_time_s"], m["eager_step_s"]
            error = step / eager - 1
            print(f"resnet18 batch 8 64x64 on this CPU (1 thread): simulated {step:.4f} s, "
                  f"eager PyTorch {eager:.4f} s, error {100 * error:+.1f}% "
                  f"(sum of op times {m['ops_sum_s']:.4f} s)")
            self.assertAlmostEqual(step, m["ops_sum_s"], delta=1e-6 + 1e-6 * step)
            self.assertLess(abs(error), TOLERANCE)


if __name__ == "__main__":
    unittest.main(verbosity=2)
