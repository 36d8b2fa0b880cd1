"""The one way opsbot connects to Redis (client.py), and what Redis says about itself (watch.py)."""
