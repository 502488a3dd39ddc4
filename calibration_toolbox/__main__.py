"""``python -m calibration_toolbox``: the command line."""

import sys

from calibration_toolbox.cli import main

sys.exit(main())
