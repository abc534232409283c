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
