#!/usr/bin/env bash
# Run a command in the environment of the built package, without a ROS install.
#
#   scripts/env.sh COMMAND [ARGS...]    run COMMAND in that environment
#   source scripts/env.sh               export it into the current shell
#
# It uses the venv and colcon workspace that `make setup build` made, found through
# the repository's .venv and .ws links unless MCP_VENV / MCP_WS name them. Tests,
# the demo and the benchmarks all run through this one file (see the Makefile).
#
# What it sets, and why:
#   PATH               the venv's bin first, so `python3` and the installed entry
#                      scripts (#!/usr/bin/env python3) run the venv's interpreter
#   PYTHONPATH         the install's site-packages first: the installed my_collision_pkg
#                      has the generated msg/srv modules, the source folder has not
#   PYTHONSAFEPATH=1   never import from the current folder (the repository root
#                      holds the source package, which would shadow the installed one)
#   LD_LIBRARY_PATH    the install's lib/, where the generated type support libraries are
#   AMENT_PREFIX_PATH  install prefix, the venv (ROS wheels) and example-robot-data's
#                      cmeel.prefix, so that ament_index_python resolves package:// URIs
#   ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST  DDS discovery stays on this machine
#   ROS_DOMAIN_ID      kept if set; otherwise one per invocation (1..100), so that
#                      concurrent runs on one machine do not see each other's nodes
#   ROS_LOG_DIR        kept if set; otherwise <workspace>/ros_log

_mcp_sourced=0
if [ "${BASH_SOURCE[0]}" != "$0" ]; then _mcp_sourced=1; fi

_mcp_fail() {
  echo "scripts/env.sh: $*" >&2
  if [ "$_mcp_sourced" = 1 ]; then return 1; else exit 1; fi
}

_mcp_repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
_mcp_venv="${MCP_VENV:-$(readlink -f "$_mcp_repo/.venv" 2>/dev/null || true)}"
_mcp_ws="${MCP_WS:-$(readlink -f "$_mcp_repo/.ws" 2>/dev/null || true)}"

if [ -z "$_mcp_venv" ] || [ ! -x "$_mcp_venv/bin/python" ]; then
  _mcp_fail "no venv at '${_mcp_venv:-$_mcp_repo/.venv}': run 'make setup' first" || return 1
fi
if [ -z "$_mcp_ws" ] || [ ! -d "$_mcp_ws/install" ]; then
  _mcp_fail "no workspace install at '${_mcp_ws:-$_mcp_repo/.ws}/install': run 'make build' first" || return 1
fi

_mcp_install="$_mcp_ws/install"
_mcp_pyver="$("$_mcp_venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
_mcp_site="$_mcp_install/lib/python$_mcp_pyver/site-packages"
_mcp_venv_site="$_mcp_venv/lib/python$_mcp_pyver/site-packages"

export MCP_VENV="$_mcp_venv"
export MCP_WS="$_mcp_ws"
export PATH="$_mcp_venv/bin:$PATH"
export PYTHONPATH="$_mcp_site${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONSAFEPATH=1
export LD_LIBRARY_PATH="$_mcp_install/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export AMENT_PREFIX_PATH="$_mcp_install:$_mcp_venv:$_mcp_venv_site/cmeel.prefix"
export ROS_AUTOMATIC_DISCOVERY_RANGE="${ROS_AUTOMATIC_DISCOVERY_RANGE:-LOCALHOST}"
export ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-$(( $$ % 100 + 1 ))}"
export ROS_LOG_DIR="${ROS_LOG_DIR:-$_mcp_ws/ros_log}"
export RMW_IMPLEMENTATION="${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}"
# The venv is not activated; VIRTUAL_ENV is set for tools that look for it.
export VIRTUAL_ENV="$_mcp_venv"

unset _mcp_repo _mcp_venv _mcp_ws _mcp_install _mcp_pyver _mcp_site _mcp_venv_site

if [ "$_mcp_sourced" = 0 ]; then
  unset _mcp_sourced
  if [ "$#" -eq 0 ]; then
    echo "usage: scripts/env.sh COMMAND [ARGS...]   (or: source scripts/env.sh)" >&2
    exit 2
  fi
  exec "$@"
fi
unset _mcp_sourced
unset -f _mcp_fail
