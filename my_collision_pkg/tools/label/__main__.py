"""``python -m my_collision_pkg.tools.label``: see :mod:`my_collision_pkg.tools.label.cli`."""
import sys

from my_collision_pkg.tools.label.cli import main

if __name__ == "__main__":
    sys.exit(main())
