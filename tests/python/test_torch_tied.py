"""python/torch-tied: models with shared weights import whole, on fake and real tensors alike.
A tiny language model whose output projection is its embedding (as in BERT and GPT-2) has one
Parameter op for the shared tensor, its parameter count is the sum over distinct tensors, its
optimizer ops appear once, its backward flops are the untied model's plus the (V x H)
gradient accumulation, and the traced gradient equals PyTorch's eager one (both uses summed);
the same for a weight applied twice inside one layer. The graphs place and simulate."""

import collections
import copy
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_torch_support as support  # noqa: E402

support.require_torch(torchvision=False)
import torch  # noqa: E402

import gdp.torch as gt  # noqa: E402

V, H = support.TIED_VOCAB, support.TIED_HIDDEN
MODES = ("fake", "real")
ADAM_OPS_PER_PARAMETER = 8  # tests/python/test_torch_export.py


def flops_by_phase(graph):
    f = collections.Counter()
    for op in graph["ops"]:
        f[op["phase"]] += op["flops"]
    return f


def parameter_count(graph):
    return sum(op.get("param_bytes", 0) for op in graph["ops"]) // 4


def distinct_numel(model):
    return sum({id(p): p.numel() for p in model.parameters()}.values())


def traced_grads(traced):
    """The gradient of every parameter as the traced step computes it: the graph module run on
    the real arguments; Adam's first step leaves exp_avg = (1 - beta1) * grad."""
    out = traced.graph_module(*[a.clone() for a in traced.args])
    names = [p.name for p in traced.placeholders if p.role == "param"]
    exp_avg = out[len(names) : 3 * len(names) : 2]
    beta1 = gt.trace.ADAM_DEFAULTS["beta1"]
    return {n: m / (1 - beta1) for n, m in zip(names, exp_avg)}


def eager_grads(model, inputs, loss, target):
    m = copy.deepcopy(model)
    out = m(*inputs)
    (loss(out, target) if loss else torch.nn.functional.cross_entropy(out, target)).backward()
    return {n: p.grad for n, p in m.named_parameters()}


class TiedEmbeddingTest(unittest.TestCase):
    def export(self, case, mode):
        model, inputs, loss, target = case
        return gt.export_full(model, inputs, loss, target, tracing_mode=mode,
                              name=f"{type(model).__name__.lower()}_{mode}")

    def test_tied_language_model(self):
        for mode in MODES:
            with self.subTest(tracing=mode):
                tied_case, untied_case = support.tied_lm(), support.untied_lm()
                tied, untied = self.export(tied_case, mode), self.export(untied_case, mode)
                g, u = tied.graph, untied.graph

                self.assertEqual(parameter_count(g), distinct_numel(tied_case[0]))
                self.assertEqual(parameter_count(g), H * H + H + V * H)
                self.assertEqual(parameter_count(u), parameter_count(g) + V * H)
                params = [op["name"] for op in g["ops"] if op["type"] == "Parameter"]
                self.assertEqual(sorted(params), ["body.bias", "body.weight", "embed.weight"])
                self.assertEqual(tied.traced.aliases, {"embed.weight": ["head.weight"]})
                self.assertEqual(untied.traced.aliases, {})

                updates = collections.Counter(op["colocation"] for op in g["ops"]
                                              if op["phase"] == "update")
                self.assertEqual(updates, {p: ADAM_OPS_PER_PARAMETER for p in params})

                fg, fu = flops_by_phase(g), flops_by_phase(u)
                print(f"tiny LM ({mode}): parameters untied {parameter_count(u)}, tied "
                      f"{parameter_count(g)}; backward flops untied {fu['backward']}, tied "
                      f"{fg['backward']} (+{fg['backward'] - fu['backward']}, V x H = {V * H})")
                self.assertEqual(fg["forward"], fu["forward"])
                self.assertEqual(fg["backward"], fu["backward"] + V * H)  # the accumulation

                # The shared weight's traced gradient is the sum over both uses (eager's).
                got, want = traced_grads(tied.traced), eager_grads(*tied_case)
                self.assertEqual(set(got), set(want))
                for n in want:
                    torch.testing.assert_close(got[n], want[n], rtol=1e-4, atol=1e-6)
                head_only = eager_grads(*untied_case)["head.weight"]
                self.assertGreater(float(head_only.abs().sum()), 0)

    def test_weight_used_twice_in_one_layer(self):
        for mode in MODES:
            with self.subTest(tracing=mode):
                shared_case, twin_case = support.twice_case(True), support.twice_case(False)
                s, t = self.export(shared_case, mode), self.export(twin_case, mode)
                self.assertEqual(parameter_count(s.graph), distinct_numel(shared_case[0]))
                self.assertEqual(parameter_count(t.graph), parameter_count(s.graph) + H * H)
                fs, ft = flops_by_phase(s.graph), flops_by_phase(t.graph)
                self.assertEqual(fs["forward"], ft["forward"])
                self.assertEqual(fs["backward"], ft["backward"] + H * H)
                self.assertEqual(s.traced.aliases, {})  # one name, two uses
                got, want = traced_grads(s.traced), eager_grads(*shared_case)
                for n in want:
                    torch.testing.assert_close(got[n], want[n], rtol=1e-4, atol=1e-6)


class TiedCliTest(unittest.TestCase):
    def test_places_and_simulates_in_both_modes(self):
        with tempfile.TemporaryDirectory() as tmp:
            for mode in MODES:
                graph = os.path.join(tmp, f"lm_{mode}.json")
                r = support.run_cli("test_torch_support:tied_lm", "--tracing", mode, "-o",
                                    graph, "--json")
                self.assertEqual(r.returncode, 0, r.stderr)
                summary = json.loads(r.stdout)
                self.assertEqual(summary["parameters"], H * H + H + V * H)
                self.assertEqual(summary["tied"], {"embed.weight": ["head.weight"]})
                r = support.run_cli("test_torch_support:tied_lm", "--tracing", mode, "-o",
                                    graph + ".txt")
                self.assertIn("shared: head.weight = embed.weight", r.stdout)
                placement = os.path.join(tmp, f"p_{mode}.json")
                support.run_gdp("place", "--method", "m-etf", "--graph", graph, "--cluster",
                                "v100x2-nvlink", "-o", placement)
                sim = support.simulate_json(graph, "v100x2-nvlink", placement)
                self.assertTrue(sim["valid"], sim.get("reason"))
                self.assertGreater(sim["step_time_s"], 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
