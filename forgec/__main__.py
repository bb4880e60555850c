from forgec.cli import main

raise SystemExit(main())
