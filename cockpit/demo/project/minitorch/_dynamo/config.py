"""Dynamo settings (the one that matters here has the same name as torch's)."""

#: Raise when a dynamo-optimized function is called while FX is tracing (torch's default: True).
error_on_nested_fx_trace = True
