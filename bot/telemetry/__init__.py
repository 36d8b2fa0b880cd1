"""opsbot's own view of itself: Prometheus metrics, OpenTelemetry traces, the audit trail."""
