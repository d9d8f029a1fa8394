"""Face swappers: one module per model family behind the Swapper protocol."""
