"""Face analysis: detect, recognise, align, select, track."""
