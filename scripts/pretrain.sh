#!/usr/bin/env bash
# Pre-trains the GDP policy that ships in models/gdp-pretrained, and packages it.
#
#   scripts/pretrain.sh                 train runs/pretrain (or resume it), then package it
#   scripts/pretrain.sh --package RUN   package an existing `gdp train --suite` run only
#
# Training, in five phases over datasets/suites/pretrain.json (no holdout.json, smoke.json or
# pipedream.json graph), seed 1, 2 threads (docs/ppo.md, "Regimes"):
#   1. RUN-op: the transfer regime (the default of `gdp train --suite`: plain PPO, one decision
#      per op, features 4), 100 iterations;
#   2. RUN-joint: 30 iterations more from RUN-op's policy (--init) with each graph trained under
#      both decisions, per op and per stage (config "decisions": ["op", "stage"]);
#   3. RUN-cut: 300 iterations more from RUN-joint's policy with a cut head of its own encoder
#      ("decisions": ["cut"], "cut_width": 32; docs/policy.md, "The cut head"): only the head
#      trains, so the op and stage readings are phase 2's;
#   4. RUN-mix: 300 iterations more from RUN-cut's policy with a mix head ("decisions":
#      ["mix"], the risk-seeking baseline "top"; docs/policy.md, "The mix head"): only the head
#      trains, the other readings are phase 3's;
#   5. RUN: 300 iterations more from RUN-mix's policy with the mix head's weight-gradient shift
#      row ("mix_wgrad") and the blend frozen ("freeze": ["mix.w", "mix.b"]): only the row
#      trains, every other parameter is phase 4's.
# At the commits in pretrained.json the same commands give the same checkpoint. GDP_PRETRAIN_ARGS
# adds flags to every phase; GDP_PRETRAIN_COMMIT names the commit of the binary that trained a
# packaged run (default HEAD). Packaging keeps config.json, the last checkpoint (parameters and
# Adam state), a state.json that names it, summary.json when the run finished, and
# pretrained.json: the suite, the commands, the commit, samples, iterations and wall time of
# every phase (a run that started from a packaged policy, --init models/gdp-pretrained, takes
# the phases that policy's pretrained.json lists). Takes about 44 minutes on 2 cores (22 + 14 + 4
# + 1 + 3).
set -euo pipefail
cd "$(dirname "$0")/.."
GDP=${GDP:-./build/gdp}
SAMPLES=${GDP_PRETRAIN_SAMPLES:-65641}
ITERATIONS=${GDP_PRETRAIN_ITERATIONS:-100}    # phase 1: 100 iterations, 65,641 samples
JOINT_ITERATIONS=${GDP_PRETRAIN_JOINT_ITERATIONS:-30}  # phase 2 (0: phase 1 only)
CUT_ITERATIONS=${GDP_PRETRAIN_CUT_ITERATIONS:-300}     # phase 3 (0: none)
MIX_ITERATIONS=${GDP_PRETRAIN_MIX_ITERATIONS:-300}     # phase 4 (0: none)
SHIFT_ITERATIONS=${GDP_PRETRAIN_SHIFT_ITERATIONS:-300} # phase 5 (0: none)
OUT=models/gdp-pretrained

# Runs one phase: DIR finished is kept, DIR with a checkpoint resumed, else COMMAND trains it.
phase() {
  local dir=$1 command=$2
  if [ -f "$dir/summary.json" ]; then
    return 0
  elif [ -f "$dir/state.json" ]; then
    "$GDP" train --resume "$dir" --quiet
  else
    # shellcheck disable=SC2086
    OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} $command --quiet
  fi
}

if [ "${1:-}" = "--package" ]; then
  RUN=${2:?usage: scripts/pretrain.sh --package RUN_DIR}
  COMMAND=${GDP_PRETRAIN_COMMAND:-"(see $RUN/config.json)"}
else
  RUN=${1:-runs/pretrain}
  # Each phase in its own directory, the last one in RUN; a phase of 0 iterations is skipped.
  MIX_RUN=$RUN-mix
  [ "$SHIFT_ITERATIONS" = 0 ] && MIX_RUN=$RUN
  CUT_RUN=$RUN-cut
  [ "$MIX_ITERATIONS" = 0 ] && CUT_RUN=$MIX_RUN
  JOINT_RUN=$RUN-joint
  [ "$CUT_ITERATIONS" = 0 ] && JOINT_RUN=$CUT_RUN
  OP_RUN=$RUN-op
  [ "$JOINT_ITERATIONS" = 0 ] && OP_RUN=$JOINT_RUN
  COMMAND="$GDP train --suite datasets/suites/pretrain.json --out $OP_RUN --samples $SAMPLES --seed 1 --iterations $ITERATIONS ${GDP_PRETRAIN_ARGS:-}"
  phase "$OP_RUN" "$COMMAND"
  # A phase from the previous one's policy (--init) under CONFIG_JSON, written to CONFIG_FILE.
  # --samples does not bind (30 joint iterations take about 39,000, 300 cut iterations about
  # 200,000); the values are the shipped run's.
  later_phase() {
    local dir=$1 init=$2 iterations=$3 samples=$4 config_file=$5 config_json=$6
    echo "$config_json" > "$config_file"
    local cmd="$GDP train --suite datasets/suites/pretrain.json --out $dir --samples $samples --seed 1 --iterations $iterations --config $config_file --init $init ${GDP_PRETRAIN_ARGS:-}"
    phase "$dir" "$cmd"
    COMMAND="$COMMAND; then $cmd, where $config_file holds $config_json"
  }
  if [ "$JOINT_ITERATIONS" != 0 ]; then
    later_phase "$JOINT_RUN" "$OP_RUN" "$JOINT_ITERATIONS" 200000 "$OP_RUN/joint.config.json" \
      '{"regime": "transfer", "policy": {"features": 4}, "decisions": ["op", "stage"]}'
  fi
  if [ "$CUT_ITERATIONS" != 0 ]; then
    later_phase "$CUT_RUN" "$JOINT_RUN" "$CUT_ITERATIONS" 4000000 "$JOINT_RUN/cut.config.json" \
      '{"regime": "transfer", "policy": {"features": 4, "cut_width": 32}, "decisions": ["cut"]}'
  fi
  if [ "$MIX_ITERATIONS" != 0 ]; then
    later_phase "$MIX_RUN" "$CUT_RUN" "$MIX_ITERATIONS" 4000000 "$CUT_RUN/mix.config.json" \
      '{"regime": "transfer", "decisions": ["mix"], "ppo": {"baseline": "top"}}'
  fi
  if [ "$SHIFT_ITERATIONS" != 0 ]; then
    later_phase "$RUN" "$MIX_RUN" "$SHIFT_ITERATIONS" 4000000 "$MIX_RUN/shift.config.json" \
      '{"regime": "transfer", "decisions": ["mix"], "ppo": {"baseline": "top"}, "policy": {"mix_wgrad": true}, "freeze": ["mix.w", "mix.b"]}'
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
# The phases: this run, and the run it started from (--init), when that one is a suite run too;
# a packaged policy (its pretrained.json) as the start contributes the phases it lists.
def phase_info(d, st, c):
    return {"run": d, "decisions": c["train"].get("decisions", []) or
            [c["train"]["policy"]["decision"]], "iterations": st["iteration"],
            "samples": sum(g["samples"] for g in st["graphs"]), "wall_s": round(st["wall_s"], 1)}
phases, c = [phase_info(run, state, cfg)], cfg
while c.get("init"):
    d = c["init"]
    if os.path.exists(os.path.join(d, "pretrained.json")):
        packaged = json.load(open(os.path.join(d, "pretrained.json")))
        for ph in packaged["phases"]:
            ph.setdefault("commit", packaged.get("commit", "unknown"))
        phases = packaged["phases"] + phases
        break
    if not os.path.exists(os.path.join(d, "state.json")):
        break
    c = json.load(open(os.path.join(d, "config.json")))
    phases.insert(0, phase_info(d, json.load(open(os.path.join(d, "state.json"))), c))
samples = sum(ph["samples"] for ph in phases)
commit = os.environ.get("GDP_PRETRAIN_COMMIT", "")  # the binary's commit, when not HEAD
if not commit:
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except Exception:
        commit = "unknown"
for ph in phases:
    ph.setdefault("commit", commit)
info = {"format": "gdp-pretrained", "version": 1, "suite": cfg["suite"], "seed": cfg["seed"],
        "command": command, "reproduce": "scripts/pretrain.sh (at the commit below)",
        "commit": commit, "iterations": sum(ph["iterations"] for ph in phases),
        "samples": samples, "wall_s": round(sum(ph["wall_s"] for ph in phases), 1),
        "phases": phases,
        "packaged": time.strftime("%Y-%m-%d")}
json.dump(info, open(os.path.join(tmp, "pretrained.json"), "w"), indent=1)
readme = os.path.join(out, "README.md")
if os.path.exists(readme):
    shutil.copy(readme, tmp)
if os.path.exists(out):
    shutil.rmtree(out)
os.rename(tmp, out)
size = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
print("%s: %d iterations, %d samples, %.1f MB" % (out, info["iterations"], samples, size / 1e6))
if size > 5e6:
    sys.exit("%s is over 5 MB" % out)
PY
