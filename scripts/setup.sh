#!/usr/bin/env bash
# Installs ringlm's build and test dependencies from Debian's packages (when run as root
# and something is missing) and builds the release tree in build/.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build pkg-config clang
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libsimdjson-dev libcpp-httplib-dev libcli11-dev libhwy-dev
  python3 python3-numpy python3-jsonschema curl
  libjpeg62-turbo-dev libpng-dev libwebp-dev imagemagick
  libsndfile1-dev libsoxr-dev sox espeak-ng python3-soundfile
  libedit-dev tmux chromium
  python3-dev pybind11-dev python3-pybind11 python3-pytest python3-venv libssl-dev
  libclang-rt-14-dev
  g++-aarch64-linux-gnu qemu-user-static
  # The Vulkan backend (docs/backends.md): headers, the shader compiler, and Mesa's lavapipe,
  # a Vulkan device on the CPU that the tests in tests/vulkan run on.
  libvulkan-dev glslc spirv-tools mesa-vulkan-drivers
)
# Node.js runs the reference implementations (tokenizers, jinja, openai client); use the
# machine's node if it has one (it may come from another repository with npm bundled).
command -v node >/dev/null && command -v npm >/dev/null || PACKAGES+=(nodejs npm)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    echo "setup: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "setup: missing Debian packages (install as root): ${missing[*]}" >&2
    exit 1
  fi
fi

# JavaScript reference implementations used by the property tests (npm registry).
if [[ -f tests/js/package.json ]]; then
  # (again when package-lock.json is newer than the installed tree: a dependency was added)
  (cd tests/js && { [[ node_modules/.package-lock.json -nt package-lock.json ]] || npm ci --no-audit --no-fund --loglevel=error; })
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"

# The built-in demo model (tiny random weights + the real Gemma 4 tokenizer), used by the CLI
# when no --model is given.
if [[ ! -f build/demo-model/config.json ]]; then
  ./build/ringlm make-test-model build/demo-model --preset demo --seed 1 --tokenizer assets/gemma4-tokenizer
fi
