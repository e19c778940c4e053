"""Storm's reliability core: ids, RotatingMap, the acker and the collectors."""
