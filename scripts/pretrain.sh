#!/usr/bin/env bash
# Pre-trains the GDP policy that ships in models/gdp-pretrained, and packages it.
#
#   scripts/pretrain.sh                 train runs/pretrain (or resume it), then package it
#   scripts/pretrain.sh --package RUN   package an existing `gdp train --suite` run only
#
# Training: GDP-batch over datasets/suites/pretrain.json (no holdout.json or pipedream.json
# graph) in the transfer regime (the default of `gdp train --suite`; docs/ppo.md), seed 1,
# with the sample budget below (the shipped run's; at the commit in its pretrained.json the
# same seed, budget and iterations give the same checkpoint). GDP_PRETRAIN_ARGS adds flags;
# GDP_PRETRAIN_COMMIT names the commit of the binary that trained a packaged run (default HEAD).
# Packaging keeps config.json, the last checkpoint (parameters and Adam state), a state.json
# that names it, summary.json when the run finished, and pretrained.json: the suite, the
# command, the commit, samples, iterations and wall time. Takes about 25 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
GDP=${GDP:-./build/gdp}
SAMPLES=${GDP_PRETRAIN_SAMPLES:-65641}
ITERATIONS=${GDP_PRETRAIN_ITERATIONS:-100}  # the shipped run: 100 iterations, 65,641 samples
OUT=models/gdp-pretrained

if [ "${1:-}" = "--package" ]; then
  RUN=${2:?usage: scripts/pretrain.sh --package RUN_DIR}
  COMMAND=${GDP_PRETRAIN_COMMAND:-"(see $RUN/config.json)"}
else
  RUN=${1:-runs/pretrain}
  COMMAND="$GDP train --suite datasets/suites/pretrain.json --out $RUN --samples $SAMPLES --seed 1 --iterations $ITERATIONS ${GDP_PRETRAIN_ARGS:-}"
  if [ -f "$RUN/state.json" ]; then
    "$GDP" train --resume "$RUN" --quiet
  else
    # shellcheck disable=SC2086
    OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} $COMMAND --quiet
  fi
fi

/usr/bin/python3 - "$RUN" "$OUT" "$COMMAND" <<'PY'
import json, os, shutil, subprocess, sys, tempfile, time
run, out, command = sys.argv[1:4]
state = json.load(open(os.path.join(run, "state.json")))
cfg = json.load(open(os.path.join(run, "config.json")))
if cfg.get("method", "gdp") != "gdp" or not cfg.get("suite"):
    sys.exit("%s: expected a `gdp train --suite` run of method gdp" % run)
tmp = tempfile.mkdtemp(prefix=".gdp-pretrained.", dir=os.path.dirname(out) or ".")
os.chmod(tmp, 0o755)
shutil.copy(os.path.join(run, "config.json"), tmp)
shutil.copy(os.path.join(run, state["checkpoint"]), tmp)
# Enough state for loading the policy (load_policy reads "checkpoint"); not resumable.
json.dump({"format": "gdp-train-state", "version": 1, "iteration": state["iteration"],
           "checkpoint": state["checkpoint"], "note": "packaged by scripts/pretrain.sh: the "
           "policy only; resume the original run to train further"},
          open(os.path.join(tmp, "state.json"), "w"), indent=1)
if os.path.exists(os.path.join(run, "summary.json")):
    shutil.copy(os.path.join(run, "summary.json"), tmp)
samples = sum(g["samples"] for g in state["graphs"])
commit = os.environ.get("GDP_PRETRAIN_COMMIT", "")  # the binary's commit, when not HEAD
if not commit:
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except Exception:
        commit = "unknown"
info = {"format": "gdp-pretrained", "version": 1, "suite": cfg["suite"], "seed": cfg["seed"],
        "command": command, "reproduce": "gdp train --suite %s --out runs/pretrain --samples %d "
        "--seed %d%s" % (cfg["suite"], samples, cfg["seed"],
                         " --expert %d" % cfg["train"]["expert"]["anneal_samples"]
                         if cfg["train"].get("expert", {}).get("anneal_samples", 0) else ""),
        "commit": commit, "iterations": state["iteration"], "samples": samples,
        "wall_s": round(state["wall_s"], 1), "packaged": time.strftime("%Y-%m-%d")}
json.dump(info, open(os.path.join(tmp, "pretrained.json"), "w"), indent=1)
readme = os.path.join(out, "README.md")
if os.path.exists(readme):
    shutil.copy(readme, tmp)
if os.path.exists(out):
    shutil.rmtree(out)
os.rename(tmp, out)
size = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
print("%s: iteration %d, %d samples, %.1f MB" % (out, state["iteration"], samples, size / 1e6))
if size > 5e6:
    sys.exit("%s is over 5 MB" % out)
PY
