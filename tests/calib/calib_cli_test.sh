#!/usr/bin/env bash
# End-to-end checks of `gdp calibrate`: usage errors (exit 2), bad input and the CUDA backend
# without a GPU (exit 1, a message naming the problem), the CPU backend at the tiny size writing
# a profile and a cluster that `gdp simulate` reads, and --from-profile on PipeDream profiles.
# usage: calib_cli_test.sh GDP_BINARY CASE
set -u
gdp=$1
case_name=$2
source "$(dirname "$0")/../cli/expect.sh"

cat > "$tmp/g.json" <<'G'
{"format": "gdp-graph", "version": 1, "name": "tiny", "ops": [
 {"id": 0, "name": "a", "type": "MatMul", "phase": "forward", "outputs": [{"shape": [256, 256], "dtype": "f32", "bytes": 262144}], "flops": 33554432, "bytes_accessed": 786432},
 {"id": 1, "name": "b", "type": "Relu", "phase": "forward", "outputs": [{"shape": [256, 256], "dtype": "f32", "bytes": 262144}], "flops": 65536, "bytes_accessed": 524288}],
"edges": [{"src": 0, "dst": 1}]}
G
# A PipeDream profile of three layers (the measured times follow no particular profile).
printf '%s\n' \
  'node1 -- Input0 -- forward_compute_time=5.0, backward_compute_time=0.0, activation_size=6422528.0, parameter_size=0.0' \
  'node2 -- Conv2d(3, 64, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1)) -- forward_compute_time=1.2, backward_compute_time=2.5, activation_size=102760448.0, parameter_size=7168.0' \
  'node3 -- ReLU(inplace) -- forward_compute_time=0.4, backward_compute_time=0.5, activation_size=102760448.0, parameter_size=0.0' \
  'node4 -- Linear(in_features=4096, out_features=1000, bias=True) -- forward_compute_time=0.3, backward_compute_time=0.6, activation_size=512000.0, parameter_size=16388000.0' \
  "$(printf '\tnode1 -- node2')" "$(printf '\tnode2 -- node3')" "$(printf '\tnode3 -- node4')" > "$tmp/p.txt"

case "$case_name" in
  usage)
    expect_rc 0 "usage: gdp calibrate" -- "$gdp" calibrate --help
    expect_rc 0 "calibrate" -- "$gdp" --help
    expect_rc 2 "exactly one of --backend" -- "$gdp" calibrate --out "$tmp/x.json"
    expect_rc 2 "exactly one of --backend" -- "$gdp" calibrate --backend cpu --from-profile "$tmp/p.txt" --out "$tmp/x.json"
    expect_rc 2 "expects cpu or cuda" -- "$gdp" calibrate --backend tpu --out "$tmp/x.json"
    expect_rc 2 "missing required flag --out" -- "$gdp" calibrate --backend cpu --size tiny
    expect_rc 2 "expects tiny, quick or full" -- "$gdp" calibrate --backend cpu --size huge --out "$tmp/x.json"
    expect_rc 2 "at least one file" -- "$gdp" calibrate --from-profile --out "$tmp/x.json"
    expect_rc 2 "needs --cluster" -- "$gdp" calibrate --from-profile "$tmp/p.txt" --out "$tmp/x.json" --cluster-out "$tmp/c.json"
    expect_rc 2 "goes with --from-profile" -- "$gdp" calibrate --backend cpu --peak fp16 --out "$tmp/x.json"
    expect_rc 2 "expects fp32, fp16 or best" -- "$gdp" calibrate --from-profile "$tmp/p.txt" --peak fp8 --out "$tmp/x.json"
    expect_rc 2 "unknown flag --bogus" -- "$gdp" calibrate --backend cpu --bogus ;;
  cuda)
    # No GPU here (or no CUDA build): exit 1 with the reason, nothing written.
    expect_rc 1 "backend cuda" -- "$gdp" calibrate --backend cuda --out "$tmp/gpu.json"
    [ ! -e "$tmp/gpu.json" ] || fail "a profile was written without a GPU" ;;
  cpu)
    expect_rc 0 "compute_eff" -- "$gdp" calibrate --backend cpu --size tiny --devices 2 --out "$tmp/cpu.json" --cluster-out "$tmp/cpu_cluster.json"
    out=$("$gdp" calibrate --backend cpu --size tiny --out "$tmp/cpu2.json" 2>&1 >/dev/null)
    echo "$out" | grep -q "calibrate: \[1/" || fail "no progress lines on stderr: $out"
    grep -q '"device_kind": "cpu"' "$tmp/cpu.json" || fail "no cpu profile in $(cat "$tmp/cpu.json")"
    grep -q '"kind": "cpu"' "$tmp/cpu_cluster.json" || fail "no cpu device in the cluster"
    expect_rc 0 "\"name\": \"cpu1\"" -- "$gdp" cluster "$tmp/cpu_cluster.json"
    expect_rc 0 '"valid": true' -- "$gdp" simulate --graph "$tmp/g.json" --cluster "$tmp/cpu_cluster.json" --profile "$tmp/cpu.json" --placement round-robin --json ;;
  from-profile)
    expect_rc 0 "after" -- "$gdp" calibrate --from-profile "$tmp/p.txt" --out "$tmp/v100.json" --cluster v100x2-nvlink --cluster-out "$tmp/v100_cluster.json"
    grep -q '"device_kind": "V100"' "$tmp/v100.json" || fail "no V100 profile"
    expect_rc 0 '"valid": true' -- "$gdp" simulate --graph "$tmp/g.json" --cluster "$tmp/v100_cluster.json" --profile "$tmp/v100.json" --placement single --json
    expect_rc 0 "Input layers left out" -- "$gdp" calibrate --from-profile "$tmp/p.txt" --out "$tmp/k80.json" --device-kind K80 --peak fp32
    shared=${GDP_SHARED_DIR:-$(dirname "$0")/../../../shared}
    vgg="$shared/data/pipedream-profiles/image_classification/vgg16.txt"
    alex="$shared/data/pipedream-profiles/image_classification/alexnet.txt"
    if [ -f "$vgg" ] && [ -f "$alex" ]; then
      expect_rc 0 "held out (not fitted on): .*alexnet.txt" -- "$gdp" calibrate --from-profile "$vgg" --eval "$alex" --out "$tmp/vgg.json"
    fi ;;
  bad-input)
    expect_rc 1 "missing.txt: cannot open" -- "$gdp" calibrate --from-profile "$tmp/missing.txt" --out "$tmp/x.json"
    sed 's/backward_compute_time=2.5/backward_compute_time=fast/' "$tmp/p.txt" > "$tmp/bad.txt"
    expect_rc 1 "bad.txt:2: field backward_compute_time" -- "$gdp" calibrate --from-profile "$tmp/bad.txt" --out "$tmp/x.json"
    sed 's/"flops": 65536/"flops": -1/' "$tmp/g.json" > "$tmp/neg.json"
    expect_rc 1 "neg.json: ops\[1\].flops" -- "$gdp" calibrate --from-profile "$tmp/neg.json" --out "$tmp/x.json"
    expect_rc 1 "no op with a positive measured time" -- "$gdp" calibrate --from-profile "$tmp/g.json" --out "$tmp/x.json"
    expect_rc 1 "Z9000" -- "$gdp" calibrate --from-profile "$tmp/p.txt" --device-kind Z9000 --out "$tmp/x.json"
    mkdir "$tmp/dir.json"
    expect_rc 1 "dir.json: is a directory" -- "$gdp" calibrate --from-profile "$tmp/p.txt" --out "$tmp/dir.json"
    # Unwritable outputs fail before any benchmark runs.
    expect_rc 1 "dir.json: is a directory" -- "$gdp" calibrate --backend cpu --out "$tmp/dir.json"
    expect_rc 1 "does not exist" -- "$gdp" calibrate --backend cpu --out "$tmp/p.json" --cluster-out "$tmp/no/c.json"
    [ ! -e "$tmp/x.json" ] || fail "a profile was written from bad input" ;;
  *) fail "unknown case $case_name" ;;
esac
echo "ok: calib/cli-$case_name"
