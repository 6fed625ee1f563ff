"""``python -m dpcore.demo``: the end-to-end story on UCI Adult (see :mod:`dpcore.demo`)."""

import sys

from dpcore.demo import main

sys.exit(main())
