"""The command line: `python -m pydantic_ai_harness_rs demo [DIR] [--model NAME]`.

Only the entry point; the demo agent and its arguments are `_demo.py`'s.
"""

import sys

from pydantic_ai_harness_rs._demo import main

sys.exit(main())
