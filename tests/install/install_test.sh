#!/usr/bin/env bash
# Installed like a library: `cmake --install` puts the binary, libringlm.a, the headers and
# ringlm.pc under a prefix; examples/cpp/generate.cpp compiles and links against it with
# pkg-config alone and gives a reply that follows its schema; CPack builds a .deb holding the
# same files with its Debian dependencies, which `dpkg -i` installs (dependencies checked
# against this machine's package database) and the example links against.
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
  "$RINGLM" make-test-model model --preset demo --seed 3 --tokenizer "$RINGLM_TOKENIZER_DIR" 2>/dev/null
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
# `dpkg -i` for real, into a private root whose package database is a copy of this machine's:
# dpkg checks the declared dependencies against what is installed here (no --force-depends),
# unpacks, registers the package; then the example builds and runs against that /usr alone.
root="$RINGLM_TMP/deb/root"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers"
cp /var/lib/dpkg/status "$root/var/lib/dpkg/status"
: >"$root/var/lib/dpkg/available"
dpkg --root="$root" --force-not-root --force-script-chrootless --log=/dev/null -i "$deb" >dpkg.log 2>&1 ||
  { cat dpkg.log >&2; fail "dpkg -i $deb"; }
dpkg --root="$root" -s ringlm | grep -q "^Status: install ok installed" || fail "dpkg does not list ringlm as installed"
[[ -x "$root/usr/bin/ringlm" ]] || fail "dpkg -i left no /usr/bin/ringlm"
pc_dir=$(dirname "$(cd "$root" && find ./usr -name ringlm.pc)")
libs=$(PKG_CONFIG_PATH="$root/$pc_dir" pkg-config --libs ringlm)
grep -q -- "-L.*deb/root/.*usr/lib" <<<"$libs" || fail "the .deb's ringlm.pc does not point into its tree: $libs"
# Every module is in the archive: vision and audio too (the engine's media prompts call them).
archive=$(find "$root/usr/lib" -name libringlm.a)
nm -C "$archive" >archive-symbols.txt 2>/dev/null  # (not piped into grep -q: SIGPIPE under pipefail)
grep -q " T ringlm::vision::" archive-symbols.txt || fail "libringlm.a lacks the vision module"
grep -q " T ringlm::audio::" archive-symbols.txt || fail "libringlm.a lacks the audio module"
# shellcheck disable=SC2046
g++ -O1 "$RINGLM_SOURCE_DIR/examples/cpp/generate.cpp" $(PKG_CONFIG_PATH="$root/$pc_dir" pkg-config --cflags --libs ringlm) -o gen-deb
./gen-deb model "Classify: the invoice was charged twice" >reply-deb.json
"$RINGLM_PYTHON" -c '
import json
v = json.load(open("reply-deb.json"))
assert v["category"] in ("billing", "shipping", "other") and isinstance(v["urgent"], bool), v'
echo "install checks passed ($deb installed with dpkg -i under $root)"
