"""Topologies: builder, declarers, components, fields, tuples, groupings, plan."""
