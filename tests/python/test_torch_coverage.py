"""Every op of the eight torchvision models of the suite has a cost rule: each exports with
unknown_ops="error" (no op is priced at zero unawares), loads in gdp and simulates. Small
batches and images keep it to well under a minute; the op types do not depend on the size."""

import collections
import os
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_torch_support as support  # noqa: E402

support.require_torch()
import gdp.torch as gt  # noqa: E402

# (model, image side): the smallest sides the models take (vit_b_16 is built for it).
MODELS = [("resnet18", 32), ("resnet50", 32), ("inception_v3", 75), ("vgg16", 32),
          ("densenet121", 32), ("mobilenet_v3_large", 32), ("vit_b_16", 32), ("swin_t", 32)]


class CoverageTest(unittest.TestCase):
    def test_every_op_of_the_eight_models_has_a_rule(self):
        types = collections.Counter()
        with tempfile.TemporaryDirectory() as tmp:
            for name, side in MODELS:
                with self.subTest(model=name):
                    t0 = time.perf_counter()
                    c = gt.torchvision_case(name, 2, side)
                    g = gt.export(c.model, c.example_inputs, c.loss, c.target, name=name)
                    path = os.path.join(tmp, f"{name}.json")
                    gt.save(g, path)
                    r = support.simulate_json(path, "v100x2-nvlink", "single")
                    self.assertTrue(r["valid"], r.get("reason"))
                    types.update(op["type"] for op in g["ops"])
                    phases = {op["phase"] for op in g["ops"]}
                    self.assertEqual(phases, {"forward", "backward", "update"})
                    print(f"{name:20s} {len(g['ops']):5d} ops {time.perf_counter() - t0:5.1f} s",
                          flush=True)
        print(f"{len(types)} op types: {', '.join(sorted(types))}")
        # Compute ops carry flops: no convolution, matmul or normalization at zero.
        for t in ("aten.convolution", "aten.convolution_backward", "aten.addmm", "aten.bmm",
                  "aten.native_layer_norm", "aten._softmax"):
            self.assertIn(t, types)


if __name__ == "__main__":
    unittest.main(verbosity=2)
