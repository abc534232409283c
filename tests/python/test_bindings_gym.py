"""python/gym: Gymnasium's own checker, gymnasium.utils.env_checker.check_env, passes with no
warning on both environments of gdp.env (PlacementEnv, SequentialPlacementEnv), built
directly and through gymnasium.make, on a generated graph (the smoke suite's gnmt_small) and
on a PyTorch-imported one (a tiny language model with tied embeddings, gdp.torch); Gymnasium's
observation wrappers apply. Runs under the project's .venv, skipped without Gymnasium."""

import os
import sys
import warnings

import bindings_helpers as h  # first: skips (77) without numpy

gymnasium = h.require_gymnasium()
from gymnasium.utils.env_checker import check_env  # noqa: E402

from gdp.env import PlacementEnv, SequentialPlacementEnv  # noqa: E402

IDS = {PlacementEnv: "gdp/Placement-v0", SequentialPlacementEnv: "gdp/SequentialPlacement-v0"}


def torch_graph(path):
    """Exports test_torch_support's tied-embedding language model to `path`; False without
    PyTorch."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import test_torch_support as support

    import gdp.torch as gt

    model, inputs, loss, target = support.tied_lm()
    gt.save(gt.export(model, inputs, loss, target, name="tiny_lm"), path)
    return True


class CheckEnv(h.TempDirCase):
    def check(self, graph):
        for cls, env_id in IDS.items():
            with self.subTest(env=cls.__name__, made="directly"):
                env = cls(graph, h.CLUSTER, seed=0)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    # Render modes are tested through a spec only: the made env below.
                    check_env(env, skip_render_check=True)
                self.assertEqual([str(w.message) for w in caught], [])
            with self.subTest(env=cls.__name__, made="gymnasium.make"):
                made = gymnasium.make(env_id, graph=graph, cluster=h.CLUSTER)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    check_env(made.unwrapped)
                self.assertEqual([str(w.message) for w in caught], [])
                made.close()

    def test_generated_graph(self):
        self.check(self.graph_path)

    def test_pytorch_imported_graph(self):
        path = self.path("tiny_lm.json")
        if not torch_graph(path):
            self.skipTest("PyTorch is not installed")
        self.check(path)

    def test_observation_wrappers(self):
        env = PlacementEnv(self.graph_path, h.CLUSTER)
        flat = gymnasium.wrappers.FlattenObservation(
            gymnasium.wrappers.FilterObservation(env, ["unit_x", "graph_stats"]))
        obs, _ = flat.reset(seed=0)
        self.assertEqual(obs.shape, (env.num_units * len(env.columns) + len(env.graph_columns),))
        self.assertIn(obs, flat.observation_space)


if __name__ == "__main__":
    h.main()
