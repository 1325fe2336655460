"""The report model: findings, the report, and the outcome of the gate (imports only ``errors``)."""
