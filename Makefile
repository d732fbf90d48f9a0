# my_collision_pkg without a ROS install: a venv with the pinned ROS 2 Jazzy wheels
# from PyPI, a colcon build of this package, and the tests, demo and benchmarks run
# against the installed package. Each target sets up what it needs, idempotently.
#
#   make demo    run the demo (setup + build first)
#   make test    run the tests under test/ (setup + build first); fails if none ran
#   make bench   run benchmarks/*.py (setup + build first)
#   make view    serve the browser view of make demo's environment collision (viz.web)
#   make setup   only the venv;   make build   only the venv + colcon build
#   make clean   remove the colcon workspace;   make distclean   also the venv
#
# Variables (make VAR=value ...):
#   PYTHON       interpreter that creates the venv; must be CPython 3.11 (default python3.11)
#   MCP_CACHE    folder holding the venv and the workspace (default ~/.cache/my_collision_pkg)
#   TESTS        what pytest runs (default test)
#   PYTEST_ARGS  extra pytest arguments, e.g. PYTEST_ARGS='-k explain -x'
#   DEMO_ARGS    arguments for python -m my_collision_pkg.tools.demo
#   WEB          WEB=1: make demo ends by serving the browser view until Ctrl-C
#   VIEW_ARGS    arguments for python -m my_collision_pkg.viz.web (make view), e.g. --port 8081
#
# Both folders live outside the source tree (a venv inside it breaks the CMake build:
# rosidl exports numpy's include folder, and CMake refuses an exported include path
# inside the source directory). The repository gets two links to them, .venv and .ws.
#   venv:      $(MCP_CACHE)/venv-<hash of requirements/*.txt>  (new requirements, new venv)
#   workspace: $(MCP_CACHE)/ws-<hash of this checkout's path>  (build/, install/, log/)
# Every command that uses the built package runs through scripts/env.sh, the one place
# that defines its environment.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build
.DELETE_ON_ERROR:

PYTHON ?= python3.11
MCP_CACHE ?= $(HOME)/.cache/my_collision_pkg
TESTS ?= test
PYTEST_ARGS ?=
DEMO_ARGS ?=
WEB ?=
VIEW_ARGS ?=

REPO := $(realpath $(dir $(lastword $(MAKEFILE_LIST))))
REQUIREMENTS := $(REPO)/requirements/ros-jazzy.txt $(REPO)/requirements/python.txt
REQ_HASH := $(shell cat $(REQUIREMENTS) | sha256sum | cut -c1-12)
REPO_HASH := $(shell printf '%s' '$(REPO)' | sha256sum | cut -c1-12)
VENV := $(MCP_CACHE)/venv-$(REQ_HASH)
WS := $(MCP_CACHE)/ws-$(REPO_HASH)
STAMP := $(VENV)/.setup-complete
ENV := MCP_VENV='$(VENV)' MCP_WS='$(WS)' '$(REPO)/scripts/env.sh'

$(foreach f,$(REQUIREMENTS),$(if $(wildcard $(f)),,$(error $(f) is missing)))

.PHONY: setup build test demo view bench clean distclean check-tools

# Points $(1) (a link in the repository) at $(2); refuses to replace a real folder.
define link
	if [ -e '$(REPO)/$(1)' ] && [ ! -L '$(REPO)/$(1)' ]; then \
	  echo "$(1) in the repository is not a link; move it away (the real folder must live outside the source tree)" >&2; \
	  exit 1; \
	fi; \
	ln -sfn '$(2)' '$(REPO)/$(1)'
endef

check-tools:
	@command -v '$(PYTHON)' >/dev/null || { echo "$(PYTHON) not found: the ROS Jazzy wheels on PyPI need CPython 3.11 (set PYTHON=...)" >&2; exit 1; }
	@'$(PYTHON)' -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || { echo "$(PYTHON) is not CPython 3.11, which the ROS Jazzy wheels need" >&2; exit 1; }
	@'$(PYTHON)' -c 'import os, sysconfig; p = os.path.join(sysconfig.get_paths()["include"], "Python.h"); raise SystemExit(0 if os.path.exists(p) else "no " + p + ": install the Python 3.11 headers (Debian: python3.11-dev)")'
	@command -v cmake >/dev/null || { echo "cmake not found (Debian: apt-get install cmake)" >&2; exit 1; }
	@command -v cc >/dev/null && command -v c++ >/dev/null || { echo "no C/C++ compiler (cc, c++) found (Debian: apt-get install g++)" >&2; exit 1; }

# The venv: made once per content of the requirements files. A lock keeps concurrent
# runs (two checkouts, two terminals) from building the same venv at once; a venv
# without the stamp (interrupted run) is made again from scratch.
setup: check-tools
	@mkdir -p '$(MCP_CACHE)'
	@exec 9>'$(VENV).lock'; flock 9; \
	if [ ! -f '$(STAMP)' ]; then \
	  echo "setup: creating $(VENV)"; \
	  rm -rf '$(VENV)'; \
	  '$(PYTHON)' -m venv '$(VENV)' || { echo "setup: '$(PYTHON) -m venv' failed (Debian: apt-get install python3.11-venv)" >&2; exit 1; }; \
	  '$(VENV)/bin/python' -m pip install --no-input --disable-pip-version-check --quiet \
	    -r '$(REPO)/requirements/ros-jazzy.txt' -r '$(REPO)/requirements/python.txt'; \
	  '$(VENV)/bin/python' '$(REPO)/scripts/fix_ros_wheel_cmake.py' '$(VENV)'; \
	  touch '$(VENV)/COLCON_IGNORE'; \
	  touch '$(STAMP)'; \
	fi
	@$(call link,.venv,$(VENV))

# colcon build with the build, install and log bases outside the tree. With
# --symlink-install the installed Python modules are links to the sources: edits show
# at once; a new module appears at the next build (every target below builds first),
# and the link of a deleted one is removed then (find -xtype l: dangling links).
# A workspace built against another venv is wiped first: its CMake cache names that venv.
# colcon warns that the venv in AMENT_PREFIX_PATH has no local_setup.* files: harmless.
# Then every kernel the services use is compiled into numba's cache next to the installed
# modules (python -m my_collision_pkg.core.warm_up; a minute or two the first time, seconds
# after), so that the node's first start loads instead of compiling. The CMake install step
# would do the same (MY_COLLISION_PKG_WARM_UP): it is off here, where this line does it.
build: setup
	@mkdir -p '$(WS)'
	@exec 9>'$(WS).lock'; flock 9; \
	touch '$(WS)/COLCON_IGNORE'; \
	if [ -f '$(WS)/venv-used' ] && [ "$$(cat '$(WS)/venv-used')" != '$(VENV)' ]; then \
	  echo "build: venv changed, removing the old build"; \
	  rm -rf '$(WS)/build' '$(WS)/install' '$(WS)/log'; \
	fi; \
	echo '$(VENV)' > '$(WS)/venv-used'; \
	cd '$(WS)' && \
	AMENT_PREFIX_PATH='$(VENV)' CMAKE_PREFIX_PATH='$(VENV)' PATH='$(VENV)/bin':"$$PATH" \
	  '$(VENV)/bin/colcon' build --base-paths '$(REPO)' --merge-install --symlink-install \
	    --cmake-args -DPython3_EXECUTABLE='$(VENV)/bin/python' -DMY_COLLISION_PKG_WARM_UP=OFF; \
	find '$(WS)/install' -xtype l -delete; \
	$(ENV) python -m my_collision_pkg.core.warm_up
	@$(call link,.ws,$(WS))

# pytest exits 5 when it collected no test; that is a failure here, not a pass.
# ROS_PYTHON_CHECK_FIELDS=1 makes message field setters check types (off by default
# on Jazzy): an int put in a byte field, a list of 3 in a string[2] fail in the tests.
test: export ROS_PYTHON_CHECK_FIELDS ?= 1
test: build
	@$(ENV) python -c 'import my_collision_pkg.msg, my_collision_pkg.srv' \
	  || { echo "test: the installed my_collision_pkg lacks its generated msg/srv modules" >&2; exit 1; }
	@'$(REPO)/scripts/ensure_chromium.sh'
	@cd '$(REPO)'; rc=0; \
	$(ENV) python -m pytest -o cache_dir='$(WS)/pytest_cache' -ra $(PYTEST_ARGS) $(TESTS) || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "test: pytest ran no tests; failing" >&2; exit 1; fi; \
	exit $$rc

demo: build
	@cd '$(REPO)' && $(ENV) python -m my_collision_pkg.tools.demo $(if $(WEB),--web) $(DEMO_ARGS)

# The browser view (docs/web_view.md): serves until Ctrl-C, prints its URL.
view: build
	@cd '$(REPO)' && $(ENV) python -m my_collision_pkg.viz.web $(VIEW_ARGS)

# Benchmarks are scripts that print figures; files starting with _ are helpers,
# importable by the scripts (benchmarks/ is put on PYTHONPATH after the install).
bench: build
	@cd '$(REPO)'; shopt -s nullglob; scripts=(benchmarks/[!_]*.py); \
	if [ $${#scripts[@]} -eq 0 ]; then echo "bench: no benchmarks/*.py" >&2; exit 1; fi; \
	for script in "$${scripts[@]}"; do \
	  echo "=== $$script"; \
	  PYTHONPATH='$(REPO)/benchmarks' $(ENV) python "$$script"; \
	done

clean:
	rm -rf '$(WS)' '$(WS).lock'
	rm -f '$(REPO)/.ws'

distclean: clean
	rm -rf '$(VENV)' '$(VENV).lock'
	rm -f '$(REPO)/.venv'
