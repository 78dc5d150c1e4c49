"""Label-free accuracy estimation from confidence profiles, after "Estimating LLM Capabilities
without Labeled Test Data": a meta-model maps a dataset's sorted per-item confidences to accuracy."""
