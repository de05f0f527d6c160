import sys

from osim_emb.cli.main import main

sys.exit(main())
