"""What the python/ tests of the bindings share: skipping (exit 77, which ctest reports as
skipped) when numpy or the compiled module is missing, running under the project's .venv
where a test needs Gymnasium, the gdp binary (GDP_BIN) run as a subprocess with its JSON
output parsed, and the smoke suite's gnmt_small.

Environment (set by tests/python/CMakeLists.txt): PYTHONPATH (the built package), GDP_BIN
(the gdp binary), GDP_SOURCE_DIR (the source tree), GDP_VENV_PYTHON (the interpreter of the
project's virtual environment, .venv/bin/python, made by scripts/install_deps.sh).
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

SKIP = 77


def skip(message):
    print(f"SKIPPED: {message}", flush=True)
    sys.exit(SKIP)


def require_gymnasium():
    """Imports gymnasium, else runs this test again under the project's .venv (Debian's python3
    with its packages plus Gymnasium from PyPI: scripts/install_deps.sh), else skips it."""
    try:
        import gymnasium

        return gymnasium
    except ImportError as e:
        error = e
    venv = os.environ.get("GDP_VENV_PYTHON") or os.path.join(
        os.environ.get("GDP_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", ".."),
        ".venv", "bin", "python")
    if os.path.isfile(venv) and not os.environ.get("GDP_TEST_IN_VENV"):
        os.environ["GDP_TEST_IN_VENV"] = "1"  # once: a venv without gymnasium skips below
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(venv, [venv, os.path.abspath(sys.argv[0]), *sys.argv[1:]])
    skip(f"gymnasium is not installed for {sys.executable} nor in {venv} ({error}); "
         "bash scripts/install_deps.sh makes .venv with it")


def require(module):
    """Imports `module` or skips the test."""
    try:
        return __import__(module)
    except ImportError as e:
        skip(f"{module} is not installed for {sys.executable} ({e})")


require("numpy")
import gdp  # noqa: E402

if not gdp.have_core():
    # The test is registered only where the module is built: its absence is a failure.
    print(f"FAILED: gdp._core did not import from {gdp.__file__}", file=sys.stderr)
    sys.exit(1)

SOURCE_DIR = os.environ.get("GDP_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
GDP_BIN = os.environ.get("GDP_BIN") or os.path.join(SOURCE_DIR, "build", "gdp")
SMOKE = os.path.join(SOURCE_DIR, "datasets", "suites", "smoke.json")
CLUSTER = "v100x2-nvlink"
# gnmt_small of datasets/suites/smoke.json, as `gdp gen` flags and as generate() options.
GNMT_SMALL = {"layers": 2, "batch": 8, "seq_len": 5, "hidden": 64, "vocab": 200}


def gdp_cli(*args, check=True):
    """Runs the gdp binary; returns (exit code, stdout, stderr)."""
    p = subprocess.run([GDP_BIN, *map(str, args)], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"gdp {' '.join(map(str, args))} exited {p.returncode}:\n{p.stderr}")
    return p.returncode, p.stdout, p.stderr


def gdp_json(*args):
    """Runs the gdp binary with --json and parses its output."""
    return json.loads(gdp_cli(*args, "--json")[1])


class TempDirCase(unittest.TestCase):
    """A test case with a fresh temporary directory and gnmt_small written there by `gdp gen`."""

    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory(prefix="gdp-python-test-")
        cls.tmp = cls._tmp.name
        cls.graph_path = os.path.join(cls.tmp, "gnmt_small.json")
        flags = []
        for k, v in GNMT_SMALL.items():
            flags += ["--" + k.replace("_", "-"), v]
        gdp_cli("gen", "gnmt", *flags, "-o", cls.graph_path)

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp, name)


def main():
    if not os.path.exists(GDP_BIN):
        print(f"FAILED: the gdp binary is missing: {GDP_BIN} (set GDP_BIN)", file=sys.stderr)
        sys.exit(1)
    unittest.main(verbosity=2)
