"""Watching and controlling a running topology: its REST API, and its registration.

``sparkstorm list``, ``kill``, ``activate`` and ``deactivate`` find a running topology
through the registry and act through its API.
"""
