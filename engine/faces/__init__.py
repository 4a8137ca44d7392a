"""What users touch: the SDK (`Engine`), the CLI, the HTTP service and its playground page."""
