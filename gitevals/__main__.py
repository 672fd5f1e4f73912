from gitevals.cli import main

raise SystemExit(main())
