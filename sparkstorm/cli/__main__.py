"""``python -m sparkstorm.cli``."""

import sys

from sparkstorm.cli import main

sys.exit(main())
