"""Which tenant a data directory's records live in: a classroom learner's connection file, and
the registry that routes a data directory's progress record to that tenant.

The core reads these (settings parse ``BUREAU_CLASSROOM``; opening a bureau registers the
tenant), so they sit below the classroom, which manages tenants on a server, and below the course,
which records progress: the core never imports the classroom or the course."""
