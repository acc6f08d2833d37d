"""The coordinator runtime: partition writer, loader, store, leadership hooks and timer (see coordinator/__init__)."""
