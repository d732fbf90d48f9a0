"""Moved to :mod:`my_collision_pkg.tools.demo` (this old path warns once and forwards)."""
from my_collision_pkg._moved import forward

__getattr__ = forward(__name__, "my_collision_pkg.tools.demo")


if __name__ == "__main__":
    import sys

    sys.exit(__getattr__("main")())
