# SPDX-License-Identifier: Apache-2.0
# Sourced by the local-cluster tests (recovery_test.sh, thrash_test.sh); they
# set $ctl (clusterctl) and $dir (the cluster's directory) first.

# At exit with status $1: stop the cluster; sanitizer reports in the daemons'
# logs (written at their clean exit in 'down') fail the test; remove $dir
# unless KEEP_DIR is set. Exits.
cluster_finish() {
	local rc=$1
	"$ctl" down --dir "$dir" >/dev/null 2>&1 || true
	if grep -l "Sanitizer\|runtime error" "$dir"/*.log >/dev/null 2>&1; then
		grep -h -A30 "Sanitizer\|runtime error" "$dir"/*.log | head -80 >&2
		echo "FAIL: sanitizer reports in daemon logs" >&2
		rc=1
	fi
	[ -n "${KEEP_DIR:-}" ] || rm -rf "$dir"
	exit "$rc"
}
