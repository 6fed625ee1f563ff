"""Internal helpers shared across dpcore's layers (not public API; may change without notice).

==============  =====================================================================================
module          what
==============  =====================================================================================
``fp``          every floating-point assumption of the Python side (unit roundoff, libm ulps, radius
                tolerance, slack) — the one place they live (Rust: ``src/fp.rs``)
``exact``       directed rounding of floats (``float_up`` / ``float_down``)
``validation``  parameter and array checks that name the offending parameter
``params``      ``get_params`` / ``set_params`` for dpcore's estimators
``labels``      declared binary label sets (never read off the data)
``linear``      prediction mixin of the linear models (GLMs, SimplexERM, PrivateSVM)
``state``       durable, crash-safe state of the interactive services (file / SQLite backends)
==============  =====================================================================================
"""
