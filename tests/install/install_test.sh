#!/usr/bin/env bash
# Installed like a library: `cmake --install` puts the binary, libringlm.a, the headers and
# ringlm.pc under a prefix; examples/cpp/generate.cpp compiles and links against it with
# pkg-config alone and gives a reply that follows its schema; CPack builds two .debs, ringlm
# (the binary, its runtime Depends only, checked against what ldd shows it loads) and
# ringlm-dev (library, headers, ringlm.pc, the -dev Depends), which `dpkg -i` installs
# (dependencies checked against this machine's package database); the example links against
# them and the installed binary runs with no other step.
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

# The .debs: same files under /usr, Debian dependencies declared.
(cd "$RINGLM_BUILD_DIR" && cpack -G DEB -B "$RINGLM_TMP/deb" >"$RINGLM_TMP/cpack.log") || { cat cpack.log >&2; fail "cpack"; }
deb=$(ls deb/ringlm_*.deb)
dev_deb=$(ls deb/ringlm-dev_*.deb)
depends=$(dpkg-deb -f "$deb" Depends)
dev_depends=$(dpkg-deb -f "$dev_deb" Depends)
files=$(dpkg-deb -c "$deb")
dev_files=$(dpkg-deb -c "$dev_deb")
grep -q -- "-dev" <<<"$depends" && fail "the runtime package depends on -dev packages: $depends"
grep -q "ringlm (= 0.1.0)" <<<"$dev_depends" && grep -q "libcpp-httplib-dev" <<<"$dev_depends" ||
  fail "ringlm-dev Depends: $dev_depends"
grep -q "./usr/bin/ringlm$" <<<"$files" || fail "the .deb lacks /usr/bin/ringlm"
grep -q "./usr/share/ringlm/gemma4-tokenizer/tokenizer.json$" <<<"$files" || fail "the .deb lacks the tokenizer"
grep -q "./usr/lib/systemd/system/ringlm.service$" <<<"$files" || fail "the .deb lacks the systemd unit"
grep -q "ringlm.pc$\|libringlm.a$\|\.h$" <<<"$files" && fail "the runtime .deb holds development files"
grep -q "ringlm.pc$" <<<"$dev_files" && grep -q "libringlm.a$" <<<"$dev_files" || fail "ringlm-dev lacks ringlm.pc or libringlm.a"
# Every shared library the binary names (ELF NEEDED) comes from a package the runtime .deb
# depends on (the libraries those load come with their own packages' Depends).
dep_names=$(tr ',' '\n' <<<"$depends" | sed 's/^ *//; s/[ (].*//')
for soname in $(objdump -p "$RINGLM" | awk '$1 == "NEEDED" {print $2}'); do
  lib=$(ldd "$RINGLM" | awk -v n="$soname" '$1 == n {print $3} $1 ~ ("/" n "$") {print $1}' | head -n1)
  [[ -n "$lib" ]] || fail "ldd does not resolve $soname"
  real=$(readlink -f "$lib")
  pkg=$(dpkg -S "$lib" 2>/dev/null || dpkg -S "$real" 2>/dev/null || dpkg -S "/usr$lib" 2>/dev/null ||
        dpkg -S "${real#/usr}" 2>/dev/null) || fail "no package owns $lib"
  pkg=${pkg%%:*}
  grep -qxF "$pkg" <<<"$dep_names" || fail "$soname is from $pkg, which the runtime .deb does not depend on ($depends)"
done
# `dpkg -i` for real, into a private root whose package database is a copy of this machine's:
# dpkg checks the declared dependencies against what is installed here (no --force-depends),
# unpacks, registers the package; then the example builds and runs against that /usr alone.
root="$RINGLM_TMP/deb/root"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers"
cp /var/lib/dpkg/status "$root/var/lib/dpkg/status"
: >"$root/var/lib/dpkg/available"
dpkg --root="$root" --force-not-root --force-script-chrootless --log=/dev/null -i "$deb" "$dev_deb" >dpkg.log 2>&1 ||
  { cat dpkg.log >&2; fail "dpkg -i $deb $dev_deb"; }
dpkg --root="$root" -s ringlm | grep -q "^Status: install ok installed" || fail "dpkg does not list ringlm as installed"
dpkg --root="$root" -s ringlm-dev | grep -q "^Status: install ok installed" || fail "dpkg does not list ringlm-dev"
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
# The packaged binary runs with no other step (demo model written to the cache on first use).
mkdir -p deb/home
env -i PATH=/usr/bin:/bin HOME="$RINGLM_TMP/deb/home" "$root/usr/bin/ringlm" run -p hi -n 3 >deb-run.out 2>deb-run.log ||
  { cat deb-run.log >&2; fail "the packaged ringlm run -p hi"; }
grep -q "^ExecStart=/usr/bin/ringlm serve" "$root/usr/lib/systemd/system/ringlm.service" || fail "the unit's ExecStart"
echo "install checks passed ($deb installed with dpkg -i under $root)"
