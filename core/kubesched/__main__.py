"""``python -m kubesched``: the ``kubesched`` command."""

import sys

from kubesched_launch import main

sys.exit(main())
