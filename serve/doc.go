// Package serve is edgebnn's HTTP/JSON prediction server: one or more model files behind
// TensorFlow Serving's REST shape, with the predictive uncertainty and the policy's decision of
// every prediction.
//
//	POST /v1/models/NAME:predict   {"instances": [[…], …]} → {"predictions": [{…}, …]}
//	                               or a raw body (application/octet-stream): little-endian
//	                               float32, a whole number of inputs; ?normalized=true skips
//	                               the model's preprocessing
//	GET  /v1/models                the models: file, task, shapes, options, preprocessing, policy
//	GET  /v1/models/NAME           one model
//	GET  /healthz                  the process is alive
//	GET  /readyz                   models loaded and not shutting down (503 otherwise)
//	GET  /metrics                  Prometheus text format
//
// Every request is hostile until parsed: bodies, instances, header sizes, the time a client may
// take and the time a request may wait for a Predictor are bounded by Config's fields, whose
// zero values are safe defaults (the server listens on 127.0.0.1:8501). Errors are JSON,
// {"error": "…"}, naming the model, the instance and the value.
//
// Each model has a pool of Config.Concurrency Predictors (a Predictor is not safe for
// concurrent use); a request waits up to Config.QueueTimeout for one, then gets 503 with
// Retry-After. Serve shuts down gracefully when its context is cancelled; Reload reads the
// model files again, keeping a model whose new file fails; a replaced model is closed only
// after the last request using it (reference counts). docs/SERVE.md is the user's guide.
//
// The package imports only the standard library and edgebnn's runtime, so it fits the lean
// device binary.
package serve
