"""The flop rules against published figures: for each of the eight suite models, the
forward's convolutions and matrix products per image equal torchvision 0.14's "GFLOPS"
(a count of multiply-adds, so gdp's flops / 2) within 2%, and the training step is about
3 x the forward. Fake tensors at the models' own input sizes: about 20 s in all."""

import collections
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_torch_support as support  # noqa: E402

support.require_torch()
import torch  # noqa: E402
import torchvision  # noqa: E402

import gdp.torch as gt  # noqa: E402

# torchvision 0.14's model table, G multiply-adds per image (224x224; Inception-v3 299x299,
# without the auxiliary head, which the table's inference count leaves out).
PUBLISHED_GMACS = {"resnet18": 1.81, "resnet50": 4.09, "inception_v3": 5.71, "vgg16": 15.47,
                   "densenet121": 2.83, "mobilenet_v3_large": 0.22, "vit_b_16": 17.56,
                   "swin_t": 4.49}
PRODUCTS = ("aten.convolution", "aten.addmm", "aten.mm", "aten.bmm", "aten.baddbmm")
BATCH = 2  # batch norm in training needs more than one value per channel


class PublishedFlopsTest(unittest.TestCase):
    def test_forward_products_match_torchvision_and_step_is_3x(self):
        for name, gmacs in PUBLISHED_GMACS.items():
            with self.subTest(model=name):
                if name == "inception_v3":
                    torch.manual_seed(0)
                    model = torchvision.models.inception_v3(init_weights=False, aux_logits=False)
                    x = torch.randn(BATCH, 3, 299, 299)
                    target = torch.randint(0, 1000, (BATCH,))
                    g = gt.export(model, (x,), target=target)
                else:
                    c = gt.torchvision_case(name, BATCH, 224)
                    g = gt.export(c.model, c.example_inputs, c.loss, c.target)
                by_phase = collections.Counter()
                products = 0
                for op in g["ops"]:
                    by_phase[op["phase"]] += op["flops"]
                    if op["phase"] == "forward" and op["type"] in PRODUCTS:
                        products += op["flops"]
                ours = products / BATCH / 2 / 1e9
                step = sum(by_phase.values()) / by_phase["forward"]
                print(f"{name:20s} forward products {ours:7.3f} G multiply-adds per image "
                      f"(torchvision {gmacs}: {ours / gmacs:.3f}); step {step:.2f} x forward",
                      flush=True)
                self.assertLess(abs(ours / gmacs - 1), 0.02)
                self.assertGreater(step, 2.8)
                self.assertLess(step, 3.2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
