"""Tracing: an OTLP/HTTP receiver for the run, a W3C trace context per row, spans attached to rows.

`session.Tracing` is what the runner holds: it serves the receiver (`receiver`), opens a trace per
row (`context`), and collects the row's spans (`store`, decoded by `decode`) once the row has its
reply. `steps` reads agent trajectories (tool calls, commands, searches) out of spans.
"""
