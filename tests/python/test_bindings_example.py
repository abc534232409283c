"""python/example: examples/torch_policy.py (a PyTorch policy trained by REINFORCE against
gdp.env.PlacementEnv on the smoke suite's gnmt_small) beats random search at an equal,
seeded sample count. Skipped (77) without PyTorch or Gymnasium."""

import json
import os
import subprocess
import sys
import unittest

import bindings_helpers as h

h.require_gymnasium()  # the example's gdp.env needs it
h.require("torch")

EXAMPLE = os.path.join(h.SOURCE_DIR, "examples", "torch_policy.py")


class Example(unittest.TestCase):
    def test_beats_random(self):
        p = subprocess.run([sys.executable, EXAMPLE, "--seed", "1", "--json", "--check"],
                           capture_output=True, text=True, timeout=600)
        print(p.stdout, p.stderr, sep="\n")
        self.assertEqual(p.returncode, 0, "the policy did not beat random (or the example failed)")
        out = json.loads(p.stdout)
        self.assertEqual(out["graph"], "gnmt_small")
        self.assertEqual(out["cluster"], "v100x2-nvlink")
        self.assertLess(out["policy_best_s"], out["random_best_s"])


if __name__ == "__main__":
    h.main()
