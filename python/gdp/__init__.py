"""gdp from Python: graphs, clusters, the simulator, every placer and the policy's features.

The compiled module ``gdp._core`` (pybind11, python/src/) holds the C++ library; this package
re-exports it. Without it (a source tree never built, or built without pybind11) ``import
gdp`` still works, so that the pure-Python parts (``gdp.torch``, the PyTorch importer) run
from ``PYTHONPATH=python``; any binding attribute then raises ImportError saying so.

    import gdp
    g = gdp.generate("gnmt", layers=2, batch=8, seq_len=5, hidden=64, vocab=200)
    sim = gdp.Simulator(g, "v100x2-nvlink")
    r = gdp.place(g, "v100x2-nvlink", "anneal", samples=500, seed=1)
    sim.step_time(r["placement"])

API: docs/python.md. This file imports neither numpy nor torch.
"""

import os as _os

__all__ = []  # filled from the compiled module below

_MISSING_MESSAGE = (
    "gdp's compiled module was not built: install pybind11-dev and rebuild "
    "(cmake --build build; then PYTHONPATH=build/python), or pip install ."
)

# A wheel carries the shipped pre-trained policy beside the module; a build tree finds it in
# the source tree. GDP_PRETRAINED (rl/gdp/pretrained.h) set by the user wins.
_packaged_policy = _os.path.join(_os.path.dirname(__file__), "models", "gdp-pretrained")
if not _os.environ.get("GDP_PRETRAINED") and _os.path.isfile(
    _os.path.join(_packaged_policy, "config.json")
):
    _os.environ["GDP_PRETRAINED"] = _packaged_policy

try:
    from . import _core
except ImportError as _e:  # not built: keep the package importable
    _core = None
    # A module that is there but does not load (another Python version, a missing library)
    # says why; a missing one needs no more words.
    _here = _os.path.dirname(__file__)
    _built = any(f.startswith("_core.") for f in _os.listdir(_here))
    _import_error = f" ({_e})" if _built else ""
else:
    _import_error = ""
    for _name in dir(_core):
        if not _name.startswith("_"):
            globals()[_name] = getattr(_core, _name)
            __all__.append(_name)
    del _name


def have_core():
    """True when the compiled module gdp._core is present."""
    return _core is not None


def _is_submodule(name):
    here = _os.path.dirname(__file__)
    return _os.path.isfile(_os.path.join(here, name + ".py")) or _os.path.isdir(
        _os.path.join(here, name)
    )


def __getattr__(name):
    # Reached only for names not defined above: with no compiled module, every binding.
    # Submodules (env, torch) stay AttributeErrors so that `from gdp import torch` imports it.
    if _core is None and not name.startswith("__") and not _is_submodule(name):
        raise ImportError(f"gdp.{name}: {_MISSING_MESSAGE}{_import_error}")
    raise AttributeError(f"module 'gdp' has no attribute '{name}'")
