"""python/nocore: without the compiled module (the source tree's python/ on PYTHONPATH),
`import gdp` still works, imports neither numpy nor torch, and every binding raises an
ImportError that says how to build it, so that the pure-Python gdp.torch runs from the sources."""

import os
import subprocess
import sys

SOURCE_DIR = os.environ.get("GDP_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))

CHECK = r"""
import sys
import gdp
assert not gdp.have_core(), gdp.__file__
assert "numpy" not in sys.modules and "torch" not in sys.modules, "gdp imported numpy or torch"
for name in ("Simulator", "place", "load_graph"):
    try:
        getattr(gdp, name)
    except ImportError as e:
        assert "compiled module was not built: install pybind11-dev and rebuild" in str(e), e
    else:
        raise AssertionError("gdp.%s did not raise" % name)
try:
    import gdp.env
except ImportError as e:
    assert "compiled module was not built" in str(e), e
else:
    raise AssertionError("gdp.env imported")
try:
    import torch  # noqa: F401
except ImportError:
    pass
else:
    import gdp.torch  # noqa: F401  (the pure-Python importer needs no compiled module)
print("ok")
"""

env = dict(os.environ, PYTHONPATH=os.path.join(SOURCE_DIR, "python"))
p = subprocess.run([sys.executable, "-c", CHECK], env=env, capture_output=True, text=True)
print(p.stdout, p.stderr)
sys.exit(0 if p.returncode == 0 and p.stdout.strip() == "ok" else 1)
