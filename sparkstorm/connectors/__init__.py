"""Connectors: spouts and sinks for real systems, each stating its delivery guarantee."""
