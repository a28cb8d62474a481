"""The performance and tuning layer (the performance model, kgen ab, kgen tune): not written yet."""
