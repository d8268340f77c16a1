"""PyInstaller's entry script: the frozen app starts exactly like the `cairn` console script."""

from ui.main import main

raise SystemExit(main())
