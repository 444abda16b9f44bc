"""`python -m pydantic_ai_harness_rs demo [DIR] [--model NAME]`: see `_demo.py`."""

import sys

from pydantic_ai_harness_rs._demo import main

sys.exit(main())
