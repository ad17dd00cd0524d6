"""Diagnostics that attribute a detector's errors: TIDE (:mod:`.tide`) and LRP (:mod:`.lrp`)."""
