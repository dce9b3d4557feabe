#!/usr/bin/env bash
# Without a GPU: the fp16 scaler test's verdict (fp16_scaler_test.sh
# --check-verdict LOSS_SCALE SKIPPED) fails on the figures a trial reports
# with the scaler off (no loss_scale stat) and with a scaler that does
# nothing (65536 at the end, no step skipped), or one that never settles,
# and passes a scaler that backed off or skipped a step. The GPU run itself
# is gpu.fp16_scaler_trains.
set -uo pipefail
check="$(dirname "$0")/fp16_scaler_test.sh --check-verdict"
fails=0
expect() {  # pass|fail LOSS_SCALE SKIPPED
  if $check "$2" "$3" > /dev/null 2>&1; then got=pass; else got=fail; fi
  [ "$got" = "$1" ] || { echo "FAIL: loss_scale '$2', skipped '$3': $got, expected $1"; fails=1; }
}
expect fail "" ""          # the scaler off: no stat at all
expect fail 65536 0        # a scaler that never unscales, skips or backs off
expect fail 32768 40       # one that never settles
expect pass 32768 1        # backed off once, skipped the step
expect pass 65536 2        # skipped two steps (the scale grew back)
expect pass 8192 0         # backed off
[ $fails = 0 ] && echo "PASS"
exit $fails
