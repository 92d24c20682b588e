"""CTest's entry to the Python tests (test python.gate): runs pytest on the arguments, or says
plainly that it cannot and exits 77, which CTest reports as skipped (SKIP_RETURN_CODE)."""
import sys

try:
    import pytest
except ImportError:
    print("SKIPPED: pytest is not installed for %s (apt-get install -y python3-pytest)" % sys.executable)
    sys.exit(77)

# No .pytest_cache in the source tree.
sys.exit(pytest.main(["-p", "no:cacheprovider"] + sys.argv[1:]))
