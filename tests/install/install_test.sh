#!/usr/bin/env bash
# Installed like a library: `cmake --install` puts the binary, libringlm.a, the headers and
# ringlm.pc under a prefix; examples/cpp/generate.cpp compiles and links against it with
# pkg-config alone and gives a reply that follows its schema; CPack builds a .deb holding the
# same files with its Debian dependencies.
set -euo pipefail
mkdir -p "$RINGLM_TMP"
cd "$RINGLM_TMP"
rm -rf prefix deb gen
fail() { echo "FAIL: $*" >&2; exit 1; }
cmake --install "$RINGLM_BUILD_DIR" --prefix "$RINGLM_TMP/prefix" >install.log
pc=$(find prefix -name ringlm.pc)
[[ -n "$pc" ]] || fail "no ringlm.pc installed"
for f in bin/ringlm include/ringlm/engine/generator.h include/ringlm/util/error.h; do
  [[ -e "prefix/$f" ]] || fail "prefix/$f missing"
done
[[ -n "$(find prefix -name libringlm.a)" ]] || fail "no libringlm.a installed"
[[ ! -e prefix/include/ringlm/cli ]] || fail "CLI internals installed as headers"
export PKG_CONFIG_PATH="$RINGLM_TMP/$(dirname "$pc")"
[[ $(pkg-config --modversion ringlm) == 0.1.0 ]] || fail "pkg-config does not find ringlm"
# shellcheck disable=SC2046
g++ -O1 "$RINGLM_SOURCE_DIR/examples/cpp/generate.cpp" $(pkg-config --cflags --libs ringlm) -o gen
[[ $(wc -l <"$RINGLM_SOURCE_DIR/examples/cpp/generate.cpp") -le 40 ]] || fail "the example grew past 40 lines"
[[ -f model/config.json ]] ||
  "$RINGLM" make-test-model model --preset demo --seed 3 --tokenizer "$RINGLM_SHARED_DIR/gemma4-tokenizer" 2>/dev/null
./gen model "Classify: my order AB-1234 never arrived" >reply.json
"$RINGLM_PYTHON" -c '
import json, sys
v = json.load(open("reply.json"))
assert v["category"] in ("billing", "shipping", "other") and isinstance(v["urgent"], bool), v
print("example reply:", v)'

# The .deb: same files under /usr, Debian dependencies declared.
(cd "$RINGLM_BUILD_DIR" && cpack -G DEB -B "$RINGLM_TMP/deb" >"$RINGLM_TMP/cpack.log") || { cat cpack.log >&2; fail "cpack"; }
deb=$(ls deb/*.deb)
info=$(dpkg-deb -I "$deb")
files=$(dpkg-deb -c "$deb")
grep -q "Depends:.*libcpp-httplib" <<<"$info" || fail "the .deb declares no dependencies"
grep -q "./usr/bin/ringlm$" <<<"$files" || fail "the .deb lacks /usr/bin/ringlm"
grep -q "ringlm.pc$" <<<"$files" || fail "the .deb lacks ringlm.pc"
mkdir -p deb/root && dpkg-deb -x "$deb" deb/root
libs=$(PKG_CONFIG_PATH="$RINGLM_TMP/deb/root/$(dirname "$(cd deb/root && find . -name ringlm.pc)")" pkg-config --libs ringlm)
grep -q -- "-L.*deb/root/.*usr/lib" <<<"$libs" || fail "the .deb's ringlm.pc does not point into its tree: $libs"
echo "install checks passed ($deb)"
