"""The control plane, on the driver: the run loop, supersteps, checkpoints, the REST API.

Storm's ``daemon`` package: it decides what runs when (spout batches, ticks, the clock,
checkpoint epochs), gathers statistics and errors, and serves the API and web page.
Tuples move through an engine, never through modules here.
"""
