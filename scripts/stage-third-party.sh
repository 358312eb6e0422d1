#!/usr/bin/env bash
# Copies the header-only libraries of the `rnnx` command, CLI11 and nlohmann_json, with their
# licences, from Debian's packages (libcli11-dev, nlohmann-json3-dev: scripts/install-deps.sh
# installs both) into third_party/, which git ignores: the repository holds no third-party
# code, the sdist does (pyproject.toml includes third_party/), so that a build from the sdist
# needs nothing but a compiler and PyPI's build tools. cmake/HeaderDeps.cmake prefers these
# copies. Layout: third_party/<name>/{include/,LICENSE,SOURCE}. Idempotent; prints nothing but
# one line per library.
set -euo pipefail
cd "$(dirname "$0")/.."

stage() {  # stage NAME DEBIAN_PACKAGE INCLUDE_SUBDIR
  local name=$1 package=$2 sub=$3
  local version
  if ! version=$(dpkg-query -W -f='${Version}' "$package" 2>/dev/null) || [ -z "$version" ] ||
     [ ! -d "/usr/include/$sub" ]; then
    echo "stage-third-party: Debian's $package is not installed (apt-get install $package," \
         "or scripts/install-deps.sh)" >&2
    exit 1
  fi
  local dir=third_party/$name
  rm -rf "$dir"
  mkdir -p "$dir/include"
  cp -r "/usr/include/$sub" "$dir/include/"
  # Debian's copyright file: the upstream licence text and who holds the copyright.
  cp "/usr/share/doc/$package/copyright" "$dir/LICENSE"
  echo "Debian $package $version" >"$dir/SOURCE"
  echo "stage-third-party: $dir from Debian $package $version ($(du -sh "$dir" | cut -f1))"
}

stage CLI11 libcli11-dev CLI
stage nlohmann_json nlohmann-json3-dev nlohmann
