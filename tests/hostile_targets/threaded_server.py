"""counting_server.py behind an import that starts a thread (see thread_at_import.py)."""

import os
import runpy
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import thread_at_import  # noqa: E402,F401

runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "counting_server.py"), run_name="__main__")
