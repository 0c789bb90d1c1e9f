"""The benchmark's floor endpoint, an app installed only with BENCH_ENDPOINTS=true.

``POST /api/v1/_bench/floor`` is what the B2B recharge is measured against (docs/performance.md):
the same authentication, permission and throttles, then one row inserted and nothing else. It
lives here, beside the benchmark, so the production package carries none of it.
"""
