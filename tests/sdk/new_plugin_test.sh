#!/usr/bin/env bash
# From nothing to a plugin in a sweep, as a plugin author does it (see
# docs/writing-plugins.md): install gpusweep into a prefix, `gpusweep
# new-plugin demo` outside the source tree, build it with only
# find_package(gpusweep) and LibTorch, check it, install it beside the host's
# plugins (found with no flags), and run a two-config sweep that must record
# two `ok` trials. examples/mlp_classifier is built and checked the same way.
# Usage: new_plugin_test.sh CMAKE GENERATOR BUILD_DIR SOURCE_DIR LIBDIR
set -euo pipefail
cmake=$1 generator=$2 build=$3 src=$4 libdir=${5:-lib}
# A fixed folder (outside the source tree) so that ccache reuses the demo's
# object from the previous run; wiped first, kept on failure for a look.
work=$build/Testing/new-plugin
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
bin=$prefix/bin/gpusweep
unset GPUSWEEP_PLUGIN_PATH
launcher=()
if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
step() { echo "--- $*"; }

step "install gpusweep into $prefix"
"$cmake" --install "$build" --prefix "$prefix" > "$work/install.log"
plugin_dir=$prefix/$libdir/gpusweep/plugins
for f in bin/gpusweep libexec/gpusweep/gpusweep-worker "$libdir"/cmake/gpusweep/{gpusweepConfig.cmake,gpusweepConfigVersion.cmake} \
         "$libdir"/cmake/gpusweep/{gpusweep_plugin.map,GpusweepPlugin.cmake} \
         include/gpusweep/{plugin.h,workload.hpp,torchkit/settings.hpp} \
         "$libdir"/libgpusweep_torchkit.a "$libdir"/gpusweep/plugins/gpusweep_noop.so \
         share/doc/gpusweep/writing-plugins.md; do
  [ -e "$prefix/$f" ] || { echo "FAIL: $f was not installed"; exit 1; }
done

step "the installed host finds the installed plugins, and only those"
"$bin" plugins --format csv > "$work/plugins.csv"
grep -q "^noop," "$work/plugins.csv" || { cat "$work/plugins.csv"; echo "FAIL: noop not found"; exit 1; }
if grep -q "$build/plugins" "$work/plugins.csv"; then
  echo "FAIL: the installed host searched the build tree"; exit 1
fi

step "gpusweep new-plugin demo"
cd "$work"
"$bin" new-plugin demo

step "configure and build it with only find_package(gpusweep)"
"$cmake" -S demo -B demo/build -G "$generator" -DCMAKE_PREFIX_PATH="$prefix" "${launcher[@]}" \
  > demo-configure.log 2>&1 || { cat demo-configure.log; exit 1; }
"$cmake" -S "$src/examples/mlp_classifier" -B mlp-build -G "$generator" \
  -DCMAKE_PREFIX_PATH="$prefix" "${launcher[@]}" > mlp-configure.log 2>&1 || { cat mlp-configure.log; exit 1; }
# The two LibTorch TUs build side by side.
"$cmake" --build mlp-build > mlp-build.log 2>&1 &
mlp=$!
"$cmake" --build demo/build
wait "$mlp" || { cat mlp-build.log; echo "FAIL: examples/mlp_classifier does not build"; exit 1; }

step "gpusweep plugins --check"
"$bin" plugins --check demo/build/gpusweep_demo.so
"$bin" plugins --check mlp-build/gpusweep_mlp_classifier.so

step "install the plugin: the installed host finds it with no flags"
# Never install outside the temporary prefix.
grep -qx "GPUSWEEP_PLUGIN_INSTALL_DIR:PATH=$plugin_dir" demo/build/CMakeCache.txt || {
  grep GPUSWEEP_PLUGIN_INSTALL_DIR demo/build/CMakeCache.txt
  echo "FAIL: the plugin would not install into the prefix's plugin folder"; exit 1
}
"$cmake" --install demo/build > demo-install.log
[ -e "$plugin_dir/gpusweep_demo.so" ] || { echo "FAIL: demo not installed"; exit 1; }
"$bin" plugins demo > demo-plugin.txt   # not piped into head: SIGPIPE would fail the test
grep -q "demo 0.1.0" demo-plugin.txt || { cat demo-plugin.txt; echo "FAIL: demo not found"; exit 1; }

step "a two-config sweep, three repeats each (the template's protocol)"
"$bin" run demo/sweep.json --db demo.db
ok=$("$bin" sql "SELECT count(*) AS n FROM trials WHERE status = 'ok'" --db demo.db --format csv | tail -1)
if [ "$ok" != 6 ]; then
  "$bin" results --db demo.db
  echo "FAIL: expected 6 ok trials, found $ok"; exit 1
fi
echo "ok: 6 trials recorded ok"
cd /
rm -rf "$work"
