"""kafka-offset-audit."""
