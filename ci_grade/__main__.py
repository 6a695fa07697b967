from ci_grade.cli import main

raise SystemExit(main())
