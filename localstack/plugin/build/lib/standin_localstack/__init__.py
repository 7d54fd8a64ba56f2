"""LocalStack plugins of the Stand-in project."""
