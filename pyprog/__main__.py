"""``python -m pyprog`` is the ``pyprog`` command."""

import sys

from pyprog.cli.main import main

sys.exit(main())
