"""Framework integrations, each imported lazily when statevcs meets one of its objects."""
