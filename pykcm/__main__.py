import sys

from pykcm.cli.main import main

sys.exit(main())
