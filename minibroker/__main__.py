import sys

from minibroker.cli import main

sys.exit(main())
