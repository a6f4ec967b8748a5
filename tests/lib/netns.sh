# SPDX-License-Identifier: Apache-2.0
# Network namespaces for the tests that cut links (thrash_test.sh,
# partition_test.sh): the test re-executes itself under `unshare -n` and,
# inside, calls netns_setup; a cut is then a pair of routing rules
# (`ip rule add pref 10..13 ... unreachable`) that never touch the host's.

# Can this process make a network namespace of its own (root, unshare -n)?
netns_possible() {
	[ "$(id -u)" = 0 ] && unshare -n true 2>/dev/null
}

# Inside the namespace: refuse to go on in the root one, bring loopback up,
# and move the local table to pref 100, behind the cut rules.
netns_setup() {
	[ "$(readlink /proc/self/ns/net)" != "$(readlink /proc/1/ns/net)" ] ||
		{ echo "FAIL: not in a network namespace of our own" >&2; exit 1; }
	ip link set lo up
	ip rule add pref 100 lookup local
	ip rule del pref 0
}
