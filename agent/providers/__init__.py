"""Model providers: one module per wire, normalised into one event stream."""
