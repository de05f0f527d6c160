"""``python -m osim_emb`` is the ``osim-emb`` command."""

import sys

from osim_emb.cli.main import main

sys.exit(main())
