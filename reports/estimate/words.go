package estimate

// EstimatorWords is how an answer names the estimator an ETA's Estimator field names: "the latest item rate",
// "tokens per item and tok/s" (the structural model), as the ETA's reason says it.
func EstimatorWords(name string) string {
	if name == structuralName {
		return "tokens per item and tok/s"
	}
	return candidateWindow(name)
}
