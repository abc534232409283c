# Shared by the end-to-end shell tests (tests/cli/cli_test.sh, tests/calib/calib_cli_test.sh):
# a scratch directory removed on exit, `fail`, and `expect_rc RC PATTERN -- command...` (the
# command exits RC and its output holds PATTERN, and no sanitizer report).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAILED: $*"; exit 1; }
expect_rc() {  # expect_rc RC PATTERN -- command...
  local want=$1 pat=$2; shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  [ "$rc" -eq "$want" ] || fail "'$*' exited $rc, expected $want; output: $out"
  # A sanitized build (GDP_SANITIZE) exits 1 on a finding, like bad input: look for its report.
  if echo "$out" | grep -q "Sanitizer\|runtime error:"; then fail "'$*': sanitizer report: $out"; fi
  [ -z "$pat" ] || echo "$out" | grep -q -- "$pat" || fail "'$*' output lacks '$pat': $out"
}
