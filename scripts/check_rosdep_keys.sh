#!/bin/bash
# Check that every rosdep key of package.xml resolves for Ubuntu noble and ROS 2 Jazzy,
# as on a ROS user's machine: rosdistro's rosdep rules (base.yaml, python.yaml) and its
# Jazzy distribution index, plus rosdep/my_collision_pkg.yaml. Nothing is installed and
# the machine's own rosdep configuration is not touched (all of it lives in a temporary
# folder). Not part of `make test`: it needs a rosdistro checkout and rosdep.
#
#   scripts/check_rosdep_keys.sh /path/to/rosdistro            # a checkout of ros/rosdistro
#   ROSDEP=/tmp/venv/bin/rosdep scripts/check_rosdep_keys.sh ...   # rosdep (PyPI) not on PATH
#   OS=ubuntu:noble ROS_DISTRO=jazzy (the defaults) pick the target.
set -euo pipefail

if [ "$#" -ne 1 ] || [ ! -f "$1/rosdep/base.yaml" ] || [ ! -f "$1/index-v4.yaml" ]; then
  echo "usage: $0 ROSDISTRO_CHECKOUT   (a folder with rosdep/base.yaml and index-v4.yaml)" >&2
  exit 2
fi
rosdistro="$(cd "$1" && pwd -P)"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
rosdep="${ROSDEP:-rosdep}"
os="${OS:-ubuntu:noble}"
distro="${ROS_DISTRO:-jazzy}"
command -v "$rosdep" >/dev/null || { echo "$0: '$rosdep' not found (pip install rosdep, or set ROSDEP)" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/sources.list.d"
cat > "$work/sources.list.d/20-default.list" <<LIST
yaml file://$rosdistro/rosdep/base.yaml
yaml file://$rosdistro/rosdep/python.yaml
yaml file://$repo/rosdep/my_collision_pkg.yaml
LIST
export ROSDEP_SOURCE_PATH="$work/sources.list.d" ROS_HOME="$work/ros_home"
export ROSDISTRO_INDEX_URL="file://$rosdistro/index-v4.yaml" ROS_DISTRO="$distro" ROS_PYTHON_VERSION=3

echo "== rosdep update (rosdistro at $rosdistro)"
"$rosdep" update --rosdistro="$distro" >"$work/update.log" 2>&1 || { cat "$work/update.log" >&2; exit 1; }

echo "== each key of package.xml, resolved for $os, $distro"
failed=0
for key in $("$rosdep" keys --from-paths "$repo" --ignore-src --rosdistro="$distro" | sort); do
  if out="$("$rosdep" resolve "$key" --os="$os" --rosdistro="$distro" 2>&1)"; then
    printf '%-34s %s\n' "$key" "$(echo "$out" | grep -v '^#' | tr '\n' ' ')"
  else
    printf '%-34s UNRESOLVED: %s\n' "$key" "$(echo "$out" | tr '\n' ' ')"
    failed=1
  fi
done

echo "== rosdep install --simulate --reinstall --from-paths . --ignore-src"
"$rosdep" install --simulate --reinstall --default-yes --from-paths "$repo" --ignore-src \
  --os="$os" --rosdistro="$distro" || failed=1

if [ "$failed" = 0 ]; then echo "== every key resolves"; else echo "== some keys do not resolve" >&2; fi
exit "$failed"
