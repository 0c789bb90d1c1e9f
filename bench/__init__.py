"""The benchmark (make bench): the load driver, its seed, its profiler and the floor endpoint."""
