"""What the gdp.torch tests share (not a test itself): skipping with exit 77 (ctest: skipped)
when PyTorch or torchvision is missing, the gdp binary, and small models for the bad-input
cases, which the CLI tests load as `test_torch_support:FUNCTION`.

Environment (tests/python/torch.cmake): PYTHONPATH (the source tree's python/ and this
folder), GDP_BIN (the gdp binary), GDP_SOURCE_DIR (the source tree).
"""

import json
import os
import subprocess
import sys

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("GDP_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))


def skip(message):
    print(f"SKIPPED: {message}", flush=True)
    sys.exit(SKIP)


def require_torch(torchvision=True):
    """Imports torch (and torchvision) or skips the test, saying which is missing."""
    try:
        import torch  # noqa: F401
    except ImportError as e:
        skip(f"PyTorch is not installed for {sys.executable} (Debian: python3-torch): {e}")
    if torchvision:
        try:
            import torchvision  # noqa: F401
        except ImportError as e:
            skip(f"torchvision is not installed for {sys.executable} "
                 f"(Debian: python3-torchvision): {e}")
    try:
        import functorch  # noqa: F401  (PyTorch 1.13)
    except ImportError:
        try:
            import torch.func  # noqa: F401  (PyTorch >= 2.0)
        except ImportError as e:
            skip(f"this PyTorch has neither functorch nor torch.func: {e}")


def gdp_bin():
    b = os.environ.get("GDP_BIN") or os.path.join(SOURCE_DIR, "build", "gdp")
    if not os.path.isfile(b):
        print(f"FAILED: the gdp binary {b} does not exist (set GDP_BIN)", file=sys.stderr)
        sys.exit(1)
    return b


def run_gdp(*args, check=True):
    r = subprocess.run([gdp_bin(), *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"gdp {' '.join(args)} exited {r.returncode}: {r.stderr}")
    return r


def simulate_json(graph, cluster, placement="single", profile=None):
    args = ["simulate", "--graph", graph, "--cluster", cluster, "--placement", placement, "--json"]
    if profile:
        args += ["--profile", profile]
    return json.loads(run_gdp(*args).stdout)


def run_cli(*args, cwd=None):
    """python3 -m gdp.torch ARGS with this folder importable (for module:function specs)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [p for p in (env.get("PYTHONPATH", ""), os.path.join(SOURCE_DIR, "python"), HERE) if p])
    return subprocess.run([sys.executable, "-m", "gdp.torch", *args], capture_output=True,
                          text=True, env=env, cwd=cwd)


# Models for the bad-input cases ------------------------------------------------------------


def _atan_model():
    import torch

    class Atan(torch.nn.Module):  # torch.atan has no cost rule in gdp.torch
        def forward(self, x):
            return torch.atan(x)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Linear(8, 8)
            self.head = torch.nn.Sequential(torch.nn.Linear(8, 4), Atan())

        def forward(self, x):
            return self.head(self.body(x))

    return Net()


def unknown_op():
    """A model with an op without a cost rule (aten.atan in module head.1)."""
    import torch

    torch.manual_seed(0)
    return _atan_model(), (torch.randn(4, 8),)


def untraceable():
    """A model whose control flow depends on tensor values: it cannot be traced on fake
    tensors (make_fx needs a value to branch on)."""
    import torch

    class Branchy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)

        def forward(self, x):
            y = self.fc(x)
            if y.sum() > 0:
                return y.relu()
            return y.tanh()

    torch.manual_seed(0)
    return Branchy(), (torch.randn(4, 8),)


def tiny_mlp():
    """A two-layer MLP with a user loss and target."""
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    x = torch.randn(8, 16)
    y = torch.randint(0, 4, (8,), generator=torch.Generator().manual_seed(0))
    return model, (x,), torch.nn.functional.cross_entropy, y


def not_a_model():
    return "model", ()


# Models with shared weights (tests/python/test_torch_tied.py) ----------------------------

TIED_VOCAB, TIED_HIDDEN, TIED_BATCH, TIED_SEQ = 50, 16, 4, 6


def _lm_class():
    import torch

    class TinyLM(torch.nn.Module):
        """A language model in miniature: token embedding (V, H), one tanh layer, and an
        output projection onto the vocabulary whose weight is the embedding's when `tied`
        (as BERT's and GPT-2's heads are)."""

        def __init__(self, vocab=TIED_VOCAB, hidden=TIED_HIDDEN, tied=True):
            super().__init__()
            self.embed = torch.nn.Embedding(vocab, hidden)
            self.body = torch.nn.Linear(hidden, hidden)
            self.head = torch.nn.Linear(hidden, vocab, bias=False)
            if tied:
                self.head.weight = self.embed.weight

        def forward(self, tokens):  # (B, T) -> (B, T, V) logits
            return self.head(torch.tanh(self.body(self.embed(tokens))))

    return TinyLM


def lm_loss(logits, target):
    """Cross-entropy over every position: logits (B, T, V), target (B, T)."""
    import torch

    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                             target.reshape(-1))


def _lm_case(tied):
    import torch

    torch.manual_seed(0)
    model = _lm_class()(tied=tied)
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, TIED_VOCAB, (TIED_BATCH, TIED_SEQ), generator=g)
    target = torch.randint(0, TIED_VOCAB, (TIED_BATCH, TIED_SEQ), generator=g)
    return model, (tokens,), lm_loss, target


def tied_lm():
    """TinyLM with its output projection tied to its embedding."""
    return _lm_case(True)


def untied_lm():
    """The same TinyLM with a separate output projection."""
    return _lm_case(False)


def _twice_class():
    import torch

    class Twice(torch.nn.Module):
        """One layer that applies its weight twice, x W W (shared), or x W1 W2 (not)."""

        def __init__(self, hidden=TIED_HIDDEN, shared=True):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(hidden, hidden) / hidden**0.5)
            self.weight2 = None if shared else torch.nn.Parameter(self.weight.detach().clone())

        def forward(self, x):  # (B, H) -> (B, H)
            w2 = self.weight if self.weight2 is None else self.weight2
            return torch.tanh(x @ self.weight) @ w2

    class Net(torch.nn.Module):
        def __init__(self, shared):
            super().__init__()
            self.layer = Twice(shared=shared)
            self.out = torch.nn.Linear(TIED_HIDDEN, 4)

        def forward(self, x):
            return self.out(self.layer(x))

    return Net


def twice_case(shared):
    """A net whose layer uses one weight twice (shared) or two weights of that shape."""
    import torch

    torch.manual_seed(0)
    model = _twice_class()(shared)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(TIED_BATCH, TIED_HIDDEN, generator=g)
    y = torch.randint(0, 4, (TIED_BATCH,), generator=g)
    return model, (x,), None, y


def plain_tensor_attribute():
    """A model whose layer `blocks.1` multiplies by a tensor attribute that is neither a
    parameter nor a buffer: it cannot be traced on fake tensors."""
    import torch

    class Scale(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.randn(8, 8)  # not registered: stays a real tensor

        def forward(self, x):
            return x @ self.w

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)
            self.blocks = torch.nn.Sequential(torch.nn.ReLU(), Scale())

        def forward(self, x):
            return self.blocks(self.fc(x))

    torch.manual_seed(0)
    return Net(), (torch.randn(4, 8),)
