#!/usr/bin/env python3
"""CTest's entry to the Python tests: `run_pytest.py DIR [pytest args]` runs pytest on DIR with the
installed `quill` package (build/venv-py, made by scripts/setup-python.sh). Exits 77 (CTest: skipped)
when this Python lacks pytest or the package, so a machine without a package index still runs the
C++ suite; otherwise pytest's own exit status."""

import sys

try:
    import pytest

    import quill  # noqa: F401  (the package under test, installed by `pip install .`)
except ImportError as e:
    print(f"skipped: {e}; run scripts/setup-python.sh to install the package and its test requirements")
    sys.exit(77)

sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[1:]]))
