"""opsbot's HTTP face (server.py): Slack's Events API, alert webhooks, /healthz and /metrics;
bodies read under a cap (body.py)."""
