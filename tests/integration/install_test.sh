#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `make install` gives a usable libcairn (issue #30, "a real library"):
# installed into a fresh prefix, the daemons and clusterctl start a cluster
# from there, the header compiles on its own (strict C11), libcairn.so.1
# exports every call the header declares and nothing else, and the example
# program (libclient/examples/hello.c) builds with nothing but
# `pkg-config cairn` and works against that cluster.
set -euo pipefail
. "$(dirname "$0")/../lib/cluster.sh"
build=${1:?usage: install_test.sh BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d /tmp/cairn-install-XXXXXX)
prefix="$dir/prefix"
ctl="$prefix/bin/clusterctl"
finish() {
	local rc=$?
	cluster_finish "$rc"
}
trap finish EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
cmake --install "$build" --prefix "$prefix" >"$dir/install.out" 2>&1 ||
	fail "install: $(cat "$dir/install.out")"
pc=$(find "$prefix" -name cairn.pc)
lib=$(find "$prefix" -name libcairn.so.1)
for f in "$ctl" "$prefix/bin/cairn-mon" "$prefix/bin/cairn-osd" \
	"$prefix/include/cairn/cairn.h" "$pc" "$lib"; do
	[ -n "$f" ] && [ -e "$f" ] || fail "not installed: $f ($(cat "$dir/install.out"))"
done
echo "installed: $(find "$prefix" -type f | sed "s|$prefix/||" | sort | tr '\n' ' ')"
export PKG_CONFIG_PATH="${pc%/*}"

# The header alone, strict.
echo '#include <cairn/cairn.h>' | cc -std=c11 -pedantic -Wall -Wextra -Werror -fsyntax-only \
	$(pkg-config --cflags cairn) -x c - || fail "cairn/cairn.h does not compile alone"

# Exports: the header's calls, and nothing else.
nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' | sed 's/@.*//' | sort >"$dir/exported"
grep -v '^cairn_[a-z]' "$dir/exported" && fail "libcairn.so exports more than cairn_* (above)"
sed 's|/\*.*\*/||' "$prefix/include/cairn/cairn.h" |
	grep -oE '\bcairn_[a-z0-9_]+\(' | tr -d '(' | sort -u >"$dir/declared"
missing=$(comm -23 "$dir/declared" "$dir/exported")
[ -z "$missing" ] || fail "declared in cairn.h but not exported: $missing"
extra=$(comm -13 "$dir/declared" "$dir/exported")
[ -z "$extra" ] || fail "exported but not in cairn.h: $extra"
echo "libcairn.so.1 exports the $(wc -l <"$dir/declared") calls cairn.h declares, nothing else"

# The example, built from the installed files only.
cc -std=c11 -Wall -Wextra -Werror -o "$dir/hello" "$src/libclient/examples/hello.c" \
	$(pkg-config --cflags --libs cairn) -Wl,-rpath,"${lib%/*}" || fail "hello.c does not build"
# (ldd's output captured first: grep -q stopping early would SIGPIPE ldd under pipefail)
deps=$(ldd "$dir/hello")
grep -q "libcairn.so.1 => ${lib%/*}/" <<<"$deps" || fail "hello links: $deps"

# A cluster from the installed binaries, and the example against it.
"$ctl" up --dir "$dir" --mons 1 --osds 3 --osd-size 256M >"$dir/up.out" 2>&1 ||
	fail "up from $prefix/bin: $(cat "$dir/up.out")"
pgrep -f "$prefix/bin/cairn-osd" >/dev/null || fail "the OSDs are not the installed ones"
export CAIRN_CONF="$dir/cairn.conf"
wait_clean "a cluster from $prefix/bin"
"$dir/hello" "$dir/cairn.conf" >"$dir/hello.out" 2>&1 || fail "hello: $(cat "$dir/hello.out")"
cat "$dir/hello.out"
left=$("$ctl" obj ls default)
grep -q hello <<<"$left" && fail "hello left objects behind: $left"
echo "install_test: passed"
