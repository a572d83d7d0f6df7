"""``python -m pyprog`` is the ``pyprog`` command."""

import sys

from pyprog.cli import main

sys.exit(main())
